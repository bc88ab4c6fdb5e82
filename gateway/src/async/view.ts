import { isoTimestamp, shownUrl, type AsyncCall, type AsyncCallback } from '@fnhost/core';

// An async call as the API shows it. The owner sees everything the platform
// knows of it but the stored headers' values (the caller's credentials are
// the handler's, not the owner's); whoever holds the call's id (the 202's
// Location: a capability URL) sees what a caller of /invoke would have seen:
// the state, each attempt's status and the final answer, never the records'
// ids or error texts, which are the owner's.

function iso(ms: number | null): string | null {
  return ms === null ? null : isoTimestamp(ms);
}

/** A callback as shown: its URL without the query (which may hold the receiver's secret); the error text for the owner only. */
function callbackView(cb: AsyncCallback | null, owner: boolean) {
  if (cb === null) return null;
  return {
    url: shownUrl(cb.url), state: cb.state, attempts: cb.attempts, last_status: cb.last_status,
    ...(owner ? { last_error: cb.last_error } : {}), updated_at: iso(cb.updated_at),
  };
}

export function publicView(call: AsyncCall) {
  return {
    async_id: call.id,
    function_id: call.function_id,
    state: call.state,
    accepted_at: isoTimestamp(call.accepted_at),
    finished_at: iso(call.finished_at),
    attempts: call.attempts.map((a) => ({ attempt: a.attempt, started_at: a.started_at, ended_at: a.ended_at, status_code: a.status_code })),
    result: call.result,
    callback: callbackView(call.callback, false),
  };
}

export function ownerView(call: AsyncCall) {
  return {
    ...publicView(call),
    attempt: call.attempt,
    next_attempt_at: call.state === 'queued' ? isoTimestamp(call.next_at) : null,
    lease_until: iso(call.lease_until),
    dead_reason: call.dead_reason,
    attempts: call.attempts,
    bytes: call.bytes,
    idempotency_key: call.idempotency_key,
    kept_until: iso(call.kept_until),
    callback: callbackView(call.callback, true),
    request: call.request === null ? null : { method: call.request.method, path: call.request.path, header_names: Object.keys(call.request.headers), body_bytes: call.request.body?.length ?? 0 },
  };
}
