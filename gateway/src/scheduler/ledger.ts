import {
  SCHEDULE_LEDGER_KEEP, isoTimestamp, ledgerExpiry, planCatchUp,
  type ExecutionLog, type FunctionRecord, type MissedReason, type ScheduleRun, type ScheduleRunStore,
} from '@fnhost/core';
import type { Logger } from '../log.ts';

// The gateway's side of the ledger of scheduled runs (core/src/schedule-ledger.ts):
// it writes one entry per planned run (the record it produced, or missed and
// why) and per manual run, and at start works out the runs missed while no
// gateway was running. Entries are few (one per planned run), so they are
// written straight to the store, off the request path; a failed write is
// logged, never fails the run. close() waits for the writes in flight.

export interface ScheduleLedgerOptions {
  store: ScheduleRunStore;
  logger: Logger;
  /** How late a run missed while the platform was down may still start (FNHOST_SCHEDULE_STARTING_DEADLINE_SECONDS). */
  startingDeadlineMs: number;
  /** Entries kept per function (default SCHEDULE_LEDGER_KEEP). */
  keep?: number;
}

export class ScheduleLedger {
  readonly #o: ScheduleLedgerOptions;
  readonly #writes = new Set<Promise<void>>();

  constructor(options: ScheduleLedgerOptions) {
    this.#o = options;
  }

  get startingDeadlineMs(): number {
    return this.#o.startingDeadlineMs;
  }

  /** A schedule run ended with this record; plannedAt null: fired by hand. */
  ran(fn: FunctionRecord, log: ExecutionLog, plannedAt: number | null): void {
    const started = Date.parse(log.executed_at);
    const planned = plannedAt ?? started;
    this.#add(fn, {
      function_id: fn.function_id,
      planned_at: isoTimestamp(planned),
      manual: plannedAt === null,
      outcome: 'ran',
      missed_reason: null,
      log_id: log.id,
      status_code: log.status_code,
      execution_time_ms: log.execution_time_ms,
      started_at: log.executed_at,
      lag_ms: started - planned,
    });
  }

  missed(fn: FunctionRecord, plannedAt: number, reason: MissedReason): void {
    this.#o.logger.warn('scheduled run missed', { function_id: fn.function_id, planned_at: isoTimestamp(plannedAt), reason });
    this.#add(fn, {
      function_id: fn.function_id,
      planned_at: isoTimestamp(plannedAt),
      manual: false,
      outcome: 'missed',
      missed_reason: reason,
      log_id: null,
      status_code: null,
      execution_time_ms: null,
      started_at: null,
      lag_ms: null,
    });
  }

  /**
   * At start (`now`): records the runs of an enabled schedule planned while
   * no gateway ran, and returns the one to run now, late, if any. Runs are
   * accounted for since the newest ledger entry the schedule planned, or
   * since the function last changed (a schedule set or changed then plans
   * nothing before).
   */
  async catchUp(fn: FunctionRecord, now: number): Promise<number | null> {
    const schedule = fn.schedule;
    if (schedule === null || !schedule.enabled) return null;
    const last = await this.#o.store.lastPlanned(fn.function_id);
    const since = Math.max(last ?? -Infinity, Date.parse(fn.updated_at));
    const plan = planCatchUp({ cron: schedule.cron, timezone: schedule.timezone, since, now, startingDeadlineMs: this.#o.startingDeadlineMs, active: fn.active });
    // Oldest first, so the ledger reads in order of planning.
    for (const m of [...plan.missed].reverse()) this.missed(fn, m.plannedAt, m.reason);
    return plan.runNow;
  }

  list(functionId: string, limit: number, now: number): Promise<ScheduleRun[]> {
    return this.#o.store.list(functionId, limit, now);
  }

  /** Resolves once every entry written so far is stored (reads after it see them). */
  async flush(): Promise<void> {
    while (this.#writes.size > 0) await Promise.allSettled([...this.#writes]);
  }

  #add(fn: FunctionRecord, run: ScheduleRun): void {
    const write = this.#o.store
      .add({ ...run, expires_at: ledgerExpiry(fn.retention, Date.parse(run.planned_at)) }, this.#o.keep ?? SCHEDULE_LEDGER_KEEP)
      .catch((err: unknown) => this.#o.logger.error('writing a ledger entry failed', { function_id: fn.function_id, planned_at: run.planned_at, error: (err as Error).message }))
      .finally(() => this.#writes.delete(write));
    this.#writes.add(write);
  }
}
