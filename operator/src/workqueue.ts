import type { Clock } from '@fnhost/core/clock.ts';

// A de-duplicating, rate-limited work queue in the manner of client-go's:
// - a key waiting in the queue is there once, however often it is added;
// - a key being processed is never handed to a second worker; if it is added
//   meanwhile it is queued again when the first worker calls done();
// - addRateLimited delays a failing key by base·2^failures (capped) until
//   forget() is called after a success;
// - addAfter keeps only the earliest pending time of a key.

export interface WorkQueueOptions {
  clock: Clock;
  baseDelayMs?: number;
  maxDelayMs?: number;
}

export class WorkQueue {
  readonly #clock: Clock;
  readonly #baseDelayMs: number;
  readonly #maxDelayMs: number;
  readonly #queue: string[] = [];
  readonly #dirty = new Set<string>();
  readonly #processing = new Set<string>();
  readonly #failures = new Map<string, number>();
  readonly #waiting = new Map<string, number>();
  #timer: unknown = undefined;
  #timerAt = Infinity;
  #getters: Array<(key: string | undefined) => void> = [];
  #shuttingDown = false;

  constructor(options: WorkQueueOptions) {
    this.#clock = options.clock;
    this.#baseDelayMs = options.baseDelayMs ?? 5;
    this.#maxDelayMs = options.maxDelayMs ?? 300_000;
  }

  add(key: string): void {
    if (this.#shuttingDown || this.#dirty.has(key)) return;
    this.#dirty.add(key);
    if (this.#processing.has(key)) return;
    const getter = this.#getters.shift();
    if (getter) {
      this.#dirty.delete(key);
      this.#processing.add(key);
      getter(key);
    } else {
      this.#queue.push(key);
    }
  }

  addAfter(key: string, delayMs: number): void {
    if (this.#shuttingDown) return;
    if (delayMs <= 0) return this.add(key);
    const at = this.#clock.now() + delayMs;
    const existing = this.#waiting.get(key);
    if (existing !== undefined && existing <= at) return;
    this.#waiting.set(key, at);
    this.#arm();
  }

  /** Delay for a key's next retry; grows with each call until forget(). */
  when(key: string): number {
    const n = this.#failures.get(key) ?? 0;
    this.#failures.set(key, n + 1);
    return Math.min(this.#maxDelayMs, this.#baseDelayMs * 2 ** Math.min(n, 40));
  }

  addRateLimited(key: string): number {
    const delay = this.when(key);
    this.addAfter(key, delay);
    return delay;
  }

  forget(key: string): void {
    this.#failures.delete(key);
  }

  numRequeues(key: string): number {
    return this.#failures.get(key) ?? 0;
  }

  /** The next key to process, or undefined once shut down. */
  get(): Promise<string | undefined> {
    const key = this.#queue.shift();
    if (key !== undefined) {
      this.#dirty.delete(key);
      this.#processing.add(key);
      return Promise.resolve(key);
    }
    if (this.#shuttingDown) return Promise.resolve(undefined);
    return new Promise((resolve) => this.#getters.push(resolve));
  }

  done(key: string): void {
    this.#processing.delete(key);
    if (this.#dirty.has(key)) {
      this.#dirty.delete(key);
      this.add(key);
    }
  }

  get length(): number {
    return this.#queue.length;
  }

  get waitingCount(): number {
    return this.#waiting.size;
  }

  shutDown(): void {
    this.#shuttingDown = true;
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#waiting.clear();
    for (const getter of this.#getters.splice(0)) getter(undefined);
  }

  #arm(): void {
    let earliest = Infinity;
    for (const at of this.#waiting.values()) earliest = Math.min(earliest, at);
    if (earliest === Infinity || earliest >= this.#timerAt) return;
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timerAt = earliest;
    this.#timer = this.#clock.setTimeout(() => this.#fire(), Math.max(0, earliest - this.#clock.now()));
  }

  #fire(): void {
    this.#timer = undefined;
    this.#timerAt = Infinity;
    const now = this.#clock.now();
    for (const [key, at] of [...this.#waiting]) {
      if (at <= now) {
        this.#waiting.delete(key);
        this.add(key);
      }
    }
    this.#arm();
  }
}
