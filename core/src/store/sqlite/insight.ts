import {
  LATENCY_KEEP_MS, LATENCY_SLOT_MS, LATENCY_WINDOWS, firstSlot, latencyIncrements, summarizeRows,
  type ConsoleOutput, type FunctionLatency, type LatencyLevel,
} from '../../insight.ts';
import type { ExecutionLog, RetentionPolicy } from '../../model.ts';
import type { InsightStore, StoredLog } from '../../stores.ts';
import type { SqliteDb } from './db.ts';
import { DAY_MS, LOG_COLUMNS, toLog } from './log-row.ts';

// Execution insight on SQLite (core/src/insight.ts): a record by id, its
// console output (table console_output), latency histogram rows
// (latency_buckets, written by the log insert's transaction).

const LEVEL_CODE: Record<LatencyLevel, number> = { minute: 0, hour: 1 };

/** Adds a batch's executions to the histogram, and drops rows past what any window reads. Inside the insert's transaction. */
export function addLatencySync(db: SqliteDb, records: readonly StoredLog[]): void {
  const upsert = db.stmt(
    `INSERT INTO latency_buckets (function_id, level, slot, bin, n, cold) VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT (function_id, level, slot, bin) DO UPDATE SET n = n + excluded.n, cold = cold + excluded.cold`,
  );
  let newest = 0;
  for (const inc of latencyIncrements(records)) {
    upsert.run(inc.functionId, LEVEL_CODE[inc.level], inc.slot, inc.bin, inc.n, inc.cold);
    if (inc.level === 'minute') newest = Math.max(newest, inc.slot * LATENCY_SLOT_MS.minute);
  }
  if (newest === 0) return;
  // Cheap on the (level, slot) index: only slots that just fell out of the kept span match.
  for (const level of ['minute', 'hour'] as const) {
    db.run('DELETE FROM latency_buckets WHERE level = ? AND slot < ?', LEVEL_CODE[level], Math.floor((newest - LATENCY_KEEP_MS[level]) / LATENCY_SLOT_MS[level]));
  }
}

/** Removes the console output of records just deleted (inside the deleting transaction). */
export function deleteConsoleSync(db: SqliteDb, functionId: string, logIds: readonly string[]): void {
  const remove = db.stmt('DELETE FROM console_output WHERE log_id = ? AND function_id = ?');
  for (const id of logIds) remove.run(id, functionId);
}

export class SqliteInsightStore implements InsightStore {
  private readonly db: SqliteDb;

  constructor(db: SqliteDb) {
    this.db = db;
  }

  getLog(functionId: string, logId: string, retention: RetentionPolicy, now: number): Promise<ExecutionLog | null> {
    return this.db.guard('log read', () => this.db.snapshot(() => {
      const row = this.db.get<Parameters<typeof toLog>[0] & { fn: number }>(
        `SELECT l.fn AS fn, ${LOG_COLUMNS.split(', ').map((c) => 'l.' + c).join(', ')} FROM logs l INDEXED BY logs_by_id
         JOIN log_functions f ON f.fn = l.fn WHERE l.id = ? AND f.function_id = ?`,
        logId, functionId,
      );
      if (row === undefined) return null;
      if (retention.type === 'time' && row.executed_ms < now - retention.days * DAY_MS) return null;
      if (retention.type === 'count') {
        // Shown while fewer than `count` records come after it in (executed_ms, seq) order.
        const newer = this.db.get<{ n: number }>(
          'SELECT count(*) AS n FROM (SELECT 1 FROM logs INDEXED BY logs_by_time WHERE fn = ? AND (executed_ms, seq) > (?, ?) LIMIT ?)',
          row.fn, row.executed_ms, row.seq, retention.count,
        )!.n;
        if (newer >= retention.count) return null;
      }
      return toLog(row, functionId);
    }));
  }

  putConsole(functionId: string, outputs: ReadonlyArray<{ logId: string; output: ConsoleOutput }>, _expiresAt: number | null, now: number): Promise<boolean[]> {
    // No expiry column: the row goes with its record (reads go through the record; retention deletes both).
    return this.db.guard('console write', () => this.db.transaction(() => {
      const exists = this.db.stmt('SELECT 1 AS one FROM logs l INDEXED BY logs_by_id JOIN log_functions f ON f.fn = l.fn WHERE l.id = ? AND f.function_id = ?');
      const insert = this.db.stmt('INSERT INTO console_output (log_id, function_id, stored_ms, output) VALUES (?, ?, ?, ?) ON CONFLICT (log_id, function_id) DO NOTHING');
      return outputs.map(({ logId, output }) => {
        if (exists.get(logId, functionId) === undefined) return false;
        insert.run(logId, functionId, now, JSON.stringify(output));
        return true;
      });
    }));
  }

  getConsole(functionId: string, logId: string): Promise<ConsoleOutput | null> {
    return this.db.guard('console read', () => {
      const row = this.db.get<{ output: string }>('SELECT output FROM console_output WHERE log_id = ? AND function_id = ?', logId, functionId);
      return row === undefined ? null : (JSON.parse(row.output) as ConsoleOutput);
    });
  }

  latency(functionId: string, now: number): Promise<FunctionLatency> {
    return this.db.guard('latency read', () => {
      const result: Partial<FunctionLatency> = {};
      for (const w of LATENCY_WINDOWS) {
        const rows = this.db.all<{ bin: number; n: number; cold: number }>(
          'SELECT bin, sum(n) AS n, sum(cold) AS cold FROM latency_buckets WHERE function_id = ? AND level = ? AND slot >= ? GROUP BY bin',
          functionId, LEVEL_CODE[w.level], firstSlot(now, w.ms, w.level),
        );
        result[w.name] = summarizeRows(rows);
      }
      return result as FunctionLatency;
    });
  }
}
