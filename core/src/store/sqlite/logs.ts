import type { SQLInputValue } from 'node:sqlite';
import { ValidationError } from '../../errors.ts';
import type { ExecutionLog, LogPage, LogQuery, RetentionPolicy, StatusFilter, Trigger } from '../../model.ts';
import { isError, isSuccess, paginate } from '../../status.ts';
import type { LogStore, StoredLog } from '../../stores.ts';
import type { SqliteDb } from './db.ts';

// Execution logs on SQLite. How listings stay fast at a million records of one
// function (performance target P3):
// - totalCount comes from log_counts (maintained per function and class in the
//   insert/delete transactions), minus what the retention read filter hides,
//   and that hidden part is counted on an index from whichever side is smaller;
// - a page is found on a covering index (fn[, class], executed_ms, seq) and only its `limit` rows are read from the table; pages past the
//   middle are read from the other end of the index, so no OFFSET walks more
//   than half the visible records.

export const DAY_MS = 86_400_000;

/** The stored status class: what the success/error filters select on. */
export const CLASS_OTHER = 0;
export const CLASS_SUCCESS = 1;
export const CLASS_ERROR = 2;

export function statusClass(statusCode: number): number {
  if (isSuccess(statusCode)) return CLASS_SUCCESS;
  if (isError(statusCode)) return CLASS_ERROR;
  return CLASS_OTHER;
}

function filterClass(status: StatusFilter): number | null {
  return status === 'success' ? CLASS_SUCCESS : status === 'error' ? CLASS_ERROR : null;
}

/** Where one page sits: read `take` rows after skipping `skip`, from the newest end or (reversed afterwards) from the oldest. */
export interface PagePlan {
  fromNewest: boolean;
  skip: number;
  take: number;
}

/**
 * Plans reading page `page` of size `limit` out of `visible` records ordered
 * newest first; null when the page is past the end. A page past the middle is
 * read from the oldest end, so the index walk is at most half of `visible`.
 */
export function planPage(visible: number, limit: number, page: number): PagePlan | null {
  const offset = (page - 1) * limit;
  if (offset >= visible) return null;
  const take = Math.min(limit, visible - offset);
  const fromOldest = visible - offset - take;
  return fromOldest < offset ? { fromNewest: false, skip: fromOldest, take } : { fromNewest: true, skip: offset, take };
}

/** The retention read filter, resolved for one listing. */
type Visibility =
  | { kind: 'all' }
  | { kind: 'since'; cutoffMs: number }
  /** Records at or after (ms, seq) in (executed_ms, seq) order are kept. */
  | { kind: 'from'; ms: number; seq: number; kept: number };

interface LogRow {
  seq: number;
  executed_ms: number;
  id: string;
  status_code: number;
  execution_time_ms: number;
  error_message: string | null;
  trigger: string;
}

function toLog(row: LogRow, functionId: string): ExecutionLog {
  return {
    id: row.id,
    function_id: functionId,
    status_code: row.status_code,
    execution_time_ms: row.execution_time_ms,
    error_message: row.error_message,
    executed_at: new Date(row.executed_ms).toISOString(),
    trigger: row.trigger as Trigger,
  };
}

function executedMs(record: StoredLog): number {
  const ms = Date.parse(record.executed_at);
  if (!Number.isFinite(ms)) {
    throw new ValidationError(`log ${record.id}: executed_at ${JSON.stringify(record.executed_at)} is not an ISO 8601 timestamp`);
  }
  return ms;
}

/** Rows deleted per retention transaction. */
export const RETENTION_CHUNK = 5000;

const LOG_COLUMNS = 'seq, executed_ms, id, status_code, execution_time_ms, error_message, trigger';

export class SqliteLogStore implements LogStore {
  private readonly db: SqliteDb;

  constructor(db: SqliteDb) {
    this.db = db;
  }

  insert(records: StoredLog[]): Promise<void> {
    return this.db.guard('log insert', () => {
      if (records.length === 0) return;
      // Validate the whole batch before writing any of it.
      const rows = records.map((r) => ({ r, ms: executedMs(r), cls: statusClass(r.status_code) }));
      const counts = new Map<string, [number, number, number]>();
      for (const { r, cls } of rows) {
        let perClass = counts.get(r.function_id);
        if (perClass === undefined) counts.set(r.function_id, (perClass = [0, 0, 0]));
        perClass[cls]!++;
      }
      const insert = this.db.stmt(
        'INSERT INTO logs (fn, executed_ms, class, id, status_code, execution_time_ms, error_message, trigger) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      );
      this.db.transaction(() => {
        const keys = new Map<string, number>();
        for (const functionId of counts.keys()) keys.set(functionId, this.keyFor(functionId));
        for (const { r, ms, cls } of rows) {
          insert.run(keys.get(r.function_id)!, ms, cls, r.id, r.status_code, Math.round(r.execution_time_ms), r.error_message, r.trigger);
        }
        for (const [functionId, perClass] of counts) {
          perClass.forEach((n, cls) => {
            if (n > 0) this.addCount(keys.get(functionId)!, cls, n);
          });
        }
      });
    });
  }

  list(functionId: string, query: LogQuery, retention: RetentionPolicy, now: number): Promise<LogPage> {
    return this.db.guard('log list', () => {
      const fn = this.existingKey(functionId);
      if (fn === undefined) return { logs: [], pagination: paginate(0, query.limit, query.page) };
      const cls = filterClass(query.status);
      const visibility = this.visibility(fn, retention, now);
      const totalCount = this.visibleCount(fn, cls, visibility);
      const plan = planPage(totalCount, query.limit, query.page);
      const logs = plan === null ? [] : this.readPage(fn, functionId, cls, visibility, plan);
      return { logs, pagination: paginate(totalCount, query.limit, query.page) };
    });
  }

  /**
   * Deletes what the policy hides, oldest first, in transactions of at most
   * RETENTION_CHUNK rows, yielding to the event loop between them: a sweep of
   * a million records never holds the (single, synchronous) connection for
   * more than a few milliseconds at a time. Each chunk's RETURNING classes
   * move the maintained counts by exactly what it removed.
   */
  applyRetention(functionId: string, retention: RetentionPolicy, now: number): Promise<number> {
    return this.db.guardAsync('log retention', async () => {
      const fn = this.existingKey(functionId);
      if (fn === undefined) return 0;
      const visibility = this.visibility(fn, retention, now);
      if (visibility.kind === 'all') return 0;
      const [where, params] = hiddenPredicate(visibility);
      const sql = `DELETE FROM logs WHERE seq IN (
          SELECT seq FROM logs INDEXED BY logs_by_time WHERE fn = ? AND ${where}
          ORDER BY executed_ms, seq LIMIT ?
        ) RETURNING class`;
      let deleted = 0;
      for (;;) {
        const removed = this.db.transaction(() => {
          const classes = this.db.all<{ class: number }>(sql, fn, ...params, RETENTION_CHUNK);
          const perClass = [0, 0, 0];
          for (const row of classes) perClass[row.class]!++;
          perClass.forEach((n, cls) => {
            if (n > 0) this.addCount(fn, cls, -n);
          });
          return classes.length;
        });
        deleted += removed;
        if (removed < RETENTION_CHUNK) return deleted;
        await new Promise((resolve) => setImmediate(resolve));
      }
    });
  }

  deleteFunction(functionId: string): Promise<number> {
    return this.db.guard('log delete', () =>
      this.db.transaction(() => {
        const fn = this.existingKey(functionId);
        if (fn === undefined) return 0;
        const deleted = Number(this.db.run('DELETE FROM logs WHERE fn = ?', fn).changes);
        this.db.run('DELETE FROM log_counts WHERE fn = ?', fn);
        this.db.run('DELETE FROM log_functions WHERE fn = ?', fn);
        return deleted;
      }),
    );
  }

  /** The function's small integer key, which keeps the log indexes a third of the size a UUID would make them. */
  private existingKey(functionId: string): number | undefined {
    return this.db.get<{ fn: number }>('SELECT fn FROM log_functions WHERE function_id = ?', functionId)?.fn;
  }

  private keyFor(functionId: string): number {
    return this.existingKey(functionId) ?? Number(this.db.run('INSERT INTO log_functions (function_id) VALUES (?)', functionId).lastInsertRowid);
  }

  private addCount(fn: number, cls: number, n: number): void {
    this.db.run(
      'INSERT INTO log_counts (fn, class, n) VALUES (?, ?, ?) ON CONFLICT (fn, class) DO UPDATE SET n = n + excluded.n',
      fn, cls, n,
    );
  }

  /** The maintained count of a function's records, of one class or all. */
  private storedCount(fn: number, cls: number | null): number {
    const row = cls === null
      ? this.db.get<{ n: number | null }>('SELECT sum(n) AS n FROM log_counts WHERE fn = ?', fn)
      : this.db.get<{ n: number | null }>('SELECT n FROM log_counts WHERE fn = ? AND class = ?', fn, cls);
    return row?.n ?? 0;
  }

  /** Resolves the policy into a boundary on (executed_ms, seq). */
  private visibility(fn: number, retention: RetentionPolicy, now: number): Visibility {
    if (retention.type === 'time') return { kind: 'since', cutoffMs: now - retention.days * DAY_MS };
    if (retention.type === 'none') return { kind: 'all' };
    const total = this.storedCount(fn, null);
    if (total <= retention.count) return { kind: 'all' };
    // The oldest kept record: the count-th newest, found from whichever end is nearer.
    const hidden = total - retention.count;
    const boundary = hidden < retention.count
      ? this.db.get<{ ms: number; seq: number }>(
        'SELECT executed_ms AS ms, seq FROM logs INDEXED BY logs_by_time WHERE fn = ? ORDER BY executed_ms ASC, seq ASC LIMIT 1 OFFSET ?',
        fn, hidden,
      )
      : this.db.get<{ ms: number; seq: number }>(
        'SELECT executed_ms AS ms, seq FROM logs INDEXED BY logs_by_time WHERE fn = ? ORDER BY executed_ms DESC, seq DESC LIMIT 1 OFFSET ?',
        fn, retention.count - 1,
      );
    if (boundary === undefined) return { kind: 'all' };
    return { kind: 'from', ms: boundary.ms, seq: boundary.seq, kept: retention.count };
  }

  /**
   * How many records of the class are visible: the maintained count minus the
   * hidden ones, or the visible ones counted directly when those are fewer,
   * so an index range of at most half the records is ever counted.
   */
  private visibleCount(fn: number, cls: number | null, visibility: Visibility): number {
    const stored = this.storedCount(fn, cls);
    if (visibility.kind === 'all' || stored === 0) return stored;
    // Under count retention every class together is exactly the window.
    if (visibility.kind === 'from' && cls === null) return visibility.kept;
    const [hiddenWhere, hiddenParams] = hiddenPredicate(visibility);
    const [visibleWhere, visibleParams] = visiblePredicate(visibility);
    const [index, classWhere, classParams] = indexFor(cls);
    const half = Math.floor(stored / 2) + 1;
    const hidden = this.db.get<{ n: number }>(
      `SELECT count(*) AS n FROM (SELECT 1 FROM logs INDEXED BY ${index} WHERE fn = ?${classWhere} AND ${hiddenWhere} LIMIT ?)`,
      fn, ...classParams, ...hiddenParams, half,
    )!.n;
    if (hidden < half) return stored - hidden;
    return this.db.get<{ n: number }>(
      `SELECT count(*) AS n FROM logs INDEXED BY ${index} WHERE fn = ?${classWhere} AND ${visibleWhere}`,
      fn, ...classParams, ...visibleParams,
    )!.n;
  }

  private readPage(fn: number, functionId: string, cls: number | null, visibility: Visibility, plan: PagePlan): ExecutionLog[] {
    const [index, classWhere, classParams] = indexFor(cls);
    const [where, params] = visibility.kind === 'all' ? ['1', []] as [string, SQLInputValue[]] : visiblePredicate(visibility);
    const direction = plan.fromNewest ? 'DESC' : 'ASC';
    // The inner query walks the covering index only; the outer one reads just
    // the page's rows from the table.
    const rows = this.db.all<LogRow>(
      `SELECT ${LOG_COLUMNS} FROM logs WHERE seq IN (
         SELECT seq FROM logs INDEXED BY ${index}
         WHERE fn = ?${classWhere} AND ${where}
         ORDER BY executed_ms ${direction}, seq ${direction} LIMIT ? OFFSET ?
       ) ORDER BY executed_ms DESC, seq DESC`,
      fn, ...classParams, ...params, plan.take, plan.skip,
    );
    return rows.map((row) => toLog(row, functionId));
  }
}

function indexFor(cls: number | null): [string, string, SQLInputValue[]] {
  return cls === null ? ['logs_by_time', '', []] : ['logs_by_class_time', ' AND class = ?', [cls]];
}

function visiblePredicate(visibility: Exclude<Visibility, { kind: 'all' }>): [string, SQLInputValue[]] {
  return visibility.kind === 'since'
    ? ['executed_ms >= ?', [visibility.cutoffMs]]
    : ['(executed_ms, seq) >= (?, ?)', [visibility.ms, visibility.seq]];
}

function hiddenPredicate(visibility: Exclude<Visibility, { kind: 'all' }>): [string, SQLInputValue[]] {
  return visibility.kind === 'since'
    ? ['executed_ms < ?', [visibility.cutoffMs]]
    : ['(executed_ms, seq) < (?, ?)', [visibility.ms, visibility.seq]];
}
