import type { CallbackSettings } from './callback-sender.ts';

// The queue's settings (docs/async.md "Settings"), from the environment. Each
// default is chosen as the peers' and said why.

export interface AsyncSettings {
  /** FNHOST_ASYNC_QUEUE_FUNCTION_BYTES: the bytes of one function's calls that hold a request (queued, running, dead). */
  functionBytes: number;
  /** FNHOST_ASYNC_QUEUE_TOTAL_BYTES: the same over every function. */
  totalBytes: number;
  /** FNHOST_ASYNC_IDEMPOTENCY_SECONDS: how long an Idempotency-Key is remembered (Stripe: 24 h). */
  idempotencyWindowMs: number;
  /** FNHOST_ASYNC_RETRY_BASE_MS: the first retry's delay, doubled for the next (Lambda: 1 min, then 2). */
  retryBaseMs: number;
  /** FNHOST_ASYNC_MAX_IN_FLIGHT: a function's async attempts running at once per gateway (the rest wait in the queue). */
  maxInFlightPerFunction: number;
  /** FNHOST_ASYNC_LEASE_MARGIN_MS: a lease lasts the function's time limit, the gateway's grace and this. */
  leaseMarginMs: number;
  /** FNHOST_ASYNC_POLL_MS: how often a gateway looks for due calls it was not told of (retries, other replicas' calls, expired leases). */
  pollMs: number;
  /** Callbacks (callback-sender.ts): FNHOST_ASYNC_CALLBACKS_IN_FLIGHT, FNHOST_ASYNC_CALLBACK_TIMEOUT_MS, FNHOST_ASYNC_CALLBACK_RETRY_BASE_MS. */
  callbacks: CallbackSettings;
  /** FNHOST_ASYNC_RECOUNT_MS: how often a gateway recounts the queue's byte counts (MongoDB; a drift is corrected when two recounts agree). */
  recountMs: number;
}

/** `intVar` reads one integer variable within bounds (config.ts's, which refuses a bad value naming it). */
export function asyncSettingsFrom(intVar: (name: string, fallback: number, min: number, max: number) => number): AsyncSettings {
  return {
    // 64 MiB per function: ten of the largest (6 MiB) bodies; 512 MiB in all, a data folder's share a small machine can give.
    functionBytes: intVar('FNHOST_ASYNC_QUEUE_FUNCTION_BYTES', 64 * 1024 * 1024, 1024, 2 ** 40),
    totalBytes: intVar('FNHOST_ASYNC_QUEUE_TOTAL_BYTES', 512 * 1024 * 1024, 1024, 2 ** 42),
    idempotencyWindowMs: intVar('FNHOST_ASYNC_IDEMPOTENCY_SECONDS', 86_400, 1, 7 * 86_400) * 1000,
    retryBaseMs: intVar('FNHOST_ASYNC_RETRY_BASE_MS', 60_000, 10, 3_600_000),
    // Four: a runtime serves many calls at once, so four async attempts leave it room for its synchronous callers.
    maxInFlightPerFunction: intVar('FNHOST_ASYNC_MAX_IN_FLIGHT', 4, 1, 1000),
    leaseMarginMs: intVar('FNHOST_ASYNC_LEASE_MARGIN_MS', 10_000, 100, 600_000),
    pollMs: intVar('FNHOST_ASYNC_POLL_MS', 500, 10, 60_000),
    callbacks: {
      // 64: each holds one connection and the answer (at most 64 KiB) while it tries and waits.
      maxInFlight: intVar('FNHOST_ASYNC_CALLBACKS_IN_FLIGHT', 64, 1, 10_000),
      // 10 s, as GitHub's and Stripe's webhook senders wait for a receiver.
      timeoutMs: intVar('FNHOST_ASYNC_CALLBACK_TIMEOUT_MS', 10_000, 100, 120_000),
      // 10 s before the second try and 20 s before the third (with jitter): a receiver restarting has time to come back.
      retryBaseMs: intVar('FNHOST_ASYNC_CALLBACK_RETRY_BASE_MS', 10_000, 10, 3_600_000),
    },
    // A minute: a leak is rare (a gateway killed between two writes) and a recount reads every held call's size.
    recountMs: intVar('FNHOST_ASYNC_RECOUNT_MS', 60_000, 100, 86_400_000),
  };
}
