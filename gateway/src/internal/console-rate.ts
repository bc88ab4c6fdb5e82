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
  /** Per function: its ids and their order (see Kept). */
  readonly #ids = new Map<string, Kept>();
  readonly #keptMs: number;
  readonly #max: number;
  /**
   * Ended ids past their time are swept at most this often per function, not at every end: an id
   * past its time is refused by knows() whether or not it was swept yet, and the bound on memory
   * is the per-function maximum either way.
   */
  readonly #sweepEveryMs: number;

  constructor(options: { keptMs?: number; maxPerFunction?: number } = {}) {
    this.#keptMs = options.keptMs ?? ENDED_KEPT_MS;
    this.#max = options.maxPerFunction ?? MAX_KEPT_PER_FUNCTION;
    this.#sweepEveryMs = Math.min(1000, this.#keptMs);
  }

  began(functionId: string, id: string): void {
    let kept = this.#ids.get(functionId);
    if (kept === undefined) this.#ids.set(functionId, (kept = new Kept()));
    if (kept.ids.size >= this.#max) kept.ids.delete(kept.shift());
    const size = kept.ids.size;
    kept.ids.set(id, undefined);
    if (kept.ids.size > size) kept.order.push(id);
  }

  ended(functionId: string, id: string, now: number): void {
    const kept = this.#ids.get(functionId);
    if (kept === undefined || !kept.ids.has(id)) return;
    kept.ids.set(id, now);
    if (now < kept.sweepAt) return;
    kept.sweepAt = now + this.#sweepEveryMs;
    // Drops ended ids past their time from the oldest end, stopping at the first one still kept or running.
    for (;;) {
      const oldest = kept.oldest();
      if (oldest === undefined) break;
      const endedAt = kept.ids.get(oldest);
      if (endedAt === undefined || now - endedAt <= this.#keptMs) break;
      kept.ids.delete(kept.shift());
    }
    if (kept.ids.size === 0) this.#ids.delete(functionId);
  }

  /** Whether functionId's output may name id now. */
  knows(functionId: string, id: string, now: number): boolean {
    const mine = this.#ids.get(functionId)?.ids;
    if (mine === undefined || !mine.has(id)) return false;
    const endedAt = mine.get(id);
    return endedAt === undefined || now - endedAt <= this.#keptMs;
  }

  /** Ids kept for a function (tests). */
  size(functionId: string): number {
    return this.#ids.get(functionId)?.ids.size ?? 0;
  }
}

/**
 * One function's kept ids: `ids` (execution id → when it ended, undefined: running) for lookups,
 * and `order`, the same ids oldest first, for taking the oldest out. Ids only ever leave from the
 * oldest end, so a queue (an array and its head, compacted now and then) keeps the order. A Map
 * alone keeps it too, but taking its first key (`keys().next()`) walks over the slots that
 * earlier deletes left empty at its front until the Map is rehashed: at the per-function bound,
 * one delete per call, that was ≈ 3.8 µs a call (began + ended, in-process), 1.8 % of the
 * gateway's busy time under hello load; with the queue ≈ 0.3 µs.
 */
class Kept {
  readonly ids = new Map<string, number | undefined>();
  order: string[] = [];
  #head = 0;
  sweepAt = Number.NEGATIVE_INFINITY;

  oldest(): string | undefined {
    return this.order[this.#head];
  }

  /** Takes the oldest id out of the order (the caller deletes it from ids). */
  shift(): string {
    const id = this.order[this.#head++]!;
    // Compacted once the taken part is both large and most of the array: amortized O(1) per id.
    if (this.#head >= 1024 && this.#head * 2 >= this.order.length) {
      this.order = this.order.slice(this.#head);
      this.#head = 0;
    }
    return id;
  }
}
