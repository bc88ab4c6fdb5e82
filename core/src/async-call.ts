import { randomBytes } from 'node:crypto';
import { validateCallbackHosts, type AsyncCallback } from './async-callback.ts';
import { ValidationError } from './errors.ts';

// Asynchronous invocation (docs/async.md): the model of an accepted call and
// the pure decisions the gateway's dispatcher takes about it (retry or not,
// when, dead or not). Times are ms since epoch, passed in; randomness (the
// backoff's jitter) is passed in too, so every decision is a pure function.

export type AsyncState = 'queued' | 'running' | 'succeeded' | 'failed' | 'dead';
export const ASYNC_STATES: readonly AsyncState[] = ['queued', 'running', 'succeeded', 'failed', 'dead'];

/** Why a call was given up and put on the dead-letter list. */
export type DeadReason = 'retries_exhausted' | 'max_age';

/** A request as accepted: what the handler will see, as /invoke would have passed it. */
export interface AsyncRequest {
  method: string;
  /** Sub-path and query string as the handler sees it, starting with `/`. */
  path: string;
  /** Lower-case names; repeated headers joined as Node joins them. */
  headers: Record<string, string>;
  body: Buffer | null;
}

/** One attempt's outcome (its execution record is `log_id`). */
export interface AsyncAttempt {
  attempt: number;
  /** null when the gateway running it stopped before it ended (its lease expired). */
  log_id: string | null;
  started_at: string;
  ended_at: string;
  /** null when the gateway running it stopped before it ended. */
  status_code: number | null;
  error_message: string | null;
}

/** The function's final answer, as a caller would have seen it (the body bounded by ASYNC_RESULT_BODY_LIMIT). */
export interface AsyncResult {
  status_code: number;
  headers: Record<string, string | string[]>;
  /** base64 */
  body: string;
  truncated: boolean;
}

export interface AsyncCall {
  /** `async_` + 22 URL-safe characters (128 random bits): unguessable, so it is also the capability to read the call's state. */
  id: string;
  function_id: string;
  state: AsyncState;
  /** ms */
  accepted_at: number;
  /** Attempts started so far. */
  attempt: number;
  /** ms: not tried before (a retry's backoff). */
  next_at: number;
  lease_owner: string | null;
  lease_until: number | null;
  attempts: AsyncAttempt[];
  dead_reason: DeadReason | null;
  result: AsyncResult | null;
  /** The request's stored size (counted against the queue bounds while the call holds it). */
  bytes: number;
  idempotency_key: string | null;
  /** ms: a finished or dead call is deleted from then on (the function's retention). */
  kept_until: number | null;
  /** null while queued or running, else when it finished. */
  finished_at: number | null;
  /** The request; null once the call succeeded or failed (nothing more will send it). */
  request: AsyncRequest | null;
  /** Where its final answer is POSTed (X-Callback-Url), and how that went; null without one. */
  callback: AsyncCallback | null;
}

/** What the acceptor stores. */
export interface NewAsyncCall {
  id: string;
  function_id: string;
  accepted_at: number;
  request: AsyncRequest;
  bytes: number;
  idempotency_key: string | null;
  /** The checked X-Callback-Url (async-callback.ts checkCallbackUrl), or null. */
  callback_url: string | null;
}

/** The queue's bounds at acceptance (bytes of the calls holding a request: queued, running, dead). */
export interface AsyncBounds {
  functionBytes: number;
  totalBytes: number;
  /** An Idempotency-Key is remembered this long after its call's acceptance. */
  idempotencyWindowMs: number;
}

export type AcceptResult =
  | { outcome: 'accepted'; call: AsyncCall }
  /** The key was seen within the window: the first call's id, nothing stored. */
  | { outcome: 'duplicate'; id: string }
  | { outcome: 'full'; bound: 'function' | 'total'; used: number; limit: number };

/** How an attempt ended, as the store records it. */
export type AsyncCompletion =
  | { state: 'queued'; next_at: number; attempt: AsyncAttempt }
  | { state: 'succeeded' | 'failed'; attempt: AsyncAttempt; result: AsyncResult; kept_until: number }
  | { state: 'dead'; attempt: AsyncAttempt | null; reason: DeadReason; result: AsyncResult | null; kept_until: number };

/**
 * One attempt's end for AsyncCallStore.completeMany: written only while
 * `owner` still holds the call's lease for `attempt`. `function_id` and
 * `bytes` are the claimed call's, so that a store whose byte counts are
 * separate documents (MongoDB) releases them without reading the call again.
 */
export interface AsyncCompletionWrite {
  id: string;
  function_id: string;
  bytes: number;
  owner: string;
  attempt: number;
  completion: AsyncCompletion;
}

/** Per-state counts and the oldest waiting call, for metrics. */
export interface AsyncStats {
  queued: number;
  running: number;
  dead: number;
  /** accepted_at of the oldest queued call, null when none. */
  oldestQueuedAt: number | null;
}

// A function's own settings (FunctionRecord.async) are model.ts's, so that the model imports nothing of the queue.
export type { FunctionAsyncSettings } from './model.ts';
import type { FunctionAsyncSettings } from './model.ts';

/** Lambda's defaults: two retries, six hours. */
export const DEFAULT_ASYNC_RETRIES = 2;
export const MAX_ASYNC_RETRIES = 2;
export const DEFAULT_ASYNC_MAX_AGE_SECONDS = 6 * 3600;
export const MIN_ASYNC_MAX_AGE_SECONDS = 60;
export const MAX_ASYNC_MAX_AGE_SECONDS = 6 * 3600;
/** The final answer's body kept on the call (for --wait and the state read); the rest is cut and marked. */
export const ASYNC_RESULT_BODY_LIMIT = 64 * 1024;
/** A finished or dead call of a function whose retention is by count is kept this long. */
export const ASYNC_DEFAULT_KEEP_MS = 7 * 86_400_000;

export function newAsyncId(): string {
  return 'async_' + randomBytes(16).toString('base64url');
}

const ASYNC_ID_RE = /^async_[A-Za-z0-9_-]{22}$/;
export function isAsyncId(value: string): boolean {
  return ASYNC_ID_RE.test(value);
}

/** Validates `async` as given to the API (merging onto `current` for a PATCH); {} means every default. */
export function validateAsyncSettings(raw: unknown, current: FunctionAsyncSettings = {}): FunctionAsyncSettings {
  if (raw === null) return {};
  if (typeof raw !== 'object' || Array.isArray(raw)) throw new ValidationError(`async must be an object {max_retries?, max_age_seconds?, callback_hosts?}, got ${JSON.stringify(raw)?.slice(0, 60)}`);
  const out: FunctionAsyncSettings = { ...current };
  for (const [field, value] of Object.entries(raw as Record<string, unknown>)) {
    if (field === 'max_retries') {
      if (value === null) delete out.max_retries;
      else if (!Number.isInteger(value) || (value as number) < 0 || (value as number) > MAX_ASYNC_RETRIES) {
        throw new ValidationError(`async.max_retries must be an integer from 0 to ${MAX_ASYNC_RETRIES} (or null for the default ${DEFAULT_ASYNC_RETRIES}), got ${JSON.stringify(value)?.slice(0, 40)}`);
      } else out.max_retries = value as number;
    } else if (field === 'max_age_seconds') {
      if (value === null) delete out.max_age_seconds;
      else if (!Number.isInteger(value) || (value as number) < MIN_ASYNC_MAX_AGE_SECONDS || (value as number) > MAX_ASYNC_MAX_AGE_SECONDS) {
        throw new ValidationError(`async.max_age_seconds must be an integer from ${MIN_ASYNC_MAX_AGE_SECONDS} to ${MAX_ASYNC_MAX_AGE_SECONDS} (or null for the default ${DEFAULT_ASYNC_MAX_AGE_SECONDS}), got ${JSON.stringify(value)?.slice(0, 40)}`);
      } else out.max_age_seconds = value as number;
    } else if (field === 'callback_hosts') {
      const hosts = validateCallbackHosts(value);
      if (hosts.length === 0) delete out.callback_hosts;
      else out.callback_hosts = hosts;
    } else {
      throw new ValidationError(`async: unknown field "${field.slice(0, 40)}"; allowed: max_retries, max_age_seconds, callback_hosts`);
    }
  }
  return out;
}

export interface RetryPolicy {
  maxRetries: number;
  maxAgeMs: number;
  /** The first retry's delay; each next one doubles it (Lambda: 1 minute, then 2). */
  baseDelayMs: number;
}

export function retryPolicyOf(settings: FunctionAsyncSettings | undefined, baseDelayMs: number): RetryPolicy {
  return {
    maxRetries: settings?.max_retries ?? DEFAULT_ASYNC_RETRIES,
    maxAgeMs: (settings?.max_age_seconds ?? DEFAULT_ASYNC_MAX_AGE_SECONDS) * 1000,
    baseDelayMs,
  };
}

/**
 * Whether an attempt that ended with this status is tried again: a 5xx (the
 * function's own 500, a timeout 504, an out-of-memory or an unreachable
 * runtime 502/503) may pass on a second try; a 4xx is the function's answer
 * to this request and would be the same again. A 429 is the one 4xx that says
 * "later", but a function's own 429 is its answer too: not retried, as Lambda.
 */
export function isRetryable(statusCode: number): boolean {
  return statusCode >= 500;
}

/**
 * The delay before retry number `retry` (1-based): base × 2^(retry-1), with
 * "equal jitter" (half fixed, half random), so that calls that failed
 * together do not come back together. `random` is in [0, 1).
 */
export function backoffMs(retry: number, baseDelayMs: number, random: number): number {
  const full = baseDelayMs * 2 ** Math.max(0, retry - 1);
  return Math.round(full / 2 + (full / 2) * random);
}

/** Whether a call accepted at `acceptedAt` may still be started at `now`. */
export function tooOld(acceptedAt: number, now: number, policy: RetryPolicy): boolean {
  return now - acceptedAt > policy.maxAgeMs;
}

/**
 * After attempt number `attempt` (1-based) ended with `statusCode`: the call
 * is done (succeeded below 400, failed on a 4xx, never retried), retried at a
 * time, or dead (its retries used up, or its next try would come past its age).
 */
export function decideAfterAttempt(
  attempt: number, statusCode: number, acceptedAt: number, now: number, policy: RetryPolicy, random: number,
): { state: 'succeeded' | 'failed' } | { state: 'queued'; next_at: number } | { state: 'dead'; reason: DeadReason } {
  if (statusCode < 400) return { state: 'succeeded' };
  if (!isRetryable(statusCode)) return { state: 'failed' };
  if (attempt > policy.maxRetries) return { state: 'dead', reason: 'retries_exhausted' };
  const next = now + backoffMs(attempt, policy.baseDelayMs, random);
  if (tooOld(acceptedAt, next, policy)) return { state: 'dead', reason: 'max_age' };
  return { state: 'queued', next_at: next };
}

/**
 * A call claimed for attempt `attempt`: whether it may run. An attempt
 * beyond the retries (earlier ones lost with their gateway, their lease
 * expired) or a call past its age goes to the dead letters instead.
 */
export function decideBeforeAttempt(attempt: number, acceptedAt: number, now: number, policy: RetryPolicy): { run: true } | { run: false; reason: DeadReason } {
  if (attempt > policy.maxRetries + 1) return { run: false, reason: 'retries_exhausted' };
  if (tooOld(acceptedAt, now, policy)) return { run: false, reason: 'max_age' };
  return { run: true };
}

/** When a call that finished at `now` is deleted: the function's time retention, or ASYNC_DEFAULT_KEEP_MS. */
export function keptUntil(retention: { type: string; days?: number }, now: number): number {
  return now + (retention.type === 'time' && typeof retention.days === 'number' ? retention.days * 86_400_000 : ASYNC_DEFAULT_KEEP_MS);
}

/** The bytes a request is counted at: its method, path, header names and values, and body. */
export function requestBytes(request: AsyncRequest): number {
  let n = request.method.length + Buffer.byteLength(request.path);
  for (const [k, v] of Object.entries(request.headers)) n += k.length + Buffer.byteLength(v);
  return n + (request.body?.length ?? 0);
}

/** The attempt a gateway took and never ended (it died): its lease expired. */
export function lostAttempt(attempt: number, leaseUntil: number): AsyncAttempt {
  const at = new Date(leaseUntil).toISOString();
  return { attempt, log_id: null, started_at: at, ended_at: at, status_code: null, error_message: 'the gateway running this attempt stopped before it ended (its lease expired)' };
}
