// A full async queue, remembered for a moment (issue 30: cheap refusals). Each call past a full
// queue used to be read whole (up to the body limit) and taken to the store before the store said
// "full": a client flooding a slow function's queue made the gateway read and store-check every
// refused body (≈ 0.55 ms of its CPU per refused 64 KiB call on a loaded 2-core machine). The
// acceptor now notes each "full" answer of the store and, for FULL_HINT_MS, refuses a function's
// next calls that would not fit either before reading their bodies. The store stays the judge:
// the hint only ever refuses what the store refused a moment ago, and lapses on its own, so a
// queue that drained (here or on another replica) takes calls again within FULL_HINT_MS. That is
// far below the Retry-After the refusal names (FULL_RETRY_AFTER_SECONDS).

/** How long a "full" answer of the store is taken as still true. */
export const FULL_HINT_MS = 1000;
/** Functions remembered at most: beyond, the lapsed ones are dropped (a dropped hint only costs a store check). */
const MAX_HINTS = 10_000;

export interface FullQueue {
  bound: 'function' | 'total';
  used: number;
  limit: number;
  at: number;
}

/** Whether a call of `bytes` would be refused by what the store said at `full.at`, as of `now`. */
export function stillFull(full: FullQueue | undefined, bytes: number, now: number): boolean {
  return full !== undefined && now - full.at < FULL_HINT_MS && full.used + bytes > full.limit;
}

export class FullQueueHints {
  readonly #full = new Map<string, FullQueue>();

  noteFull(functionId: string, full: FullQueue): void {
    if (this.#full.size >= MAX_HINTS && !this.#full.has(functionId)) {
      for (const [id, f] of this.#full) if (full.at - f.at >= FULL_HINT_MS) this.#full.delete(id);
      if (this.#full.size >= MAX_HINTS) return;
    }
    this.#full.set(functionId, full);
  }

  /** The store's recent "full" for functionId if a call of `bytes` would still not fit, else undefined. */
  refusing(functionId: string, bytes: number, now: number): FullQueue | undefined {
    const full = this.#full.get(functionId);
    if (full === undefined) return undefined;
    if (stillFull(full, bytes, now)) return full;
    if (now - full.at >= FULL_HINT_MS) this.#full.delete(functionId);
    return undefined;
  }
}
