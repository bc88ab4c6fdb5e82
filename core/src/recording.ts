import { isUtf8 } from 'node:buffer';
import { FnhostError, ValidationError } from './errors.ts';
import * as limits from './limits.ts';
import type { RecordedBody, RecordedExchange, RecordedRequest, RecordedResponse, RequestRecording } from './model.ts';

// Request recording for replay (docs/replay.md): what a function that opted
// in keeps of each execution, and the masking applied before anything is
// stored. Pure functions: the gateway calls them on its invocation path only
// for functions with recording on.

export const RECORDING_OFF: RequestRecording = {
  enabled: false,
  max_body_bytes: limits.MAX_RECORD_BODY_BYTES,
  redact: { headers: [], json_paths: [] },
};

/** What replaces a masked header value or JSON value. */
export const REDACTED = '[redacted]';

/**
 * Headers never recorded, whatever the policy: credentials (a replay must not
 * hold or resend them) and the platform's own (`x-fnhost-*`, set again by the
 * gateway on every call; the schedule token among them).
 */
const NEVER_RECORDED = new Set(['authorization', 'proxy-authorization', 'cookie', 'set-cookie']);

export function isNeverRecorded(name: string): boolean {
  return NEVER_RECORDED.has(name) || name.startsWith('x-fnhost-');
}

/** The recording of a function: its setting, or off for records stored before the setting existed. */
export function recordingOf(fn: { record_requests?: RequestRecording }): RequestRecording {
  return fn.record_requests ?? RECORDING_OFF;
}

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const RECORDING_FIELDS = new Set(['enabled', 'max_body_bytes', 'redact']);

/**
 * Accepts `true`/`false` (the bound and policy kept, or the defaults) or
 * `{enabled?, max_body_bytes?, redact?: {headers?, json_paths?}}`, fields not
 * named taken from `current`.
 */
export function validateRequestRecording(raw: unknown, current: RequestRecording = RECORDING_OFF): RequestRecording {
  if (typeof raw === 'boolean') return { ...current, enabled: raw };
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new ValidationError('record_requests must be true, false or an object {enabled?, max_body_bytes?, redact?: {headers?, json_paths?}}');
  }
  const r = raw as Record<string, unknown>;
  for (const key of Object.keys(r)) {
    if (!RECORDING_FIELDS.has(key)) throw new ValidationError(`record_requests: unknown field "${key}"; allowed: ${[...RECORDING_FIELDS].join(', ')}`);
  }
  if (r.enabled !== undefined && typeof r.enabled !== 'boolean') throw new ValidationError(`record_requests.enabled must be true or false, got ${JSON.stringify(r.enabled)}`);
  let maxBody = current.max_body_bytes;
  if (r.max_body_bytes !== undefined) {
    const n = r.max_body_bytes;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > limits.MAX_RECORD_BODY_BYTES) {
      throw new ValidationError(`record_requests.max_body_bytes must be an integer from 0 to ${limits.MAX_RECORD_BODY_BYTES}, got ${JSON.stringify(n)}`);
    }
    maxBody = n;
  }
  return {
    enabled: r.enabled === undefined ? current.enabled : r.enabled,
    max_body_bytes: maxBody,
    redact: r.redact === undefined ? current.redact : validateRedaction(r.redact),
  };
}

function validateRedaction(raw: unknown): RequestRecording['redact'] {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new ValidationError('record_requests.redact must be an object {headers?, json_paths?}');
  const { headers, json_paths: paths, ...rest } = raw as Record<string, unknown>;
  const extra = Object.keys(rest);
  if (extra.length > 0) throw new ValidationError(`record_requests.redact: unknown field "${extra[0]}"; allowed: headers, json_paths`);
  const names = stringList(headers, 'record_requests.redact.headers', limits.MAX_REDACT_HEADERS).map((name) => {
    if (!HEADER_NAME.test(name)) throw new ValidationError(`record_requests.redact.headers: "${name.slice(0, 80)}" is not a header name`);
    return name.toLowerCase();
  });
  const jsonPaths = stringList(paths, 'record_requests.redact.json_paths', limits.MAX_REDACT_JSON_PATHS).map((path) => {
    if (path.length > limits.MAX_REDACT_JSON_PATH_LENGTH) throw new ValidationError(`record_requests.redact.json_paths: a path is longer than ${limits.MAX_REDACT_JSON_PATH_LENGTH} characters`);
    parseJsonPath(path);
    return path;
  });
  return { headers: [...new Set(names)], json_paths: [...new Set(jsonPaths)] };
}

function stringList(raw: unknown, what: string, max: number): string[] {
  if (raw === undefined) return [];
  if (!Array.isArray(raw) || raw.some((v) => typeof v !== 'string')) throw new ValidationError(`${what} must be an array of strings`);
  if (raw.length > max) throw new ValidationError(`${what} has ${raw.length} entries; at most ${max} are allowed`);
  return raw as string[];
}

/** One step of a JSON path: a member name, an array index, every element or member (`*`), or a member at any depth (`..name`). */
export type JsonPathStep = { name: string } | { index: number } | { any: true } | { deep: string };

/**
 * Parses the JSONPath subset a redaction policy takes: `$` then `.name`,
 * `['name']`, `[0]`, `.*`, `[*]`, or `..name` (that member at any depth). No filters or script expressions: a
 * policy names where personal data sits, and the gateway evaluates nothing
 * a function owner wrote (the general JSONPath libraries evaluate filter
 * expressions, which is more than masking needs and a known source of
 * injection bugs).
 */
export function parseJsonPath(path: string): JsonPathStep[] {
  const bad = (why: string) => new ValidationError(`JSON path ${JSON.stringify(path.slice(0, 80))} is invalid: ${why}; use $.name, $['name'], $.list[0], $.list[*].name or $..name`);
  if (!path.startsWith('$')) throw bad('it must start with $');
  const steps: JsonPathStep[] = [];
  let i = 1;
  while (i < path.length) {
    const c = path[i];
    if (path.startsWith('..', i)) {
      const m = /^[A-Za-z_$][\w$-]*/.exec(path.slice(i + 2));
      if (m === null) throw bad(`a member name is expected after .. at character ${i + 3}`);
      steps.push({ deep: m[0] });
      i += 2 + m[0].length;
    } else if (c === '.') {
      const m = /^(\*|[A-Za-z_$][\w$-]*)/.exec(path.slice(i + 1));
      if (m === null) throw bad(`a member name is expected at character ${i + 2}`);
      steps.push(m[1] === '*' ? { any: true } : { name: m[1]! });
      i += 1 + m[1]!.length;
    } else if (c === '[') {
      const m = /^\[(?:(\*)|(\d{1,9})|'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)")\]/.exec(path.slice(i));
      if (m === null) throw bad(`a bracket at character ${i + 1} must hold *, an index or a quoted name`);
      if (m[1] !== undefined) steps.push({ any: true });
      else if (m[2] !== undefined) steps.push({ index: Number(m[2]) });
      else steps.push({ name: (m[3] ?? m[4]!).replace(/\\(.)/g, '$1') });
      i += m[0].length;
    } else {
      throw bad(`unexpected ${JSON.stringify(c)} at character ${i + 1}`);
    }
  }
  if (steps.length === 0) throw bad('it names the whole body; name a member');
  return steps;
}

/** Masks every value the path reaches in `value` (changed in place); returns how many were masked. */
export function maskJsonPath(value: unknown, steps: readonly JsonPathStep[]): number {
  return maskFrom(value, steps, 0);
}

// Walks `steps` from index `at` without copying the step list (this runs for
// every recorded JSON body, twice a call when the answer is JSON too).
function maskFrom(value: unknown, steps: readonly JsonPathStep[], at: number): number {
  if (at >= steps.length || typeof value !== 'object' || value === null) return 0;
  const step = steps[at]!;
  if ('deep' in step) {
    // The member here, then the same step again in every child (values under a masked member are gone already).
    let masked = Array.isArray(value) ? 0 : maskMember(value as Record<string, unknown>, step.deep, steps, at);
    for (const child of Array.isArray(value) ? value : Object.values(value)) masked += maskFrom(child, steps, at);
    return masked;
  }
  if ('name' in step) return Array.isArray(value) ? 0 : maskMember(value as Record<string, unknown>, step.name, steps, at);
  const last = at === steps.length - 1;
  if ('index' in step) {
    if (!Array.isArray(value) || step.index >= value.length) return 0;
    if (!last) return maskFrom(value[step.index], steps, at + 1);
    value[step.index] = REDACTED;
    return 1;
  }
  let masked = 0;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      if (last) value[i] = REDACTED;
      else masked += maskFrom(value[i], steps, at + 1);
    }
    return last ? value.length : masked;
  }
  const container = value as Record<string, unknown>;
  const keys = Object.keys(container);
  for (const key of keys) {
    if (last) container[key] = REDACTED;
    else masked += maskFrom(container[key], steps, at + 1);
  }
  return last ? keys.length : masked;
}

/** The member `name` of an object (own members only: never one of Object.prototype's), masked or walked into by the steps after `at`. */
function maskMember(container: Record<string, unknown>, name: string, steps: readonly JsonPathStep[], at: number): number {
  if (!Object.hasOwn(container, name)) return 0;
  if (at < steps.length - 1) return maskFrom(container[name], steps, at + 1);
  container[name] = REDACTED;
  return 1;
}

/**
 * The parsed steps of a policy's JSON paths, parsed once per policy (the
 * settings object lives as long as the function's record in the gateway's
 * cache) rather than on every body: a WeakMap, so a replaced policy's entry
 * goes with it. The paths it was parsed from are kept and compared (by
 * reference, cheap), so a list changed in place is parsed again, never
 * masked by stale steps.
 */
const parsedPaths = new WeakMap<readonly string[], { sources: string[]; steps: JsonPathStep[][] }>();

function stepsOf(paths: readonly string[]): JsonPathStep[][] {
  const cached = parsedPaths.get(paths);
  if (cached !== undefined && cached.sources.length === paths.length && cached.sources.every((source, i) => source === paths[i])) return cached.steps;
  const steps = paths.map(parseJsonPath);
  parsedPaths.set(paths, { sources: [...paths], steps });
  return steps;
}

function isJsonType(contentType: string | undefined): boolean {
  return contentType !== undefined && /^application\/(?:[\w.+-]*\+)?json\b|^text\/json\b/i.test(contentType.trim());
}

/** U+FFFD in UTF-8: a body holding it is kept in base64, as one that is not UTF-8 (its text would not tell the two apart). */
const REPLACEMENT_CHARACTER = Buffer.from('\uFFFD');

/** Text that is valid UTF-8 is kept as text, anything else in base64. */
function encodedBody(bytes: Buffer, size: number, truncated: boolean): RecordedBody {
  return isUtf8(bytes) && !bytes.includes(REPLACEMENT_CHARACTER)
    ? { encoding: 'utf8', data: bytes.toString('utf8'), size, truncated }
    : { encoding: 'base64', data: bytes.toString('base64'), size, truncated };
}

/**
 * The body as recorded: at most `max_body_bytes` of it; a JSON body (by its
 * content type) with the policy's JSON paths masked. A JSON body that cannot
 * be parsed (cut at the bound, or malformed) under a policy with JSON paths
 * is not kept at all: what it holds cannot be masked.
 */
export function recordBody(bytes: Buffer | null, contentType: string | undefined, recording: RequestRecording, fullSize = bytes?.length ?? 0): RecordedBody | null {
  if (bytes === null || fullSize === 0) return null;
  const size = Math.max(fullSize, bytes.length);
  const truncated = size > recording.max_body_bytes;
  const kept = truncated ? bytes.subarray(0, recording.max_body_bytes) : bytes;
  const paths = recording.redact.json_paths;
  if (paths.length > 0 && isJsonType(contentType)) {
    let parsed: unknown;
    try {
      if (truncated) throw new Error('cut');
      parsed = JSON.parse(kept.toString('utf8'));
    } catch {
      return { encoding: 'utf8', data: '', size, truncated, omitted: truncated ? `a JSON body over the ${recording.max_body_bytes}-byte bound cannot be masked, so it was not kept` : 'a JSON body that does not parse cannot be masked, so it was not kept' };
    }
    let masked = 0;
    for (const steps of stepsOf(paths)) masked += maskFrom(parsed, steps, 0);
    if (masked > 0) return { encoding: 'utf8', data: JSON.stringify(parsed), size, truncated: false };
  }
  return encodedBody(kept, size, truncated);
}

/** Headers as recorded: one string each, never the NEVER_RECORDED ones, the policy's masked. */
export function recordHeaders(headers: Record<string, string | string[] | undefined>, recording: RequestRecording): Record<string, string> {
  const out: Record<string, string> = {};
  const masked = recording.redact.headers;
  for (const [rawName, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    const name = rawName.toLowerCase();
    if (isNeverRecorded(name)) continue;
    out[name] = masked.includes(name) ? REDACTED : Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

/** Splits `/a/b?x=1` into its path and query string. */
export function splitPath(pathAndQuery: string): { path: string; query: string } {
  const q = pathAndQuery.indexOf('?');
  return q < 0 ? { path: pathAndQuery, query: '' } : { path: pathAndQuery.slice(0, q), query: pathAndQuery.slice(q + 1) };
}

export function recordRequest(method: string, pathAndQuery: string, headers: Record<string, string | string[] | undefined>, body: Buffer | null, recording: RequestRecording): RecordedRequest {
  const ct = headers['content-type'];
  return {
    method,
    ...splitPath(pathAndQuery),
    headers: recordHeaders(headers, recording),
    body: recordBody(body, typeof ct === 'string' ? ct : undefined, recording),
  };
}

/** `fullSize`: a streamed body's whole length, when only its first bytes were kept. */
export function recordResponse(status: number, headers: Record<string, string | string[] | undefined>, body: Buffer | null, recording: RequestRecording, fullSize?: number): RecordedResponse {
  const ct = headers['content-type'];
  return { status, headers: recordHeaders(headers, recording), body: recordBody(body, typeof ct === 'string' ? ct : undefined, recording, fullSize) };
}

/** About the memory an exchange's bodies hold while its record waits to be written: the characters of their data. */
export function recordedBodyChars(exchange: RecordedExchange): number {
  return (exchange.request.body?.data.length ?? 0) + (exchange.response?.body?.data.length ?? 0);
}

/**
 * What a stored exchange counts for a namespace's recorded-bytes quota: its
 * bodies' characters plus 1 KiB for its method, path, headers and status
 * (headers are bounded; counting them exactly would cost a serialization per call).
 */
export function recordedExchangeBytes(exchange: RecordedExchange): number {
  return recordedBodyChars(exchange) + 1024;
}

/** The exchange with its bodies not kept (`omitted` saying why): headers, method, path and status stay. */
export function withoutBodies(exchange: RecordedExchange, reason: string): RecordedExchange {
  const omit = (body: RecordedBody | null): RecordedBody | null => body === null ? null : { encoding: 'utf8', data: '', size: body.size, truncated: body.truncated, omitted: reason };
  return {
    request: { ...exchange.request, body: omit(exchange.request.body) },
    response: exchange.response === null ? null : { ...exchange.response, body: omit(exchange.response.body) },
  };
}

/** The bytes of a recorded body. */
export function bodyBytes(body: RecordedBody | null): Buffer | null {
  if (body === null) return null;
  return body.encoding === 'base64' ? Buffer.from(body.data, 'base64') : Buffer.from(body.data, 'utf8');
}

/**
 * A replay that cannot be made, each with its own code (docs/replay.md
 * "Errors"): the record keeps no request (409 `replay_not_recorded`), or its
 * body was not kept whole (422 `replay_body_incomplete`).
 */
export class ReplayError extends FnhostError {
  constructor(code: 'replay_not_recorded' | 'replay_body_incomplete' | 'replay_throwaways_busy' | 'replay_throwaway_not_ready', status: number, message: string) {
    super(code, status, message, { expose: true });
  }
}

