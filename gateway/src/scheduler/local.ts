import { nextFireTime, type FunctionRecord } from '@fnhost/core';
import type { Clock } from '@fnhost/core/clock.ts';
import type { Logger } from '../log.ts';

// Runs each enabled schedule of an active function at its next fire time
// (core/src/cron.ts, 5 fields, the schedule's time zone, UTC by default).
// One timer is armed for the earliest fire; the clock is injected so a test
// can move time forward and drive a `* * * * *` schedule in milliseconds.
// A fire that finds the previous run of the same function still going is
// not skipped: runs may overlap, as with an HTTP call.

// The clock contract is core's (core/src/clock.ts), shared with the operator;
// this systemClock's timers are not unref'd.

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

/** Long timers are re-armed at most this far ahead, so a changed wall clock is noticed. */
const MAX_SLEEP_MS = 60_000;

export interface SchedulerOptions {
  clock: Clock;
  /** Runs the function once with trigger `schedule` (the same path as an HTTP call). */
  fire: (functionId: string) => Promise<unknown>;
  logger: Logger;
}

interface Entry {
  cron: string;
  timezone: string;
  next: number;
}

export class LocalScheduler {
  readonly #o: SchedulerOptions;
  readonly #entries = new Map<string, Entry>();
  #timer: unknown = undefined;
  #armedFor = Infinity;
  #stopped = false;
  fires = 0;

  constructor(options: SchedulerOptions) {
    this.#o = options;
  }

  nextRun(functionId: string): number | undefined {
    return this.#entries.get(functionId)?.next;
  }

  sync(fn: FunctionRecord | null, functionId: string): void {
    const schedule = fn?.schedule;
    if (fn === null || !fn.active || schedule == null || !schedule.enabled) {
      this.#entries.delete(functionId);
      this.#arm();
      return;
    }
    const existing = this.#entries.get(functionId);
    if (existing !== undefined && existing.cron === schedule.cron && existing.timezone === schedule.timezone) return;
    this.#entries.set(functionId, { cron: schedule.cron, timezone: schedule.timezone, next: nextFireTime(schedule.cron, schedule.timezone, this.#o.clock.now()) });
    this.#arm();
  }

  #arm(): void {
    if (this.#stopped) return;
    let earliest = Infinity;
    for (const e of this.#entries.values()) if (e.next < earliest) earliest = e.next;
    if (earliest === this.#armedFor && this.#timer !== undefined) return;
    if (this.#timer !== undefined) this.#o.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#armedFor = earliest;
    if (earliest === Infinity) return;
    const delay = Math.min(MAX_SLEEP_MS, Math.max(0, earliest - this.#o.clock.now()));
    this.#timer = this.#o.clock.setTimeout(() => {
      this.#timer = undefined;
      this.#armedFor = Infinity;
      this.tick();
    }, delay);
  }

  /** Fires everything that is due now, then re-arms. */
  tick(): void {
    const now = this.#o.clock.now();
    for (const [id, e] of this.#entries) {
      if (e.next > now) continue;
      e.next = nextFireTime(e.cron, e.timezone, now);
      this.fires++;
      this.#o.fire(id).catch((err: unknown) => this.#o.logger.error('scheduled run failed', { function_id: id, error: (err as Error).message }));
    }
    this.#arm();
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer !== undefined) this.#o.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
