import type { MissedReason, ScheduleRun } from '../../schedule-ledger.ts';
import type { ScheduleRunStore, StoredScheduleRun } from '../../stores.ts';
import type { SqliteDb } from './db.ts';

// The ledger of scheduled runs on SQLite (table schedule_runs). lag_ms is
// derived (started - planned), so it is not stored.

interface RunRow {
  function_id: string;
  planned_ms: number;
  manual: number;
  outcome: string;
  missed_reason: string | null;
  log_id: string | null;
  status_code: number | null;
  execution_time_ms: number | null;
  started_ms: number | null;
}

function toRun(row: RunRow): ScheduleRun {
  return {
    function_id: row.function_id,
    planned_at: new Date(row.planned_ms).toISOString(),
    manual: row.manual === 1,
    outcome: row.outcome as ScheduleRun['outcome'],
    missed_reason: row.missed_reason as MissedReason | null,
    log_id: row.log_id,
    status_code: row.status_code,
    execution_time_ms: row.execution_time_ms,
    started_at: row.started_ms === null ? null : new Date(row.started_ms).toISOString(),
    lag_ms: row.started_ms === null ? null : row.started_ms - row.planned_ms,
  };
}

export class SqliteScheduleRunStore implements ScheduleRunStore {
  readonly #db: SqliteDb;

  constructor(db: SqliteDb) {
    this.#db = db;
  }

  add(run: StoredScheduleRun, keepAtMost: number): Promise<void> {
    return this.#db.guard('schedule run add', () => {
      this.#db.transaction(() => {
        this.#db.run(
          `INSERT INTO schedule_runs (function_id, planned_ms, manual, outcome, missed_reason, log_id, status_code, execution_time_ms, started_ms, expires_ms)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
          run.function_id, Date.parse(run.planned_at), run.manual ? 1 : 0, run.outcome, run.missed_reason, run.log_id, run.status_code,
          run.execution_time_ms, run.started_at === null ? null : Date.parse(run.started_at), run.expires_at,
        );
        // The bound: the newest keepAtMost stay (the index walks them in order).
        this.#db.run(
          `DELETE FROM schedule_runs WHERE function_id = ? AND seq NOT IN (
             SELECT seq FROM schedule_runs WHERE function_id = ? ORDER BY planned_ms DESC, seq DESC LIMIT ?)`,
          run.function_id, run.function_id, keepAtMost,
        );
      });
    });
  }

  list(functionId: string, limit: number, now: number): Promise<ScheduleRun[]> {
    return this.#db.guard('schedule run list', () =>
      this.#db.all<RunRow>(
        `SELECT function_id, planned_ms, manual, outcome, missed_reason, log_id, status_code, execution_time_ms, started_ms
         FROM schedule_runs WHERE function_id = ? AND (expires_ms IS NULL OR expires_ms > ?)
         ORDER BY planned_ms DESC, seq DESC LIMIT ?`,
        functionId, now, limit,
      ).map(toRun));
  }

  lastPlanned(functionId: string): Promise<number | null> {
    return this.#db.guard('schedule run last', () =>
      this.#db.get<{ planned: number | null }>('SELECT max(planned_ms) AS planned FROM schedule_runs WHERE function_id = ? AND manual = 0', functionId)?.planned ?? null);
  }

  sweep(now: number): Promise<number> {
    return this.#db.guard('schedule run sweep', () =>
      Number(this.#db.run('DELETE FROM schedule_runs WHERE expires_ms IS NOT NULL AND expires_ms <= ?', now).changes));
  }

  deleteFunction(functionId: string): Promise<number> {
    return this.#db.guard('schedule run delete', () => Number(this.#db.run('DELETE FROM schedule_runs WHERE function_id = ?', functionId).changes));
  }
}
