import type { IncomingMessage, ServerResponse } from 'node:http';
import { callableFunction } from '../invoke/callable.ts';
import {
  FnhostError, NotFoundError, ValidationError, checkCallbackUrl, isAsyncId, limits, newAsyncId, requestBytes,
  type AsyncCallStore, type AsyncRequest, type FunctionRecord,
} from '@fnhost/core';
import { drainRequest, readBody } from '../invoke/bodies.ts';
import { admitBody, answerBodyFailure, type BodyBounds } from '../invoke/body-refusal.ts';
import { writeError } from '../invoke/errors.ts';
import { decodeURIComponentSafe } from '../invoke/headers.ts';
import type { Refusals } from '../resources/refusals.ts';
import { FullQueueHints, type FullQueue } from './full-hint.ts';
import type { AsyncSettings } from './settings.ts';
import { publicView } from './view.ts';

// The public side of asynchronous invocation (docs/async.md):
//
//   /async-invoke/{functionId}[/sub/path]   any method: the request is stored
//     durably, then answered 202 with its id; the same route, header, query and
//     body rules as /invoke (Authorization and every header reach the handler).
//   GET /async-calls/{functionId}/{asyncId}   the call's state, for whoever holds
//     its id (128 random bits: the 202's Location is a capability URL).
//
// Plain node:http like /invoke (./invoke/proxy.ts): the acceptance is on a
// caller's path too.

export const ASYNC_INVOKE_PREFIX = '/async-invoke/';
export const ASYNC_CALLS_PREFIX = '/async-calls/';
/** Retry-After on a full queue: the queue drains at the function's pace, so a few seconds. */
export const FULL_RETRY_AFTER_SECONDS = 10;
const IDEMPOTENCY_KEY_RE = /^[\x21-\x7e]{1,255}$/;

/** Connection-scoped headers never stored: the call is sent again on another connection. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'te', 'upgrade', 'proxy-connection', 'content-length', 'trailer']);

export class QueueFullError extends FnhostError {
  constructor(bound: 'function' | 'total', used: number, limit: number) {
    super('async_queue_full', 429, bound === 'function'
      ? `the function's async queue holds ${used} of its ${limit} bytes; try again later`
      : `the gateway's async queue holds ${used} of its ${limit} bytes; try again later`, { expose: true });
  }
}

export interface AcceptorOptions {
  store: AsyncCallStore;
  functions: { byId(functionId: string): FunctionRecord | undefined };
  settings: AsyncSettings;
  bodies?: BodyBounds;
  refusals?: Refusals;
  now: () => number;
  /** Told of every accepted call (the dispatcher starts it without waiting for its poll). */
  accepted(functionId: string): void;
  logger: { error(msg: string, fields?: Record<string, unknown>): void };
}

/** The request as stored: lower-case names, hop-by-hop headers left out, repeated ones joined as Node joins them. */
export function storedHeaders(raw: IncomingMessage['headers']): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(raw)) {
    if (value === undefined || HOP_BY_HOP.has(name)) continue;
    out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

/** `/async-invoke/{id}{rest}` as the function id and the path the handler sees (as /invoke splits it). */
export function splitAsyncUrl(url: string): { functionId: string; path: string } {
  const start = ASYNC_INVOKE_PREFIX.length;
  let end = start;
  while (end < url.length && url.charCodeAt(end) !== 47 && url.charCodeAt(end) !== 63) end++;
  const rest = url.slice(end);
  return { functionId: decodeURIComponentSafe(url.slice(start, end)), path: rest === '' ? '/' : rest.charCodeAt(0) === 63 ? '/' + rest : rest };
}

export class AsyncAcceptor {
  readonly #o: AcceptorOptions;
  /** The store's recent "full" answers, so a flood past a full queue is refused unread (./full-hint.ts). */
  readonly #full = new FullQueueHints();

  constructor(options: AcceptorOptions) {
    this.#o = options;
  }

  /** node:http entry for /async-invoke/ and /async-calls/. */
  handleHttp(req: IncomingMessage, res: ServerResponse): void {
    if (req.url!.startsWith(ASYNC_CALLS_PREFIX)) {
      void this.#status(req, res);
      return;
    }
    const { functionId, path } = splitAsyncUrl(req.url!);
    const fn = callableFunction(this.#o.functions.byId(functionId), functionId, req, res);
    if (fn === undefined) return;
    const key = req.headers['idempotency-key'];
    if (key !== undefined && (typeof key !== 'string' || !IDEMPOTENCY_KEY_RE.test(key))) {
      drainRequest(req);
      writeError(res, new ValidationError('Idempotency-Key must be 1 to 255 visible ASCII characters'));
      return;
    }
    // Checked before the body is read: a refused callback is answered 400 and nothing is stored (docs/async.md "Callbacks").
    const callbackHeader = req.headers['x-callback-url'];
    let callbackUrl: string | null = null;
    if (callbackHeader !== undefined) {
      try {
        callbackUrl = checkCallbackUrl(String(callbackHeader), fn.async?.callback_hosts);
      } catch (err) {
        drainRequest(req);
        writeError(res, err as FnhostError);
        return;
      }
    }
    // A queue the store found full a moment ago is refused before the body is read. A call with an
    // Idempotency-Key still goes to the store, which may answer it as a duplicate of an accepted one.
    if (key === undefined) {
      const declared = Number(req.headers['content-length'] ?? 0);
      const full = this.#full.refusing(fn.function_id, Number.isSafeInteger(declared) && declared > 0 ? declared : 0, this.#o.now());
      if (full !== undefined) {
        drainRequest(req);
        this.#refuseFull(fn, res, full);
        return;
      }
    }
    const bodies = this.#o.bodies;
    const admitted = admitBody(req, res, bodies);
    if (admitted === undefined) return;
    const { hasBody, lease } = admitted;
    const body = hasBody ? readBody(req, limits.MAX_INVOKE_BODY_BYTES, { lease, idleTimeoutMs: bodies?.idleTimeoutMs }) : Promise.resolve(null);
    body.then(
      (data) => this.#store(fn, req, res, path, data, key ?? null, callbackUrl).finally(() => lease?.release()),
      (err: unknown) => {
        lease?.release();
        // Nothing was accepted; a caller that left while sending has nobody to answer.
        answerBodyFailure(req, res, err, bodies);
      },
    );
  }

  async #store(fn: FunctionRecord, req: IncomingMessage, res: ServerResponse, path: string, body: Buffer | null, key: string | null, callbackUrl: string | null): Promise<void> {
    const request: AsyncRequest = { method: req.method!, path, headers: storedHeaders(req.headers), body: body === null || body.length === 0 ? null : body };
    const now = this.#o.now();
    const s = this.#o.settings;
    let result;
    try {
      result = await this.#o.store.accept(
        { id: newAsyncId(), function_id: fn.function_id, accepted_at: now, request, bytes: requestBytes(request), idempotency_key: key, callback_url: callbackUrl },
        { functionBytes: s.functionBytes, totalBytes: s.totalBytes, idempotencyWindowMs: s.idempotencyWindowMs },
        now,
      );
    } catch (err) {
      // Not stored, so not accepted: the caller is told so and may send it again.
      this.#o.logger.error('an async call could not be stored', { function_id: fn.function_id, error: (err as Error).message });
      writeError(res, new FnhostError('async_store_unavailable', 503, 'the call could not be stored; nothing was accepted, try again', { expose: true }), { 'retry-after': '1' });
      return;
    }
    if (result.outcome === 'full') {
      const full = { bound: result.bound, used: result.used, limit: result.limit, at: now };
      this.#full.noteFull(fn.function_id, full);
      this.#refuseFull(fn, res, full);
      return;
    }
    const id = result.outcome === 'accepted' ? result.call.id : result.id;
    if (result.outcome === 'accepted') this.#o.accepted(fn.function_id);
    const location = `${ASYNC_CALLS_PREFIX}${encodeURIComponent(fn.function_id)}/${id}`;
    const text = JSON.stringify({ async_id: id, function_id: fn.function_id, status_url: location, ...(result.outcome === 'duplicate' ? { duplicate: true } : {}) });
    if (res.destroyed) return;
    res.writeHead(202, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(text),
      location,
      ...(result.outcome === 'duplicate' ? { 'idempotent-replayed': 'true' } : {}),
    });
    res.end(text);
  }

  #refuseFull(fn: FunctionRecord, res: ServerResponse, full: FullQueue): void {
    this.#o.refusals?.refused(full.bound === 'function' ? 'async_queue_function_bytes' : 'async_queue_total_bytes',
      'an async call was refused: the queue is full', { function_id: fn.function_id, bound: full.bound, used_bytes: full.used, limit_bytes: full.limit });
    writeError(res, new QueueFullError(full.bound, full.used, full.limit), { 'retry-after': String(FULL_RETRY_AFTER_SECONDS) });
  }

  async #status(req: IncomingMessage, res: ServerResponse): Promise<void> {
    drainRequest(req);
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      writeError(res, new FnhostError('method_not_allowed', 405, 'an async call is read with GET', { expose: true }), { allow: 'GET, HEAD' });
      return;
    }
    const [functionId = '', id = ''] = req.url!.slice(ASYNC_CALLS_PREFIX.length).split('?')[0]!.split('/').map(decodeURIComponentSafe);
    const notFound = new NotFoundError('no such async call');
    if (!isAsyncId(id)) {
      writeError(res, notFound);
      return;
    }
    try {
      const call = await this.#o.store.get(functionId, id);
      if (call === null) {
        writeError(res, notFound);
        return;
      }
      const text = JSON.stringify(publicView(call));
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store' });
      res.end(req.method === 'HEAD' ? undefined : text);
    } catch (err) {
      this.#o.logger.error('reading an async call failed', { error: (err as Error).message });
      writeError(res, new FnhostError('async_store_unavailable', 503, 'the call could not be read; try again', { expose: true }), { 'retry-after': '1' });
    }
  }
}
