import Router from '@koa/router';
import type { Context, Next } from 'koa';
import { FnhostError, KvRateError, ValidationError, limits, type InsightStore, type KvStore } from '@fnhost/core';
import type { KvGuard } from '../kv/guard.ts';
import { UnauthorizedError, bearerToken } from '../auth.ts';
import type { FunctionService } from '../functions/service.ts';
import { PayloadTooLargeError } from '../invoke/errors.ts';
import type { PolicyCache } from '../policy/cache.ts';
import type { RuntimeTokenVerifier } from './tokens.ts';
import { decide, type Protection } from '../policy/match.ts';
import { readJson } from '../api/body.ts';
import { addConsoleRoute } from './console.ts';
import { addCodeRoute, type CodeInternalDeps } from '../code/internal-route.ts';
import type { ConnectionGuard } from './connection-bound.ts';
import type { ConsoleRate, ConsoleRateError, ExecutionIds } from './console-rate.ts';

// /internal/v1: what a runtime calls back (docs/internal-protocol.md), with
// its per-function bearer token. The function's id is its KV namespace.

export interface InternalDeps {
  tokens: RuntimeTokenVerifier;
  functions: FunctionService;
  kv: KvStore;
  /** KV writes go through the quota and write-rate bounds (../kv/guard.ts). */
  kvGuard: KvGuard;
  /** Where runtimes' console output goes (./console.ts). */
  insight: InsightStore;
  flushRecords: () => Promise<void>;
  /** FNHOST_CONSOLE_CAPTURE: false drops every console post. */
  consoleCapture: boolean;
  policies: PolicyCache;
  /** The machine's addresses and the platform's ranges (FNHOST_EGRESS_PLATFORM_CIDRS), protected in the policy check as in the egress proxy. */
  protection?: () => Protection;
  now: () => number;
  /** The bound on open connections per function (./connection-bound.ts): a connection counts for the function its token names. */
  connections?: ConnectionGuard;
  /** Console posts: the rate bound and the executions they may name (./console-rate.ts). */
  console?: { rate: ConsoleRate; executions: ExecutionIds; allExecutionsHere: boolean; onRefused: (functionId: string, err: ConsoleRateError) => void };
  /** GET /code/{digest}: the function's code by reference (../code/internal-route.ts). */
  code?: CodeInternalDeps;
}

/** A connection over the bound on open connections per function, found at its first request: 429, and it is closed. */
export class TooManyConnectionsError extends FnhostError {
  readonly retryAfterSeconds = 1;
  constructor(limit: number) {
    super('too_many_connections', 429, `this function holds ${limit} connections to the gateway's internal API already; close some`);
  }
}

export function kvKey(raw: string | undefined): string {
  if (raw === undefined || raw === '') throw new ValidationError('kv key must be a non-empty string');
  const size = Buffer.byteLength(raw);
  if (size > limits.MAX_KV_KEY_BYTES) throw new ValidationError(`kv key "${raw.slice(0, 40)}…" is ${size} bytes; the limit is ${limits.MAX_KV_KEY_BYTES} bytes`);
  return raw;
}

export function kvTtl(raw: unknown): number | null {
  if (raw === undefined || raw === null) return null;
  if (typeof raw !== 'number' || !Number.isInteger(raw) || raw < 1 || raw > limits.MAX_KV_TTL_SECONDS) {
    throw new ValidationError(`kv ttlSeconds must be an integer from 1 to ${limits.MAX_KV_TTL_SECONDS}, got ${JSON.stringify(raw)}`);
  }
  return raw;
}

/** A 429 from the write-rate bound carries Retry-After. */
async function withRetryAfter<T>(ctx: Context, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof KvRateError) ctx.set('Retry-After', String(err.retryAfterSeconds));
    throw err;
  }
}

export function internalRoutes(deps: InternalDeps): Router {
  const router = new Router({ prefix: '/internal/v1' });

  router.use(async (ctx: Context, next: Next) => {
    const functionId = deps.tokens.verify(bearerToken(ctx.get('authorization') || undefined));
    if (functionId === undefined || deps.functions.byId(functionId) === undefined) throw new UnauthorizedError('missing or wrong runtime token');
    ctx.state.functionId = functionId;
    if (deps.connections !== undefined && !deps.connections.served(ctx.req.socket, functionId)) {
      ctx.set('connection', 'close');
      throw new TooManyConnectionsError(deps.connections.limit);
    }
    await next();
  });

  router.get('/kv', async (ctx) => {
    const prefix = ctx.query.prefix === undefined ? '' : ctx.query.prefix;
    if (typeof prefix !== 'string') throw new ValidationError('kv prefix must be given once');
    if (Buffer.byteLength(prefix) > limits.MAX_KV_KEY_BYTES) throw new ValidationError(`kv prefix is longer than ${limits.MAX_KV_KEY_BYTES} bytes`);
    ctx.body = { keys: await deps.kv.list(ctx.state.functionId, prefix, limits.MAX_KV_LIST_KEYS, deps.now()) };
  });

  router.get('/kv/:key', async (ctx) => {
    const json = await deps.kv.get(ctx.state.functionId, kvKey(ctx.params.key), deps.now());
    if (json === undefined) {
      ctx.status = 404;
      ctx.body = { error: 'not_found', message: `kv key "${ctx.params.key!.slice(0, 100)}" not found` };
      return;
    }
    ctx.type = 'application/json';
    ctx.body = `{"value":${json}}`;
  });

  router.head('/kv/:key', async (ctx) => {
    ctx.status = (await deps.kv.has(ctx.state.functionId, kvKey(ctx.params.key), deps.now())) ? 200 : 404;
  });

  router.put('/kv/:key', async (ctx) => {
    const key = kvKey(ctx.params.key);
    // A write its rate refuses is refused on its declared length, before its body (up to 256 KiB)
    // is read and parsed: a function writing flat out past its rate costs the gateway no parsing.
    const declared = Number(ctx.get('content-length'));
    const bytes = Buffer.byteLength(key) + (Number.isSafeInteger(declared) && declared >= 0 ? Math.min(declared, limits.MAX_KV_VALUE_BYTES) : 0);
    // (The unread body is dropped by Node as the connection is kept: no parsing, no reconnect.)
    await withRetryAfter(ctx, async () => deps.kvGuard.admit(deps.functions.byId(ctx.state.functionId)!, bytes, deps.now()));
    // The envelope adds a little to the value's own limit.
    const raw = await readJson(ctx, limits.MAX_KV_VALUE_BYTES + 1024).catch((err: unknown) => {
      if (err instanceof PayloadTooLargeError) throw new PayloadTooLargeError(limits.MAX_KV_VALUE_BYTES, `kv value for "${key.slice(0, 100)}"`);
      throw err;
    });
    if (typeof raw !== 'object' || raw === null || !('value' in raw)) throw new ValidationError('kv set body must be {"value": <json>, "ttlSeconds"?: n}');
    const { value, ttlSeconds } = raw as { value: unknown; ttlSeconds?: unknown };
    if (value === undefined) throw new ValidationError('kv value must be JSON (not undefined)');
    const json = JSON.stringify(value);
    const size = Buffer.byteLength(json);
    if (size > limits.MAX_KV_VALUE_BYTES) throw new PayloadTooLargeError(limits.MAX_KV_VALUE_BYTES, `kv value for "${key.slice(0, 100)}" (${size} bytes as JSON)`);
    const ttl = kvTtl(ttlSeconds);
    await withRetryAfter(ctx, () => deps.kvGuard.set(deps.functions.byId(ctx.state.functionId)!, key, json, ttl, deps.now()));
    ctx.status = 204;
  });

  router.delete('/kv/:key', async (ctx) => {
    const key = kvKey(ctx.params.key);
    ctx.body = { deleted: await withRetryAfter(ctx, () => deps.kvGuard.delete(deps.functions.byId(ctx.state.functionId)!, key, deps.now())) };
  });

  if (deps.code !== undefined) addCodeRoute(router, deps.code);
  addConsoleRoute(router, { insight: deps.insight, functions: deps.functions, now: deps.now, flushRecords: deps.flushRecords, enabled: deps.consoleCapture, ...deps.console });

  router.get('/policy/check', async (ctx) => {
    const host = ctx.query.host;
    if (typeof host !== 'string' || host === '' || host.length > 255) throw new ValidationError('policy check needs host (a host name or IP)');
    const [global, fn] = await Promise.all([deps.policies.get('global'), deps.policies.get(ctx.state.functionId)]);
    // The port, when the runtime sends it, narrows patterns that name one (`127.0.0.1:3000`).
    const port = typeof ctx.query.port === 'string' && /^\d{1,5}$/.test(ctx.query.port) && Number(ctx.query.port) >= 1 && Number(ctx.query.port) <= 65535 ? Number(ctx.query.port) : undefined;
    ctx.body = decide(host, global, fn, deps.protection?.(), port);
  });

  return router;
}
