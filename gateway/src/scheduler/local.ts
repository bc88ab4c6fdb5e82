import { nextFireTime, type FunctionRecord, type MissedReason } from '@fnhost/core';
import type { Clock } from '@fnhost/core/clock.ts';
import type { Logger } from '../log.ts';
import type { BackgroundFailures } from '../background.ts';

// Runs each enabled schedule at its next fire time (core/src/cron.ts, 5
// fields, the schedule's time zone, UTC by default), passing the planned
// time on, so the run's ledger entry says how late it started. One timer is
// armed for the earliest fire; the clock is injected so a test can move time
// forward and drive a `* * * * *` schedule in milliseconds.
//
// Concurrency policy `forbid` (as the operator's CronJobs): a fire that finds
// the previous scheduled run of the same function still going does not start;
// it is reported missed (`previous_running`). Manual runs are not counted.
// An inactive function's schedule keeps its entry: whoever fires decides (the
// gateway records such a fire as missed, `function_inactive`).

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
  /** Runs the function once with trigger `schedule` for the run planned at `plannedAt` (the same path as an HTTP call). */
  fire: (functionId: string, plannedAt: number) => Promise<unknown>;
  /** A planned run that did not start. */
  missed: (functionId: string, plannedAt: number, reason: MissedReason) => void;
  logger: Logger;
  /** A tick or a fire that fails is reported here (they run in timers) and the schedule goes on. */
  background?: BackgroundFailures;
}

/** After a tick failed, the next one is tried this much later. */
export const TICK_RETRY_MS = 1_000;

interface Entry {
  cron: string;
  timezone: string;
  next: number;
}

export class LocalScheduler {
  readonly #o: SchedulerOptions;
  readonly #entries = new Map<string, Entry>();
  /** Functions whose scheduled run is going now. */
  readonly #running = new Set<string>();
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
    if (fn === null || schedule == null || !schedule.enabled) {
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
      try {
        this.tick();
      } catch (err) {
        this.#o.background?.failed('scheduler', err);
        this.#retryLater();
      }
    }, delay);
  }

  /** Fires everything that is due now, then re-arms. One entry's failure does not hold up the others. */
  tick(): void {
    const now = this.#o.clock.now();
    for (const [id, e] of this.#entries) {
      if (e.next > now) continue;
      const planned = e.next;
      try {
        e.next = nextFireTime(e.cron, e.timezone, now);
        this.start(id, planned);
      } catch (err) {
        // Not due again at once (that would spin): looked at again after TICK_RETRY_MS.
        e.next = Math.max(e.next, now + TICK_RETRY_MS);
        this.#o.background?.failed('scheduler', err, { function_id: id });
      }
    }
    this.#arm();
  }

  #retryLater(): void {
    if (this.#stopped || this.#timer !== undefined) return;
    this.#armedFor = Infinity;
    this.#timer = this.#o.clock.setTimeout(() => {
      this.#timer = undefined;
      try {
        this.tick();
      } catch (err) {
        this.#o.background?.failed('scheduler', err);
        this.#retryLater();
      }
    }, TICK_RETRY_MS);
  }

  /** Starts the run planned at `plannedAt` now (a tick, or a late start after an outage), unless the previous one is going. */
  start(functionId: string, plannedAt: number): void {
    if (this.#running.has(functionId)) {
      this.#o.missed(functionId, plannedAt, 'previous_running');
      return;
    }
    this.fires++;
    this.#running.add(functionId);
    this.#o.fire(functionId, plannedAt)
      .catch((err: unknown) => {
        this.#o.logger.error('scheduled run failed', { function_id: functionId, error: (err as Error).message });
        this.#o.background?.failed('scheduler', err, { function_id: functionId });
      })
      .finally(() => this.#running.delete(functionId));
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer !== undefined) this.#o.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
