import { FnhostError } from '@fnhost/core';
import { takeTokens, type Bucket } from '@fnhost/core/kv-quota.ts';

// The bound on GET /internal/v1/code/{digest} (docs/security.md "Resources: code fetches"): a
// runtime fetches its code once per start (cluster mode's pods; a pod's restart finds it in its
// cache), yet anything holding a function's runtime token could ask for up to 50 MiB at a time
// flat out, each fetch a stream the gateway reads from its disk or MongoDB. Per function (the
// token names the function, so every runtime of it shares the bound) and per gateway replica:
// at most `concurrent` streams at once, and a token bucket of bytes, each fetch charged its
// blob's size (at least MIN_CHARGE_BYTES, so a flood of 404s is bounded too). Past either: 429
// with Retry-After, which the runtime's fetch honours (runtime-image/src/code-fetch.ts).

export interface CodeFetchSettings {
  /** Fetches streaming at once per function (FNHOST_CODE_FETCHES_PER_FUNCTION). */
  concurrent: number;
  /** Sustained bytes a second per function (FNHOST_CODE_FETCH_BYTES_PER_SECOND). */
  bytesPerSecond: number;
  /** The bucket's size (FNHOST_CODE_FETCH_BURST_BYTES). */
  burstBytes: number;
}

const MIB = 1024 * 1024;

/**
 * Four streams at once (nginx's limit_conn in spirit: a scale-up of several pods is served four
 * at a time, the others retry a second later); 256 MiB at once, five fetches of the largest code
 * (50 MiB), then 32 MiB a second: a scale-up of twenty pods of the largest code is served in
 * about 25 s, inside the runtime's 60 s of patience, while one function can no longer keep the
 * gateway streaming gigabytes.
 */
export const CODE_FETCH_DEFAULTS: CodeFetchSettings = { concurrent: 4, bytesPerSecond: 32 * MIB, burstBytes: 256 * MIB };

/** What a fetch costs at least: a 404 or a tiny blob is a request all the same. */
export const MIN_CHARGE_BYTES = 64 * 1024;

/** Functions whose buckets are kept: beyond, the refilled ones are dropped (which only forgives). */
const MAX_BUCKETS = 10_000;

export type CodeFetchRefusal = 'code_fetches' | 'code_fetch_rate';

/** A fetch refused at the bound: 429 with Retry-After. */
export class CodeFetchBoundError extends FnhostError {
  readonly reason: CodeFetchRefusal;
  readonly retryAfterSeconds: number;
  constructor(reason: CodeFetchRefusal, what: string, retryAfterSeconds: number) {
    super('too_many_requests', 429, `code fetch refused: this function is over its bound (${what}); retry after ${retryAfterSeconds} s`, { expose: true });
    this.reason = reason;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** The bytes a fetch of a blob of `size` is charged (undefined: no such blob). */
export function fetchCharge(size: number | undefined): number {
  return Math.max(MIN_CHARGE_BYTES, size ?? 0);
}

/** Whole seconds of a Retry-After (at least 1). */
export function retryAfterSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

export class CodeFetchBound {
  readonly #s: CodeFetchSettings;
  readonly #inFlight = new Map<string, number>();
  readonly #buckets = new Map<string, Bucket>();

  constructor(settings: CodeFetchSettings) {
    this.#s = settings;
  }

  /** Fetches of functionId streaming now (tests). */
  inFlight(functionId: string): number {
    return this.#inFlight.get(functionId) ?? 0;
  }

  /**
   * Admits one fetch of `bytes` for functionId: a release to call once its stream has ended
   * (idempotent), or CodeFetchBoundError with nothing taken.
   */
  admit(functionId: string, bytes: number, now: number): () => void {
    const s = this.#s;
    const running = this.#inFlight.get(functionId) ?? 0;
    if (running >= s.concurrent) throw this.#tooMany();
    const taken = takeTokens(this.#buckets.get(functionId), bytes, s.bytesPerSecond, s.burstBytes, now);
    if (!taken.ok) throw this.#overRate(taken.retryAfterMs);
    if (!this.#buckets.has(functionId) && this.#buckets.size >= MAX_BUCKETS) this.#forgetRefilled(now);
    this.#buckets.set(functionId, taken.bucket);
    this.#inFlight.set(functionId, running + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.#inFlight.get(functionId) ?? 1) - 1;
      if (left <= 0) this.#inFlight.delete(functionId);
      else this.#inFlight.set(functionId, left);
    };
  }

  /**
   * Throws what admit() would throw for any fetch of functionId now, taking nothing: its streams at
   * the bound, or its bucket short of the least a fetch is charged. So a refusal is answered before
   * the blob is looked up (a stat on disk, a query to MongoDB in cluster mode), which a flood of
   * refused fetches would otherwise pay each time (issue 30).
   */
  check(functionId: string, now: number): void {
    const s = this.#s;
    if ((this.#inFlight.get(functionId) ?? 0) >= s.concurrent) throw this.#tooMany();
    const taken = takeTokens(this.#buckets.get(functionId), MIN_CHARGE_BYTES, s.bytesPerSecond, s.burstBytes, now);
    if (!taken.ok) throw this.#overRate(taken.retryAfterMs);
  }

  #tooMany(): CodeFetchBoundError {
    return new CodeFetchBoundError('code_fetches', `${this.#s.concurrent} fetches at once`, 1);
  }

  #overRate(retryAfterMs: number): CodeFetchBoundError {
    return new CodeFetchBoundError('code_fetch_rate', `${this.#s.bytesPerSecond} bytes a second`, retryAfterSeconds(retryAfterMs));
  }

  #forgetRefilled(now: number): void {
    for (const [id, b] of this.#buckets) if (b.tokens + ((now - b.at) * this.#s.bytesPerSecond) / 1000 >= this.#s.burstBytes) this.#buckets.delete(id);
  }
}
