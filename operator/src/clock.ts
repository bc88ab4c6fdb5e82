import type { Clock } from '@fnhost/core/clock.ts';

// Time is injected (core/src/clock.ts) so that the work queue, backoff and
// leader election can be tested without waiting. The operator's timers never
// keep the process alive (unref).

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => {
    const t = setTimeout(fn, ms);
    t.unref?.();
    return t;
  },
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

export function sleep(clock: Clock, ms: number): Promise<void> {
  return new Promise((resolve) => clock.setTimeout(resolve, ms));
}

/** Capped exponential backoff: base·2^n up to max, n counting consecutive failures. */
export class Backoff {
  #failures = 0;
  readonly baseMs: number;
  readonly maxMs: number;
  constructor(baseMs: number, maxMs: number) {
    this.baseMs = baseMs;
    this.maxMs = maxMs;
  }
  next(): number {
    const delay = Math.min(this.maxMs, this.baseMs * 2 ** Math.min(this.#failures, 30));
    this.#failures++;
    return delay;
  }
  reset(): void {
    this.#failures = 0;
  }
  get failures(): number {
    return this.#failures;
  }
}
