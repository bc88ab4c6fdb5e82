// Calls in flight per function on this gateway replica, time-averaged over
// the autoscaler's two windows (docs/cluster-mode.md, Autoscaling): the
// stable window (60 s) and the panic window (6 s), as Knative's KPA averages
// them. The request path only moves a counter and adds `in flight × elapsed
// ms` into per-second buckets (a ring of 60), so reading an average is a sum
// of at most 60 numbers and the memory per function is fixed. Averages are
// exact over the window (an integral over time, not samples), so a burst of
// short calls counts for what it holds the pods.

export const BUCKET_MS = 1000;
export const STABLE_WINDOW_MS = 60_000;
export const PANIC_WINDOW_MS = 6_000;
/** Every full second of the longer window, plus the current (partial) second. */
const BUCKETS = STABLE_WINDOW_MS / BUCKET_MS + 1;

interface Meter {
  inFlight: number;
  /** When inFlight last changed or the integral was last brought up to date (ms). */
  since: number;
  /** ∫ inFlight dt (call·ms) per second, indexed by second mod BUCKETS. */
  buckets: Float64Array;
  /** The newest second written into `buckets`. */
  head: number;
}

export interface ConcurrencyAverages {
  stable: number;
  panic: number;
  inFlight: number;
}

export class ConcurrencyMeter {
  readonly #meters = new Map<string, Meter>();

  started(functionId: string, now: number): void {
    const m = this.#meter(functionId, now);
    this.#advance(m, now);
    m.inFlight++;
  }

  ended(functionId: string, now: number): void {
    const m = this.#meters.get(functionId);
    if (m === undefined || m.inFlight === 0) return;
    this.#advance(m, now);
    m.inFlight--;
  }

  /** The averages over both windows ending now (zeros for a function never seen). */
  averages(functionId: string, now: number): ConcurrencyAverages {
    const m = this.#meters.get(functionId);
    if (m === undefined) return { stable: 0, panic: 0, inFlight: 0 };
    this.#advance(m, now);
    const second = Math.floor(now / BUCKET_MS);
    // The current second is partial: each window is its full seconds before it plus the part elapsed.
    const partial = now - second * BUCKET_MS;
    return {
      stable: this.#sum(m, second, STABLE_WINDOW_MS / BUCKET_MS + 1) / (STABLE_WINDOW_MS + partial),
      panic: this.#sum(m, second, PANIC_WINDOW_MS / BUCKET_MS + 1) / (PANIC_WINDOW_MS + partial),
      inFlight: m.inFlight,
    };
  }

  /** Something to report: a call in flight, or calls within the stable window. */
  active(functionId: string, now: number): boolean {
    const a = this.averages(functionId, now);
    if (a.inFlight > 0 || a.stable > 0) return true;
    // Nothing left in the window: the meter is dropped (a function seen once costs nothing later).
    this.#meters.delete(functionId);
    return false;
  }

  forget(functionId: string): void {
    this.#meters.delete(functionId);
  }

  #meter(functionId: string, now: number): Meter {
    let m = this.#meters.get(functionId);
    if (m === undefined) {
      m = { inFlight: 0, since: now, buckets: new Float64Array(BUCKETS), head: Math.floor(now / BUCKET_MS) };
      this.#meters.set(functionId, m);
    }
    return m;
  }

  #sum(m: Meter, second: number, count: number): number {
    let total = 0;
    for (let s = second - count + 1; s <= second; s++) if (s > m.head - BUCKETS && s <= m.head) total += m.buckets[((s % BUCKETS) + BUCKETS) % BUCKETS]!;
    return total;
  }

  /** Moves the ring's head to `second`, clearing the seconds it passes over. */
  #roll(m: Meter, second: number): void {
    if (second <= m.head) return;
    if (second - m.head >= BUCKETS) m.buckets.fill(0);
    else for (let s = m.head + 1; s <= second; s++) m.buckets[s % BUCKETS] = 0;
    m.head = second;
  }

  /** Adds inFlight × elapsed into the seconds between `since` and now. */
  #advance(m: Meter, now: number): void {
    // Older than the window contributes nothing any more.
    let t = Math.max(m.since, now - STABLE_WINDOW_MS - BUCKET_MS);
    this.#roll(m, Math.floor(now / BUCKET_MS));
    if (m.inFlight > 0) {
      while (t < now) {
        const second = Math.floor(t / BUCKET_MS);
        const end = Math.min(now, (second + 1) * BUCKET_MS);
        if (second > m.head - BUCKETS) m.buckets[second % BUCKETS]! += m.inFlight * (end - t);
        t = end;
      }
    }
    m.since = Math.max(m.since, now);
  }
}
