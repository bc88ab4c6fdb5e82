import type { AsyncCall, AsyncCompletion } from '@fnhost/core';

// What a callback POSTs (docs/async.md "Callbacks"): the function's final
// answer as plainly as OpenFaaS's queue-worker sends it: its body as is (the
// answer kept on the call, up to ASYNC_RESULT_BODY_LIMIT, as Lambda's
// destinations carry a bounded payload), its own headers, and the call's
// facts in X-Fnhost-* headers. Pure: the sender (callback-sender.ts) does the I/O.

/** The final answer of a call as a callback carries it. */
export interface CallbackPayload {
  functionId: string;
  asyncId: string;
  /** How the call ended. */
  state: 'succeeded' | 'failed' | 'dead';
  /** The attempt that gave the answer. */
  attempt: number;
  /** The function's status; null for a call given up before an attempt answered. */
  status: number | null;
  headers: Record<string, string | string[]>;
  body: Buffer;
  truncated: boolean;
  deadReason: string | null;
}

/** The function's headers never passed on: connection-scoped ones, the length (the POST's own), and the platform's names. */
const NOT_PASSED = new Set(['connection', 'keep-alive', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'proxy-connection', 'proxy-authenticate', 'content-length', 'host', 'set-cookie']);

/** The payload of a call that just ended with `completion` (its final state). */
export function callbackPayloadOf(call: AsyncCall, completion: Exclude<AsyncCompletion, { state: 'queued' }>): CallbackPayload {
  const result = completion.result;
  return {
    functionId: call.function_id,
    asyncId: call.id,
    state: completion.state,
    attempt: completion.attempt?.attempt ?? call.attempt,
    status: result?.status_code ?? null,
    headers: result?.headers ?? {},
    body: result === null ? Buffer.alloc(0) : Buffer.from(result.body, 'base64'),
    truncated: result?.truncated ?? false,
    deadReason: completion.state === 'dead' ? completion.reason : null,
  };
}

/** The payload of a call that ended earlier, as stored (a callback a dead gateway left pending, taken over). */
export function storedCallbackPayload(call: AsyncCall): CallbackPayload {
  const result = call.result;
  const answered = [...call.attempts].reverse().find((a) => a.status_code !== null);
  return {
    functionId: call.function_id,
    asyncId: call.id,
    state: call.state === 'succeeded' || call.state === 'failed' ? call.state : 'dead',
    attempt: answered?.attempt ?? call.attempt,
    status: result?.status_code ?? null,
    headers: result?.headers ?? {},
    body: result === null ? Buffer.alloc(0) : Buffer.from(result.body, 'base64'),
    truncated: result?.truncated ?? false,
    deadReason: call.dead_reason,
  };
}

/** The POST's headers: the function's own (but NOT_PASSED and any x-fnhost-*), then the call's facts. */
export function callbackHeaders(p: CallbackPayload): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(p.headers)) {
    const n = name.toLowerCase();
    if (NOT_PASSED.has(n) || n.startsWith('x-fnhost-')) continue;
    out[n] = value;
  }
  out['content-length'] = String(p.body.length);
  out['user-agent'] = 'fnhost-callback/1';
  out['x-fnhost-function-id'] = p.functionId;
  out['x-fnhost-async-id'] = p.asyncId;
  out['x-fnhost-attempt'] = String(p.attempt);
  out['x-fnhost-state'] = p.state;
  if (p.status !== null) out['x-fnhost-status'] = String(p.status);
  if (p.deadReason !== null) out['x-fnhost-dead-reason'] = p.deadReason;
  if (p.truncated) out['x-fnhost-truncated'] = 'true';
  return out;
}
