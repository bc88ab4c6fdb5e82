import type { RecordedBody } from './model.ts';

// The difference between a recorded response and the one its replay got
// (docs/replay.md), for the CLI and the panel: status, headers, body, with
// JSON bodies compared structurally (member order and spacing do not count).

/** A response as compared: the recorded one, or the replay's answer. */
export interface ComparedResponse {
  status: number;
  headers: Record<string, string | string[]>;
  body: RecordedBody | null;
}

export type Change =
  | { kind: 'status'; recorded: number; replayed: number }
  | { kind: 'header'; name: string; recorded: string | undefined; replayed: string | undefined }
  /** A JSON body member: `path` as `$.items[0].price`; undefined means absent on that side. */
  | { kind: 'json'; path: string; recorded: unknown; replayed: unknown }
  /** Bodies compared as text (one side is not JSON); lines as in a unified diff. */
  | { kind: 'text'; recorded: string; replayed: string }
  /** The recorded body is incomplete (cut at the bound, or not kept): it cannot be compared. */
  | { kind: 'body-not-comparable'; reason: string };

/** Headers that differ on every call or belong to the transport: never compared. */
const VOLATILE_HEADERS = new Set(['date', 'connection', 'keep-alive', 'transfer-encoding', 'content-length', 'etag', 'last-modified', 'age', 'expires', 'x-request-id']);

export function diffResponses(recorded: ComparedResponse, replayed: ComparedResponse): Change[] {
  const changes: Change[] = [];
  if (recorded.status !== replayed.status) changes.push({ kind: 'status', recorded: recorded.status, replayed: replayed.status });
  const a = normalHeaders(recorded.headers);
  const b = normalHeaders(replayed.headers);
  for (const name of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()) {
    if (a[name] !== b[name]) changes.push({ kind: 'header', name, recorded: a[name], replayed: b[name] });
  }
  changes.push(...diffBodies(recorded.body, replayed.body));
  return changes;
}

function normalHeaders(headers: Record<string, string | string[]>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (VOLATILE_HEADERS.has(lower) || lower.startsWith('x-fnhost-') || lower === 'set-cookie') continue;
    out[lower] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

function bodyText(body: RecordedBody | null): string {
  if (body === null) return '';
  return body.encoding === 'base64' ? `(${body.size} bytes of binary data, base64 ${body.data.slice(0, 60)}${body.data.length > 60 ? '…' : ''})` : body.data;
}

function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  if (text.trim() === '') return { ok: false };
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

export function diffBodies(recorded: RecordedBody | null, replayed: RecordedBody | null): Change[] {
  if (recorded?.omitted !== undefined) return [{ kind: 'body-not-comparable', reason: recorded.omitted }];
  if (recorded?.truncated === true) return [{ kind: 'body-not-comparable', reason: `the recorded body was cut at ${recorded.data.length} of ${recorded.size} bytes` }];
  const a = bodyText(recorded);
  const b = bodyText(replayed);
  if (a === b) return [];
  const ja = parseJson(a);
  const jb = parseJson(b);
  if (ja.ok && jb.ok) {
    const out: Change[] = [];
    diffJson('$', ja.value, jb.value, out);
    return out;
  }
  return [{ kind: 'text', recorded: a, replayed: b }];
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function memberPath(base: string, key: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(key) ? `${base}.${key}` : `${base}[${JSON.stringify(key)}]`;
}

/** Structural difference: objects member by member, arrays element by element. */
export function diffJson(path: string, a: unknown, b: unknown, out: Change[]): void {
  if (isObject(a) && isObject(b)) {
    for (const key of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()) {
      const p = memberPath(path, key);
      if (!Object.hasOwn(b, key)) out.push({ kind: 'json', path: p, recorded: a[key], replayed: undefined });
      else if (!Object.hasOwn(a, key)) out.push({ kind: 'json', path: p, recorded: undefined, replayed: b[key] });
      else diffJson(p, a[key], b[key], out);
    }
    return;
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    for (let i = 0; i < Math.max(a.length, b.length); i++) {
      const p = `${path}[${i}]`;
      if (i >= b.length) out.push({ kind: 'json', path: p, recorded: a[i], replayed: undefined });
      else if (i >= a.length) out.push({ kind: 'json', path: p, recorded: undefined, replayed: b[i] });
      else diffJson(p, a[i], b[i], out);
    }
    return;
  }
  if (JSON.stringify(a) !== JSON.stringify(b)) out.push({ kind: 'json', path, recorded: a, replayed: b });
}

function show(v: unknown): string {
  return v === undefined ? '(absent)' : JSON.stringify(v);
}

/** The changes as lines a person reads: `- recorded` and `+ replayed` under each place that differs. */
export function formatChanges(changes: readonly Change[]): string[] {
  if (changes.length === 0) return ['No difference: same status, headers and body.'];
  const lines: string[] = [];
  for (const c of changes) {
    switch (c.kind) {
      case 'status':
        lines.push('status', `  - ${c.recorded}`, `  + ${c.replayed}`);
        break;
      case 'header':
        lines.push(`header ${c.name}`, `  - ${c.recorded ?? '(absent)'}`, `  + ${c.replayed ?? '(absent)'}`);
        break;
      case 'json':
        lines.push(`body ${c.path}`, `  - ${show(c.recorded)}`, `  + ${show(c.replayed)}`);
        break;
      case 'text':
        lines.push('body (text)', ...c.recorded.split('\n').slice(0, 20).map((l) => `  - ${l}`), ...c.replayed.split('\n').slice(0, 20).map((l) => `  + ${l}`));
        break;
      case 'body-not-comparable':
        lines.push(`body not compared: ${c.reason}`);
        break;
    }
  }
  return lines;
}
