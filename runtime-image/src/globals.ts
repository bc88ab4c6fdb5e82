// The globals a handler sees besides Node's own: a tagged console, a policed fetch and kv.
import { UNIX_PREFIX, unixFetch } from './unix-http.ts';
import { AsyncLocalStorage } from 'node:async_hooks';
import { Console } from 'node:console';
// Not an ES import of node:net: its namespace's BlockList/SocketAddress getters load more than isIP needs.
const { isIP } = process.getBuiltinModule('node:net');
import { PolicyBlockedError } from './egress.ts';
import * as limits from './limits.ts';

export interface InvocationContext {
  /** The request's id between the threads. */
  id: number;
  /** x-fnhost-execution-id: the log record's id. */
  executionId: string;
}

export const invocationContext = new AsyncLocalStorage<InvocationContext>();

interface WritableLike {
  write(chunk: string): unknown;
}

/** Receives a call's console writes for its record (console-capture.ts); not called outside a call. */
export type CaptureWrite = (executionId: string, text: string) => void;

/** A stream-like object that prefixes every line with `[function executionId]` (the call's context, "-" outside one). */
export function taggedStream(functionName: string, out: WritableLike, capture?: CaptureWrite): WritableLike {
  return {
    write(chunk: string | Uint8Array): boolean {
      const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
      const executionId = invocationContext.getStore()?.executionId;
      if (capture !== undefined && executionId !== undefined && executionId !== '-') capture(executionId, text);
      const tag = `[${functionName} ${executionId ?? '-'}] `;
      const body = text.endsWith('\n') ? text.slice(0, -1) : text;
      out.write(tag + body.split('\n').join('\n' + tag) + '\n');
      return true;
    },
    // Console attaches and removes an 'error' listener around each write.
    once() {
      return this;
    },
    on() {
      return this;
    },
    removeListener() {
      return this;
    },
    listenerCount() {
      return 0;
    },
  } as WritableLike;
}

/** A full Console (log, info, debug → stdout; error, warn, trace → stderr) formatting like util.format/inspect, tagging each line. */
export function makeConsole(functionName: string, stdout: WritableLike, stderr: WritableLike, capture?: { out: CaptureWrite; err: CaptureWrite }): Console {
  return new Console({
    stdout: taggedStream(functionName, stdout, capture?.out) as NodeJS.WritableStream,
    stderr: taggedStream(functionName, stderr, capture?.err) as NodeJS.WritableStream,
    colorMode: false,
  });
}

export class GatewayUnavailableError extends Error {
  override name = 'GatewayUnavailableError';
}

export interface InternalClient {
  request(method: string, path: string, body?: unknown): Promise<Response>;
}

/**
 * Requests to the gateway's internal API in flight at once from this runtime; more wait their turn.
 * The gateway bounds the connections a function holds open to it (64 by default, docs/security.md
 * "Resources: internal API, egress, console"), and a pool opens a connection per request in flight:
 * a handler's Promise.all over many keys must queue here rather than meet that bound.
 */
export const MAX_INTERNAL_IN_FLIGHT = 32;

export function internalClient(gatewayUrl: string | undefined, token: string | undefined, rawFetch: typeof fetch, what: () => string): InternalClient {
  let inFlight = 0;
  const waiting: Array<() => void> = [];
  const turn = async (): Promise<void> => {
    if (inFlight < MAX_INTERNAL_IN_FLIGHT) {
      inFlight++;
      return;
    }
    // The finishing request hands its place over (inFlight stays as it is).
    await new Promise<void>((resolve) => waiting.push(resolve));
  };
  const done = () => {
    const next = waiting.shift();
    if (next !== undefined) next();
    else inFlight--;
  };
  const send = async (method: string, path: string, body?: unknown): Promise<Response> => {
    if (gatewayUrl === undefined) throw new GatewayUnavailableError(`${what()} is unavailable: FNHOST_GATEWAY_URL is not set for this runtime`);
    const headers: Record<string, string> = {};
    if (token !== undefined) headers.authorization = `Bearer ${token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    try {
      const text = body === undefined ? undefined : JSON.stringify(body);
      if (gatewayUrl.startsWith(UNIX_PREFIX)) return await unixFetch(gatewayUrl.slice(UNIX_PREFIX.length), path, { method, headers, body: text });
      return await rawFetch(gatewayUrl + path, { method, headers, body: text });
    } catch (err) {
      throw new GatewayUnavailableError(`${what()} failed: the gateway at ${gatewayUrl} did not answer (${(err as Error).message})`, { cause: err });
    }
  };
  return {
    async request(method, path, body) {
      await turn();
      try {
        return await send(method, path, body);
      } finally {
        done();
      }
    },
  };
}

async function errorFrom(res: Response, what: string): Promise<Error> {
  let message = `${what} failed with HTTP ${res.status}`;
  try {
    const parsed = (await res.json()) as { message?: unknown; error?: unknown };
    if (typeof parsed.message === 'string') message = `${what} failed: ${parsed.message}`;
  } catch {
    // not JSON: keep the status
  }
  return new Error(message);
}

// ---- kv ----

export class KvError extends Error {
  override name = 'KvError';
}

export function validateKey(key: unknown, what: string): string {
  if (typeof key !== 'string' || key === '') throw new KvError(`${what}: the key must be a non-empty string, got ${key === '' ? '""' : typeof key}`);
  const size = Buffer.byteLength(key);
  if (size > limits.MAX_KV_KEY_BYTES) throw new KvError(`${what}: the key "${key.slice(0, 40)}…" is ${size} bytes; the limit is ${limits.MAX_KV_KEY_BYTES} bytes`);
  return key;
}

export function validateValue(key: string, value: unknown): string {
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch (err) {
    throw new KvError(`kv.set("${key.slice(0, 100)}"): the value cannot be stored as JSON (${(err as Error).message})`);
  }
  if (json === undefined) throw new KvError(`kv.set("${key.slice(0, 100)}"): the value must be JSON-serialisable, got ${typeof value}`);
  const size = Buffer.byteLength(json);
  if (size > limits.MAX_KV_VALUE_BYTES) throw new KvError(`kv.set("${key.slice(0, 100)}"): the value is ${size} bytes as JSON; the limit is ${limits.MAX_KV_VALUE_BYTES} bytes`);
  return json;
}

export function validateTtl(key: string, ttl: unknown): number | undefined {
  if (ttl === undefined || ttl === null) return undefined;
  if (typeof ttl !== 'number' || !Number.isInteger(ttl) || ttl < 1 || ttl > limits.MAX_KV_TTL_SECONDS) {
    throw new KvError(`kv.set("${key.slice(0, 100)}"): ttlSeconds must be an integer from 1 to ${limits.MAX_KV_TTL_SECONDS}, got ${JSON.stringify(ttl) ?? String(ttl)}`);
  }
  return ttl;
}

export interface Kv {
  get(key: string): Promise<unknown>;
  has(key: string): Promise<boolean>;
  set(key: string, value: unknown, ttlSeconds?: number): Promise<void>;
  delete(key: string): Promise<boolean>;
  list(prefix?: string): Promise<string[]>;
}

export function makeKv(client: InternalClient): Kv {
  const path = (key: string) => '/internal/v1/kv/' + encodeURIComponent(key);
  return Object.freeze({
    async get(key: string): Promise<unknown> {
      validateKey(key, 'kv.get');
      const res = await client.request('GET', path(key));
      if (res.status === 404) {
        await res.body?.cancel();
        return undefined;
      }
      if (res.status !== 200) throw await errorFrom(res, `kv.get("${key.slice(0, 100)}")`);
      return ((await res.json()) as { value: unknown }).value;
    },
    async has(key: string): Promise<boolean> {
      validateKey(key, 'kv.has');
      const res = await client.request('HEAD', path(key));
      await res.body?.cancel();
      if (res.status === 200) return true;
      if (res.status === 404) return false;
      throw new Error(`kv.has("${key.slice(0, 100)}") failed with HTTP ${res.status}`);
    },
    async set(key: string, value: unknown, ttlSeconds?: number): Promise<void> {
      validateKey(key, 'kv.set');
      const json = validateValue(key, value);
      const ttl = validateTtl(key, ttlSeconds);
      const res = await client.request('PUT', path(key), ttl === undefined ? { value: JSON.parse(json) } : { value: JSON.parse(json), ttlSeconds: ttl });
      if (res.status !== 204 && res.status !== 200) throw await errorFrom(res, `kv.set("${key.slice(0, 100)}")`);
      await res.body?.cancel();
    },
    async delete(key: string): Promise<boolean> {
      validateKey(key, 'kv.delete');
      const res = await client.request('DELETE', path(key));
      if (res.status !== 200) throw await errorFrom(res, `kv.delete("${key.slice(0, 100)}")`);
      return ((await res.json()) as { deleted: boolean }).deleted === true;
    },
    async list(prefix = ''): Promise<string[]> {
      if (typeof prefix !== 'string') throw new KvError(`kv.list: the prefix must be a string, got ${typeof prefix}`);
      if (Buffer.byteLength(prefix) > limits.MAX_KV_KEY_BYTES) throw new KvError(`kv.list: the prefix is longer than ${limits.MAX_KV_KEY_BYTES} bytes`);
      const res = await client.request('GET', '/internal/v1/kv?prefix=' + encodeURIComponent(prefix));
      if (res.status !== 200) throw await errorFrom(res, `kv.list("${prefix.slice(0, 100)}")`);
      return ((await res.json()) as { keys: string[] }).keys;
    },
  });
}

// ---- fetch ----

// Without an egress proxy (FNHOST_EGRESS_PROXY unset: cluster mode's pods for now), fetch asks the
// internal policy check before each connection; with one, egress.ts routes every connection instead.
export { PolicyBlockedError };

interface Decision {
  allowed: boolean;
  rule: string;
  scope: string;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const MAX_REDIRECTS = 20;

export type PolicyCheck = (host: string, port: number) => Promise<Decision>;

export function policyCheck(client: InternalClient): PolicyCheck {
  return async (host, port) => {
    const res = await client.request('GET', `/internal/v1/policy/check?host=${encodeURIComponent(host)}&port=${port}`);
    if (res.status !== 200) throw await errorFrom(res, `network policy check for ${host}`);
    return (await res.json()) as Decision;
  };
}

/** Asks about the host name and every address it resolves to; throws naming the host and the rule that denied it. */
export async function assertAllowed(url: URL, check: PolicyCheck, resolve: (host: string) => Promise<string[]> = defaultResolve): Promise<void> {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TypeError(`fetch: only http and https URLs may be fetched, got ${url.protocol}`);
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
  const decision = await check(host, port);
  if (!decision.allowed) throw new PolicyBlockedError(`fetch to ${host} blocked by network policy (${decision.scope} rule ${decision.rule})`, decision.scope, decision.rule);
  if (isIP(host) !== 0) return;
  let addresses: string[];
  try {
    addresses = await resolve(host);
  } catch (err) {
    throw new TypeError(`fetch to ${host} failed: the name does not resolve (${(err as Error).message})`, { cause: err });
  }
  for (const address of new Set(addresses)) {
    const d = await check(address, port);
    if (!d.allowed) throw new PolicyBlockedError(`fetch to ${host} blocked by network policy: it resolves to ${address} (${d.scope} rule ${d.rule})`, d.scope, d.rule);
  }
}

async function defaultResolve(host: string): Promise<string[]> {
  // Loaded on the first fetch: most functions never resolve a name.
  const { lookup } = process.getBuiltinModule('node:dns/promises');
  return (await lookup(host, { all: true })).map((a) => a.address);
}

/** fetch with the policy check before every connection, redirects included (followed here, each hop checked). */
export function policedFetch(rawFetch: typeof fetch, check: PolicyCheck): typeof fetch {
  return async function fetch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
    const request = new Request(input, init);
    const mode = request.redirect;
    let url = new URL(request.url);
    await assertAllowed(url, check);
    if (mode !== 'follow') return rawFetch(request);
    let method = request.method;
    let body: ArrayBuffer | undefined = request.body === null ? undefined : await request.arrayBuffer();
    const headers = new Headers(request.headers);
    for (let hops = 0; ; hops++) {
      const res = await rawFetch(url, { method, headers, body, redirect: 'manual', signal: request.signal });
      const location = res.headers.get('location');
      if (!REDIRECTS.has(res.status) || location === null) return res;
      if (hops >= MAX_REDIRECTS) throw new TypeError(`fetch to ${request.url}: more than ${MAX_REDIRECTS} redirects`);
      await res.body?.cancel();
      const next = new URL(location, url);
      if (res.status === 303 || ((res.status === 301 || res.status === 302) && method === 'POST')) {
        if (method !== 'HEAD') method = 'GET';
        body = undefined;
        headers.delete('content-type');
        headers.delete('content-length');
      }
      if (next.origin !== url.origin) {
        headers.delete('authorization');
        headers.delete('cookie');
      }
      url = next;
      await assertAllowed(url, check);
    }
  } as typeof fetch;
}
