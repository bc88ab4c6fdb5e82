import type { Clock } from '@fnhost/core/clock.ts';
import type { BackgroundFailures } from '../background.ts';

// Runtimes idle for longer than FNHOST_RUNTIME_IDLE_SECONDS are stopped (one machine): a
// function called once keeps no process for ever, and the warm pool brings it back on its next
// call. Split as kubernetes-client's informer cache is: a pure decision (which functions are due,
// and when to look again) over the activity this class keeps, and a class that holds the one
// timer and calls stop. Time comes from an injected Clock, so unit tests drive it.
//
// A function is active while a call to it is in flight (HTTP, a schedule firing, a test run: all
// go through the same send path) and idle from the end of its last call, or from the start of its
// runtime when it has had none. A function with a call in flight is never due.

export interface Activity {
  /** Calls begun and not yet ended. */
  inflight: number;
  /** Clock time of the last start or end of a call, or of the runtime's start. */
  lastActiveAt: number;
}

export interface IdleDecision {
  /** Functions idle for idleMs or longer, with nothing in flight: stop their runtimes. */
  stop: string[];
  /** When the next function becomes due (undefined: none can, until a call ends or a runtime starts). */
  nextCheckAt: number | undefined;
}

/** Which functions are due at `now` (pure). */
export function decideIdle(activity: ReadonlyMap<string, Activity>, now: number, idleMs: number): IdleDecision {
  const stop: string[] = [];
  let nextCheckAt: number | undefined;
  for (const [functionId, a] of activity) {
    if (a.inflight > 0) continue;
    const due = a.lastActiveAt + idleMs;
    if (due <= now) stop.push(functionId);
    else if (nextCheckAt === undefined || due < nextCheckAt) nextCheckAt = due;
  }
  return { stop, nextCheckAt };
}

export interface IdleRuntimesOptions {
  idleMs: number;
  clock: Clock;
  /** Stops the function's runtime, if it has one (the executor's normal, draining stop). */
  stop: (functionId: string) => void;
  /** A stop that throws is reported here (it runs in a timer) and the function is looked at again later. */
  background?: BackgroundFailures;
}

/** After a stop failed, the function is due again this much later. */
export const IDLE_RETRY_MS = 5_000;

export class IdleRuntimes {
  readonly #o: IdleRuntimesOptions;
  readonly #activity = new Map<string, Activity>();
  #timer: unknown;
  #timerAt: number | undefined;
  #closed = false;

  constructor(options: IdleRuntimesOptions) {
    this.#o = options;
  }

  /** A runtime of the function started: its idle time counts from now. */
  started(functionId: string): void {
    this.#touch(functionId, 0);
  }

  callStarted(functionId: string): void {
    this.#touch(functionId, 1);
  }

  callEnded(functionId: string): void {
    this.#touch(functionId, -1);
  }

  /** The function's runtime was stopped for another reason (deleted, deactivated). Calls in flight keep their count. */
  forget(functionId: string): void {
    const a = this.#activity.get(functionId);
    if (a !== undefined && a.inflight === 0) this.#activity.delete(functionId);
  }

  /** Functions watched now, with their activity (tests, bench). */
  get watched(): ReadonlyMap<string, Readonly<Activity>> {
    return this.#activity;
  }

  close(): void {
    this.#closed = true;
    if (this.#timer !== undefined) this.#o.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerAt = undefined;
  }

  #touch(functionId: string, delta: number): void {
    const now = this.#o.clock.now();
    let a = this.#activity.get(functionId);
    if (a === undefined) {
      a = { inflight: 0, lastActiveAt: now };
      this.#activity.set(functionId, a);
    }
    a.inflight = Math.max(0, a.inflight + delta);
    a.lastActiveAt = now;
    // A later deadline needs no new timer: the armed one finds it not yet due and re-arms.
    if (a.inflight === 0) this.#armFor(now + this.#o.idleMs);
  }

  #armFor(at: number): void {
    if (this.#closed || (this.#timerAt !== undefined && this.#timerAt <= at)) return;
    if (this.#timer !== undefined) this.#o.clock.clearTimeout(this.#timer);
    this.#timerAt = at;
    this.#timer = this.#o.clock.setTimeout(() => this.#check(), Math.max(0, at - this.#o.clock.now()));
  }

  #check(): void {
    this.#timer = undefined;
    this.#timerAt = undefined;
    if (this.#closed) return;
    const { stop, nextCheckAt } = decideIdle(this.#activity, this.#o.clock.now(), this.#o.idleMs);
    let retryAt = nextCheckAt;
    for (const functionId of stop) {
      const a = this.#activity.get(functionId)!;
      this.#activity.delete(functionId);
      try {
        this.#o.stop(functionId);
      } catch (err) {
        // Watched again: the stop is tried once more after IDLE_RETRY_MS (the timer must not throw).
        this.#activity.set(functionId, { inflight: a.inflight, lastActiveAt: this.#o.clock.now() + IDLE_RETRY_MS - this.#o.idleMs });
        const again = this.#o.clock.now() + IDLE_RETRY_MS;
        retryAt = retryAt === undefined ? again : Math.min(retryAt, again);
        this.#o.background?.failed('idle_stop', err, { function_id: functionId });
      }
    }
    if (retryAt !== undefined) this.#armFor(retryAt);
  }
}
