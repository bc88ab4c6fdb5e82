import { FnhostError } from '@fnhost/core';
import { takeTokens, type Bucket } from '@fnhost/core/kv-quota.ts';

// Console posts (POST /internal/v1/console) bounded per function (docs/security.md "Resources:
// internal API, egress, console"): a token bucket of bytes and one of posts per function, checked
// on the declared length before the body is read; and the executions a post may name, kept per
// function (running and just ended), so a post naming none of them costs no store work. Without
// both, one function posting flat out wrote 1.2 GB in 20 s and slowed its neighbours (issue 27).

/** A post's body at most (./console.ts): 32 executions at their bound, with JSON's overhead. */
export const MAX_CONSOLE_POST_BYTES = 4 * 1024 * 1024;

export const CONSOLE_RATE_DEFAULTS = {
  /**
   * Sustained bytes per second per function: 1 MiB/s, CloudWatch Logs' PutLogEvents batch per call
   * and far above what a function's console writes at a thousand calls a second with a line each.
   */
  bytesPerSecond: 1024 * 1024,
  /** Burst: two full posts (4 MiB each), so a runtime catching up after a busy second is not refused. */
  burstBytes: 8 * 1024 * 1024,
  /** Posts per second: a runtime sends one per 32 executions, every 250 ms at most per batch due. */
  postsPerSecond: 50,
  burstPosts: 100,
};

/** How long an ended execution may still receive its output: FNHOST_CONSOLE_GRACE_MS is at most 10 s, plus the post's way. */
export const ENDED_KEPT_MS = 60_000;
/** Executions kept per function (running and ended): a function with more running at once has its oldest forgotten first. */
export const MAX_KEPT_PER_FUNCTION = 4096;
/** Functions whose buckets are kept: beyond, the fullest (idlest) are dropped, which only forgives. */
const MAX_BUCKETS = 10_000;

/** A post refused at the rate bound: 429 with Retry-After. */
export class ConsoleRateError extends FnhostError {
  readonly retryAfterSeconds: number;
  constructor(what: string, retryAfterSeconds: number) {
    super('console_rate', 429, `console output is over this function's rate bound (${what}); dropped: retry after ${retryAfterSeconds} s`);
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

export interface ConsoleRateOptions {
  bytesPerSecond: number;
  burstBytes: number;
  postsPerSecond: number;
  burstPosts: number;
}

/** Per function: a bytes bucket and a posts bucket. */
export class ConsoleRate {
  readonly #o: ConsoleRateOptions;
  /** Per function: the bytes and posts buckets (core's token buckets, as KV's write rate uses). */
  readonly #buckets = new Map<string, { bytes: Bucket | undefined; posts: Bucket | undefined }>();

  constructor(options: ConsoleRateOptions) {
    this.#o = options;
  }

  /** Charges one post of `bytes` to functionId, or throws ConsoleRateError (nothing charged). */
  charge(functionId: string, bytes: number, now: number): void {
    const o = this.#o;
    let b = this.#buckets.get(functionId);
    if (b === undefined) {
      // Beyond MAX_BUCKETS, the buckets that have refilled are dropped: dropping one only forgives.
      if (this.#buckets.size >= MAX_BUCKETS) {
        for (const [id, old] of this.#buckets) if (refilled(old.bytes, o.bytesPerSecond, o.burstBytes, now) && refilled(old.posts, o.postsPerSecond, o.burstPosts, now)) this.#buckets.delete(id);
      }
      b = { bytes: undefined, posts: undefined };
      this.#buckets.set(functionId, b);
    }
    const posts = takeTokens(b.posts, 1, o.postsPerSecond, o.burstPosts, now);
    if (!posts.ok) throw new ConsoleRateError(`${o.postsPerSecond} posts a second`, seconds(posts.retryAfterMs));
    const taken = takeTokens(b.bytes, bytes, o.bytesPerSecond, o.burstBytes, now);
    if (!taken.ok) throw new ConsoleRateError(`${o.bytesPerSecond} bytes a second`, seconds(taken.retryAfterMs));
    b.posts = posts.bucket;
    b.bytes = taken.bucket;
  }
}

/** Whole seconds of a Retry-After (at least 1). */
function seconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

/** Whether a bucket is full again by now (or was never used). */
function refilled(bucket: Bucket | undefined, rate: number, capacity: number, now: number): boolean {
  return bucket === undefined || bucket.tokens + ((now - bucket.at) * rate) / 1000 >= capacity;
}

/**
 * The executions of each function that console output may still name: running ones, and ended ones
 * for ENDED_KEPT_MS. Bounded per function (oldest first out) and dropped with the function's last entry.
 */
export class ExecutionIds {
  /** function → execution id → when it ended (undefined: running); Maps keep insertion order, oldest first. */
  readonly #ids = new Map<string, Map<string, number | undefined>>();
  readonly #keptMs: number;
  readonly #max: number;

  constructor(options: { keptMs?: number; maxPerFunction?: number } = {}) {
    this.#keptMs = options.keptMs ?? ENDED_KEPT_MS;
    this.#max = options.maxPerFunction ?? MAX_KEPT_PER_FUNCTION;
  }

  began(functionId: string, id: string): void {
    let mine = this.#ids.get(functionId);
    if (mine === undefined) this.#ids.set(functionId, (mine = new Map()));
    if (mine.size >= this.#max) mine.delete(mine.keys().next().value!);
    mine.set(id, undefined);
  }

  ended(functionId: string, id: string, now: number): void {
    const mine = this.#ids.get(functionId);
    if (mine === undefined || !mine.has(id)) return;
    mine.set(id, now);
    this.#expire(functionId, mine, now);
  }

  /** Whether functionId's output may name id now. */
  knows(functionId: string, id: string, now: number): boolean {
    const mine = this.#ids.get(functionId);
    if (mine === undefined || !mine.has(id)) return false;
    const endedAt = mine.get(id);
    return endedAt === undefined || now - endedAt <= this.#keptMs;
  }

  /** Drops ended ids past their time from the oldest end, stopping at the first one still kept or running. */
  #expire(functionId: string, mine: Map<string, number | undefined>, now: number): void {
    for (const [id, endedAt] of mine) {
      if (endedAt === undefined || now - endedAt <= this.#keptMs) break;
      mine.delete(id);
    }
    if (mine.size === 0) this.#ids.delete(functionId);
  }

  /** Ids kept for a function (tests). */
  size(functionId: string): number {
    return this.#ids.get(functionId)?.size ?? 0;
  }
}
