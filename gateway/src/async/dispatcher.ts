import {
  ASYNC_RESULT_BODY_LIMIT, decideAfterAttempt, decideBeforeAttempt, isoTimestamp, keptUntil, retryPolicyOf,
  type AsyncAttempt, type AsyncCall, type AsyncCallStore, type AsyncCompletion, type AsyncCompletionWrite, type AsyncResult, type AsyncStats, type FunctionRecord,
  type UsageCorrection, type UsageDrift,
} from '@fnhost/core';
import type { BackgroundFailures } from '../background.ts';
import type { RunRequest, RunResult, RunOptions } from '../invoke/exchange.ts';
import { TIMEOUT_GRACE_MS } from '../invoke/proxy.ts';
import type { AsyncSettings } from './settings.ts';
import { Batcher } from './batcher.ts';

// Delivery of accepted async calls (docs/async.md): every gateway runs one.
// A pass asks the store for the functions with calls due, and for each
// function below its bound of attempts in flight on this gateway, claims its
// oldest due calls (first attempts in order of acceptance; a retry waiting for
// its backoff is not due, so it blocks nothing behind it) under a lease, and
// runs each through the same run path as a test or schedule run (one record
// per attempt, trigger async). A gateway that dies leaves its leases to
// expire; any gateway's pass puts them back in the queue (reap). Passes run
// when a call is accepted here and when an attempt ends (for that function,
// without a scan of the store), and every pollMs (a scan of the due
// functions). A claim takes all the free slots' calls in one store write, and
// the attempts that end together are recorded in one (batcher.ts).

/** What the dispatcher needs of the invoker (Invoker.run). */
export interface AsyncRunner {
  run(fn: FunctionRecord, trigger: 'async', request: RunRequest, options: RunOptions): Promise<RunResult>;
}

export interface DispatcherOptions {
  store: AsyncCallStore;
  functions: { byId(functionId: string): FunctionRecord | undefined };
  runner: AsyncRunner;
  settings: AsyncSettings;
  /** This gateway's lease owner id (its instance id). */
  owner: string;
  now: () => number;
  random?: () => number;
  background: BackgroundFailures;
  /** Told of each attempt's end (metrics). */
  onAttempt?: (outcome: AsyncCompletion['state']) => void;
  /** Told of each call that ended (its final answer recorded), to POST it to the call's callback (callback-sender.ts). */
  ended?: (call: AsyncCall, completion: Exclude<AsyncCompletion, { state: 'queued' }>) => void;
  /** Told of each byte count a recount corrected (logged). */
  onRecount?: (correction: UsageCorrection) => void;
}

/** The answer kept on the call: status, headers, the body up to ASYNC_RESULT_BODY_LIMIT. */
export function resultOf(run: RunResult): AsyncResult {
  const cut = run.body.length > ASYNC_RESULT_BODY_LIMIT;
  return {
    status_code: run.status_code,
    headers: run.headers,
    body: (cut ? run.body.subarray(0, ASYNC_RESULT_BODY_LIMIT) : run.body).toString('base64'),
    truncated: cut || run.truncated,
  };
}

/** How long a claimed call is held: the function's time limit, the gateway's own grace after it, and a margin. */
export function leaseMs(fn: Pick<FunctionRecord, 'timeout_seconds'>, marginMs: number): number {
  return fn.timeout_seconds * 1000 + TIMEOUT_GRACE_MS + marginMs;
}

/** What an attempt's end makes of the call (pure: the policy, the clock and the jitter passed in). */
export function completionOf(call: AsyncCall, fn: FunctionRecord, run: RunResult, startedAt: number, now: number, baseDelayMs: number, random: number): AsyncCompletion {
  const attempt: AsyncAttempt = {
    attempt: call.attempt, log_id: run.log_id, started_at: isoTimestamp(startedAt), ended_at: isoTimestamp(now),
    status_code: run.status_code, error_message: run.error_message,
  };
  const decision = decideAfterAttempt(call.attempt, run.status_code, call.accepted_at, now, retryPolicyOf(fn.async, baseDelayMs), random);
  if (decision.state === 'queued') return { state: 'queued', next_at: decision.next_at, attempt };
  if (decision.state === 'dead') return { state: 'dead', attempt, reason: decision.reason, result: resultOf(run), kept_until: keptUntil(fn.retention, now) };
  return { state: decision.state, attempt, result: resultOf(run), kept_until: keptUntil(fn.retention, now) };
}

/** A function to claim for and how many of its calls (claimPlan). */
export interface ClaimStep {
  fn: FunctionRecord;
  max: number;
}

/**
 * Which functions a pass claims for, and how many calls each (pure): of the
 * candidates (told of, or due in the store), the known active ones below
 * their bound of attempts in flight on this gateway, up to that bound. An
 * inactive (or not yet known) function's calls wait in the queue, neither run
 * nor lost.
 */
export function claimPlan(
  candidates: Iterable<string>, byId: (functionId: string) => FunctionRecord | undefined, inFlight: ReadonlyMap<string, number>, bound: number,
): ClaimStep[] {
  const out: ClaimStep[] = [];
  for (const functionId of candidates) {
    const fn = byId(functionId);
    if (fn === undefined || !fn.active) continue;
    const max = bound - (inFlight.get(functionId) ?? 0);
    if (max > 0) out.push({ fn, max });
  }
  return out;
}

/** The most attempt ends one store write takes (a pass claims at most the in-flight bound per function anyway). */
export const COMPLETION_BATCH = 256;

export class AsyncDispatcher {
  readonly #o: DispatcherOptions;
  readonly #inFlight = new Map<string, number>();
  readonly #running = new Set<Promise<void>>();
  readonly #completions: Batcher<AsyncCompletionWrite, boolean>;
  /** Functions told of since the last pass (a call accepted here, an attempt ended): claimed for without asking the store which are due. */
  readonly #hinted = new Set<string>();
  #timer: NodeJS.Timeout | undefined;
  #passing = false;
  #again = false;
  #stopped = false;
  #scanDue = true;
  #lastScan = 0;
  #lastReap = 0;
  #recountAt = 0;
  #drift: UsageDrift = new Map();
  #stats: AsyncStats = { queued: 0, running: 0, dead: 0, oldestQueuedAt: null };
  #statsAt = 0;
  retried = 0;
  deadLettered = 0;

  constructor(options: DispatcherOptions) {
    this.#o = options;
    this.#completions = new Batcher({ write: (writes) => options.store.completeMany(writes, options.now()), maxBatch: COMPLETION_BATCH });
  }

  start(): void {
    this.#timer = setInterval(() => this.wake(), this.#o.settings.pollMs);
    this.#timer.unref();
    this.wake();
  }

  /** Attempts running on this gateway. */
  get inFlight(): number {
    return this.#running.size;
  }

  /** The store's counts as of the last refresh (every few seconds, by the passes). */
  get stats(): AsyncStats {
    return this.#stats;
  }

  /**
   * Runs a pass soon (coalesced: a pass under way runs once more after).
   * With a function id, the pass claims that function's calls without a scan
   * of the store's due functions; without, it scans (the poll: retries come
   * due, other replicas' calls, expired leases).
   */
  wake(functionId?: string): void {
    if (this.#stopped) return;
    if (functionId === undefined) this.#scanDue = true;
    else this.#hinted.add(functionId);
    this.#schedulePass();
  }

  #schedulePass(): void {
    if (this.#stopped) return;
    if (this.#passing) {
      this.#again = true;
      return;
    }
    this.#passing = true;
    setImmediate(() => {
      void this.#pass().finally(() => {
        this.#passing = false;
        if (this.#again) {
          this.#again = false;
          this.#schedulePass();
        }
      });
    });
  }

  /** No more claims; resolves once the attempts under way ended and were recorded, or after maxMs (their leases then expire elsewhere). */
  async stop(maxMs: number): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    if (this.#running.size === 0) return;
    await Promise.race([Promise.allSettled([...this.#running]), new Promise((r) => setTimeout(r, maxMs).unref())]);
  }

  async #pass(): Promise<void> {
    const { store, settings } = this.#o;
    try {
      const now = this.#o.now();
      if (now - this.#lastReap >= settings.pollMs) {
        this.#lastReap = now;
        if (await store.reap(now) > 0) this.#scanDue = true;
      }
      if (now - this.#recountAt >= settings.recountMs) {
        // From the first pass on: a count a killed gateway left is corrected a recount after this start.
        this.#recountAt = now;
        // Its own failure: a recount that fails must not hold back the claims below.
        try {
          const recount = await store.recount(this.#drift);
          this.#drift = recount.drift;
          for (const c of recount.corrections) this.#o.onRecount?.(c);
        } catch (err) {
          this.#o.background.failed('async_recount', err);
        }
      }
      if (now - this.#statsAt >= 5000) {
        this.#statsAt = now;
        this.#stats = await store.stats();
      }
      const candidates = new Set(this.#hinted);
      this.#hinted.clear();
      if (this.#scanDue || now - this.#lastScan >= settings.pollMs) {
        this.#scanDue = false;
        this.#lastScan = now;
        for (const functionId of await store.dueFunctions(now, 1000)) candidates.add(functionId);
      }
      for (const { fn, max } of claimPlan(candidates, (id) => this.#o.functions.byId(id), this.#inFlight, settings.maxInFlightPerFunction)) {
        if (this.#stopped) return;
        const t = this.#o.now();
        const calls = await store.claim(fn.function_id, this.#o.owner, t, t + leaseMs(fn, settings.leaseMarginMs), max);
        for (const call of calls) this.#start(fn, call);
      }
    } catch (err) {
      this.#o.background.failed('async_dispatch', err);
    }
  }

  #start(fn: FunctionRecord, call: AsyncCall): void {
    this.#inFlight.set(fn.function_id, (this.#inFlight.get(fn.function_id) ?? 0) + 1);
    const p = this.#attempt(fn, call)
      .catch((err: unknown) => this.#o.background.failed('async_dispatch', err, { function_id: fn.function_id }))
      .finally(() => {
        this.#running.delete(p);
        const n = (this.#inFlight.get(fn.function_id) ?? 1) - 1;
        if (n <= 0) this.#inFlight.delete(fn.function_id);
        else this.#inFlight.set(fn.function_id, n);
        // The freed slot is filled by the next pass, with no scan of the store and no wait for the poll.
        this.wake(fn.function_id);
      });
    this.#running.add(p);
  }

  async #attempt(fn: FunctionRecord, call: AsyncCall): Promise<void> {
    const { settings } = this.#o;
    const startedAt = this.#o.now();
    const policy = retryPolicyOf(fn.async, settings.retryBaseMs);
    const before = decideBeforeAttempt(call.attempt, call.accepted_at, startedAt, policy);
    let completion: AsyncCompletion;
    if (!before.run || call.request === null) {
      completion = { state: 'dead', attempt: null, reason: before.run ? 'retries_exhausted' : before.reason, result: null, kept_until: keptUntil(fn.retention, startedAt) };
    } else {
      const request = call.request;
      const run = await this.#o.runner.run(fn, 'async', { method: request.method, path: request.path, headers: request.headers, body: request.body }, { async: { id: call.id, attempt: call.attempt } });
      completion = completionOf(call, fn, run, startedAt, this.#o.now(), settings.retryBaseMs, (this.#o.random ?? Math.random)());
    }
    // A lost lease (this gateway was taken for dead) writes nothing: the call runs again elsewhere.
    const written = await this.#completions.add({ id: call.id, function_id: call.function_id, bytes: call.bytes, owner: this.#o.owner, attempt: call.attempt, completion });
    if (written && completion.state !== 'queued') this.#o.ended?.(call, completion);
    if (completion.state === 'queued') this.retried++;
    if (completion.state === 'dead') this.deadLettered++;
    this.#o.onAttempt?.(completion.state);
  }
}
