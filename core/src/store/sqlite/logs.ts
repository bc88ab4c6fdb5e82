import type { SQLInputValue } from 'node:sqlite';
import { ValidationError } from '../../errors.ts';
import type { ExecutionLog, LogPage, LogQuery, RetentionPolicy, StatusFilter, Trigger } from '../../model.ts';
import { isError, isSuccess, paginate } from '../../status.ts';
import type { InsertResult, LogStore, RecentCounts, StoredLog, WriterProgress } from '../../stores.ts';
import type { SqliteDb } from './db.ts';
import { insertExchangeSync } from './exchanges.ts';
import { recordProgressSync } from './instances.ts';
import { addExecutionsSync } from './records.ts';
import { addLatencySync, deleteConsoleSync } from './insight.ts';
import { DAY_MS, LOG_COLUMNS, toLog, type LogRow } from './log-row.ts';

// Execution logs on SQLite. How listings stay fast at a million records of one
// function (performance target P3), with no COUNT over the function's records
// and no OFFSET over more than one minute of them:
// - log_counts holds each function's count per status class, and log_buckets
//   its count per class per day, hour, minute and second of executed_at (plus
//   all-classes rows), all maintained in the transactions that insert and
//   delete logs;
// - totalCount is the maintained count minus what the retention read filter
//   hides; the hidden part is the records before a position, counted as whole
//   days, hours, minutes and seconds before it (sums over bucket rows) plus a
//   range count within its second;
// - a page starts at the k-th record from the nearer end (planPage): walk the
//   day rows to the day holding it, then its hours, minutes and seconds, then
//   OFFSET within that second on the covering index (fn[, class],
//   executed_ms, seq) from its nearer end, and read `limit` rows on from there.

/**
 * Width of a log_buckets row at each level: a day, an hour, a minute, a second
 * of executed_at. Each width divides the one before, so a bucket's children
 * are a contiguous range of the next level.
 */
export const BUCKET_MS = [86_400_000, 3_600_000, 60_000, 1_000] as const;
export type BucketLevel = 0 | 1 | 2 | 3;
const LEVELS: readonly BucketLevel[] = [0, 1, 2, 3];
const FINEST: BucketLevel = 3;

/** How many buckets of the next level one bucket of `level` holds. */
function childrenPer(level: BucketLevel): number {
  return BUCKET_MS[level] / BUCKET_MS[level + 1 as BucketLevel];
}
/** The log_buckets class of the rows counting every class together. */
export const BUCKET_ALL = 3;

export function bucketOf(executedMs: number, level: BucketLevel): number {
  return Math.floor(executedMs / BUCKET_MS[level]);
}

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
  /** Records at or after (ms, seq) in (executed_ms, seq) order are kept: the `kept` newest. */
  | { kind: 'from'; ms: number; seq: number; kept: number };

/** A record's place in the (executed_ms, seq) order. */
interface Position {
  ms: number;
  seq: number;
}

let lastExecutedAt: string | undefined;
let lastExecutedMs = Number.NaN;

/** executed_at in ms; parsed once per distinct value in a row (a batch's records of one millisecond share it). */
function executedMs(record: StoredLog): number {
  if (record.executed_at !== lastExecutedAt) {
    lastExecutedAt = record.executed_at;
    lastExecutedMs = Date.parse(lastExecutedAt);
  }
  const ms = lastExecutedMs;
  if (!Number.isFinite(ms)) {
    throw new ValidationError(`log ${record.id}: executed_at ${JSON.stringify(record.executed_at)} is not an ISO 8601 timestamp`);
  }
  return ms;
}

const MIN_BUCKET = Number.MIN_SAFE_INTEGER;
const MAX_BUCKET = Number.MAX_SAFE_INTEGER;

/** Rows deleted per retention transaction. */
export const RETENTION_CHUNK = 5000;

/**
 * Count changes of one transaction for one function: per class, and per (bucket class, level, bucket).
 * Records are added per (class, finest bucket) and spread over the coarser levels once per
 * distinct second in `perBucket` (every coarser bucket is a whole number of seconds): a batch
 * of the log writer holds hundreds of records of a few seconds, and this runs for each of them.
 */
class CountDelta {
  readonly perClass = [0, 0, 0];
  /** Per class: finest bucket → n (a number key per record, no string built). */
  readonly #perSecond = [new Map<number, number>(), new Map<number, number>(), new Map<number, number>()];

  add(cls: number, executed: number, n: number): void {
    this.perClass[cls]! += n;
    const second = bucketOf(executed, FINEST);
    const mine = this.#perSecond[cls]!;
    mine.set(second, (mine.get(second) ?? 0) + n);
  }

  /** `class:level:bucket` → n, for every level and for the class and BUCKET_ALL. */
  get perBucket(): Map<string, number> {
    const out = new Map<string, number>();
    for (const [cls, seconds] of this.#perSecond.entries()) {
      for (const [second, n] of seconds) {
        const ms = second * BUCKET_MS[FINEST];
        for (const level of LEVELS) {
          const bucket = bucketOf(ms, level);
          for (const c of [cls, BUCKET_ALL]) {
            const k = `${c}:${level}:${bucket}`;
            out.set(k, (out.get(k) ?? 0) + n);
          }
        }
      }
    }
    return out;
  }
}

export class SqliteLogStore implements LogStore {
  private readonly db: SqliteDb;

  constructor(db: SqliteDb) {
    this.db = db;
  }

  recentCounts(functionId: string, since: number): Promise<RecentCounts> {
    return this.db.guard('log recent counts', () => {
      const fn = this.existingKey(functionId);
      if (fn === undefined) return { total: 0, errors: 0 };
      const row = this.db.get<{ total: number; errors: number | null }>(
        'SELECT COUNT(*) AS total, SUM(class = ?) AS errors FROM logs WHERE fn = ? AND executed_ms >= ?',
        CLASS_ERROR, fn, since,
      );
      return { total: Number(row?.total ?? 0), errors: Number(row?.errors ?? 0) };
    });
  }

  insert(records: StoredLog[], progress?: WriterProgress): Promise<InsertResult> {
    return this.db.guard('log insert', (): InsertResult => {
      if (records.length === 0) return progress === undefined ? undefined : { instanceLive: recordProgressSync(this.db, progress) };
      // Validate the whole batch before writing any of it.
      const rows = records.map((r) => ({ r, ms: executedMs(r), cls: statusClass(r.status_code) }));
      const deltas = new Map<string, CountDelta>();
      for (const { r, ms, cls } of rows) {
        let delta = deltas.get(r.function_id);
        if (delta === undefined) deltas.set(r.function_id, (delta = new CountDelta()));
        delta.add(cls, ms, 1);
      }
      const insert = this.db.stmt(
        'INSERT INTO logs (fn, executed_ms, class, id, status_code, execution_time_ms, error_message, error_stack, trigger, cold_start, wait_ms, manual, async_id, attempt) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
      );
      return this.db.transaction((): InsertResult => {
        const keys = new Map<string, number>();
        for (const functionId of deltas.keys()) keys.set(functionId, this.keyFor(functionId));
        for (const { r, ms, cls } of rows) {
          const { lastInsertRowid } = insert.run(keys.get(r.function_id)!, ms, cls, r.id, r.status_code, Math.round(r.execution_time_ms), r.error_message, r.error_stack ?? null, r.trigger,
            r.cold_start === undefined ? null : r.cold_start ? 1 : 0, r.wait_ms === undefined ? null : Math.round(r.wait_ms), r.manual === true ? 1 : null,
            r.async_id ?? null, r.attempt ?? null);
          if (r.exchange !== undefined) insertExchangeSync(this.db, lastInsertRowid, r.exchange);
        }
        for (const [functionId, delta] of deltas) this.applyDelta(keys.get(functionId)!, delta);
        addLatencySync(this.db, records);
        if (progress === undefined) return undefined;
        // A writer's batch: its executions are counted with it, and its progress
        // commits with it, so what a killed gateway wrote is exactly known and
        // every stored record is in its function's counts and counter.
        const executions = new Map<string, number>();
        for (const { r } of rows) executions.set(r.function_id, (executions.get(r.function_id) ?? 0) + 1);
        addExecutionsSync(this.db, executions);
        return { instanceLive: recordProgressSync(this.db, progress) };
      });
    });
  }

  list(functionId: string, query: LogQuery, retention: RetentionPolicy, now: number): Promise<LogPage> {
    return this.db.guard('log list', () => this.db.snapshot(() => {
      const fn = this.existingKey(functionId);
      if (fn === undefined) return { logs: [], pagination: paginate(0, query.limit, query.page) };
      const cls = filterClass(query.status);
      const stored = this.storedCount(fn, cls);
      const hidden = stored === 0 ? 0 : this.hiddenCount(fn, cls, this.visibility(fn, retention, now));
      const totalCount = stored - hidden;
      const plan = planPage(totalCount, query.limit, query.page);
      const logs = plan === null ? [] : this.readPage(fn, functionId, cls, hidden, plan);
      return { logs, pagination: paginate(totalCount, query.limit, query.page) };
    }));
  }

  /**
   * Deletes what the policy hides, oldest first, in transactions of at most
   * RETENTION_CHUNK rows, yielding to the event loop between them: a sweep of
   * a million records never holds the (single, synchronous) connection for
   * more than a few milliseconds at a time. Each chunk's RETURNING rows move
   * the maintained counts by exactly what it removed.
   */
  applyRetention(functionId: string, retention: RetentionPolicy, now: number): Promise<number> {
    return this.db.guardAsync('log retention', async () => {
      const fn = this.existingKey(functionId);
      if (fn === undefined) return 0;
      const visibility = this.visibility(fn, retention, now);
      if (visibility.kind === 'all') return 0;
      const [where, params] = visibility.kind === 'since'
        ? ['executed_ms < ?', [visibility.cutoffMs]]
        : ['(executed_ms, seq) < (?, ?)', [visibility.ms, visibility.seq]];
      const sql = `DELETE FROM logs WHERE seq IN (
          SELECT seq FROM logs INDEXED BY logs_by_time WHERE fn = ? AND ${where}
          ORDER BY executed_ms, seq LIMIT ?
        ) RETURNING class, executed_ms, id`;
      let deleted = 0;
      for (;;) {
        const removed = this.db.transaction(() => {
          const gone = this.db.all<{ class: number; executed_ms: number; id: string }>(sql, fn, ...params, RETENTION_CHUNK);
          const delta = new CountDelta();
          for (const row of gone) delta.add(row.class, row.executed_ms, -1);
          deleteConsoleSync(this.db, functionId, gone.map((row) => row.id));
          this.applyDelta(fn, delta);
          return gone.length;
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
        this.db.run('DELETE FROM latency_buckets WHERE function_id = ?', functionId);
        const fn = this.existingKey(functionId);
        if (fn === undefined) return 0;
        // Output exists only beside a record: its records' ids find it (on the (log_id, function_id) key).
        this.db.run('DELETE FROM console_output WHERE function_id = ? AND log_id IN (SELECT id FROM logs WHERE fn = ?)', functionId, fn);
        const deleted = Number(this.db.run('DELETE FROM logs WHERE fn = ?', fn).changes);
        this.db.run('DELETE FROM log_counts WHERE fn = ?', fn);
        this.db.run('DELETE FROM log_buckets WHERE fn = ?', fn);
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

  private applyDelta(fn: number, delta: CountDelta): void {
    delta.perClass.forEach((n, cls) => {
      if (n !== 0) {
        this.db.run('INSERT INTO log_counts (fn, class, n) VALUES (?, ?, ?) ON CONFLICT (fn, class) DO UPDATE SET n = n + excluded.n', fn, cls, n);
      }
    });
    for (const [key, n] of delta.perBucket) {
      if (n === 0) continue;
      const [cls, level, bucket] = key.split(':').map(Number) as [number, number, number];
      this.db.run(
        'INSERT INTO log_buckets (fn, class, level, bucket, n) VALUES (?, ?, ?, ?, ?) ON CONFLICT (fn, class, level, bucket) DO UPDATE SET n = n + excluded.n',
        fn, cls, level, bucket, n,
      );
      // Emptied buckets go, so walks only meet minutes and seconds that hold records.
      if (n < 0) this.db.run('DELETE FROM log_buckets WHERE fn = ? AND class = ? AND level = ? AND bucket = ? AND n <= 0', fn, cls, level, bucket);
    }
  }

  /** The maintained count of a function's records, of one class or all. */
  private storedCount(fn: number, cls: number | null): number {
    const row = cls === null
      ? this.db.get<{ n: number | null }>('SELECT sum(n) AS n FROM log_counts WHERE fn = ?', fn)
      : this.db.get<{ n: number | null }>('SELECT n FROM log_counts WHERE fn = ? AND class = ?', fn, cls);
    return row?.n ?? 0;
  }

  /** Resolves the policy into a position in (executed_ms, seq) order before which records are hidden. */
  private visibility(fn: number, retention: RetentionPolicy, now: number): Visibility {
    if (retention.type === 'time') return { kind: 'since', cutoffMs: now - retention.days * DAY_MS };
    if (retention.type === 'none') return { kind: 'all' };
    const total = this.storedCount(fn, null);
    if (total <= retention.count) return { kind: 'all' };
    // The oldest kept record: the count-th newest, found from whichever end is nearer.
    const hidden = total - retention.count;
    const boundary = hidden < retention.count ? this.nth(fn, null, false, hidden) : this.nth(fn, null, true, retention.count - 1);
    if (boundary === undefined) return { kind: 'all' };
    return { kind: 'from', ms: boundary.ms, seq: boundary.seq, kept: retention.count };
  }

  /** How many records of the class the read filter hides (they are always the oldest). */
  private hiddenCount(fn: number, cls: number | null, visibility: Visibility): number {
    if (visibility.kind === 'all') return 0;
    if (visibility.kind === 'from' && cls === null) return this.storedCount(fn, null) - visibility.kept;
    return visibility.kind === 'since'
      ? this.countBefore(fn, cls, { ms: visibility.cutoffMs, seq: 0 })
      : this.countBefore(fn, cls, visibility);
  }

  /**
   * Records of the class strictly before `at` in (executed_ms, seq) order:
   * the whole days before its day, whole hours before its hour within that
   * day, and so on down to seconds (sums over at most a few dozen bucket rows
   * each, the days aside), then a range count on the index within its second.
   */
  private countBefore(fn: number, cls: number | null, at: Position): number {
    const bucketClass = cls ?? BUCKET_ALL;
    let total = 0;
    let from = MIN_BUCKET;
    for (const level of LEVELS) {
      const bucket = bucketOf(at.ms, level);
      total += this.db.get<{ n: number | null }>(
        'SELECT sum(n) AS n FROM log_buckets WHERE fn = ? AND class = ? AND level = ? AND bucket >= ? AND bucket < ?',
        fn, bucketClass, level, from, bucket,
      )!.n ?? 0;
      if (level !== FINEST) from = bucket * childrenPer(level);
    }
    const [index, classWhere, classParams] = indexFor(cls);
    total += this.db.get<{ n: number }>(
      `SELECT count(*) AS n FROM logs INDEXED BY ${index} WHERE fn = ?${classWhere} AND executed_ms >= ? AND (executed_ms, seq) < (?, ?)`,
      fn, ...classParams, bucketOf(at.ms, FINEST) * BUCKET_MS[FINEST], at.ms, at.seq,
    )!.n;
    return total;
  }

  /**
   * The position of the k-th (0-based) record of the class counted from the
   * newest or the oldest end: walk the days from that end to the one holding
   * it, then that day's hours, the hour's minutes, the minute's seconds, then
   * skip within that second on the index from its nearer end (a burst can put
   * many records in one second).
   */
  private nth(fn: number, cls: number | null, fromNewest: boolean, k: number): Position | undefined {
    let from = MIN_BUCKET;
    let to = MAX_BUCKET;
    let found: { bucket: number; n: number; within: number } | undefined;
    let within = k;
    for (const level of LEVELS) {
      found = this.walkBuckets(fn, cls, level, fromNewest, within, from, to);
      if (found === undefined) return undefined;
      within = found.within;
      if (level !== FINEST) {
        from = found.bucket * childrenPer(level);
        to = from + childrenPer(level) - 1;
      }
    }
    const second = found!;
    const flip = second.within > (second.n - 1) / 2;
    const direction = fromNewest !== flip ? 'DESC' : 'ASC';
    const [index, classWhere, classParams] = indexFor(cls);
    return this.db.get<Position>(
      `SELECT executed_ms AS ms, seq FROM logs INDEXED BY ${index}
       WHERE fn = ?${classWhere} AND executed_ms >= ? AND executed_ms < ?
       ORDER BY executed_ms ${direction}, seq ${direction} LIMIT 1 OFFSET ?`,
      fn, ...classParams, second.bucket * BUCKET_MS[FINEST], (second.bucket + 1) * BUCKET_MS[FINEST], flip ? second.n - 1 - second.within : second.within,
    );
  }

  /** Walks one level's buckets in [from, to] from one end to the one holding the k-th record; `within` is k's place in it. */
  private walkBuckets(fn: number, cls: number | null, level: BucketLevel, fromNewest: boolean, k: number, from: number, to: number):
    { bucket: number; n: number; within: number } | undefined {
    const direction = fromNewest ? 'DESC' : 'ASC';
    const buckets = this.db.stmt(`SELECT bucket, n FROM log_buckets WHERE fn = ? AND class = ? AND level = ? AND bucket BETWEEN ? AND ? ORDER BY bucket ${direction}`);
    let before = 0;
    for (const row of buckets.iterate(fn, cls ?? BUCKET_ALL, level, from, to) as Iterable<{ bucket: number; n: number }>) {
      if (before + row.n > k) return { bucket: row.bucket, n: row.n, within: k - before };
      before += row.n;
    }
    return undefined;
  }

  private readPage(fn: number, functionId: string, cls: number | null, hidden: number, plan: PagePlan): ExecutionLog[] {
    // Hidden records are the oldest, so from the oldest end the page starts past them.
    const anchor = plan.fromNewest ? this.nth(fn, cls, true, plan.skip) : this.nth(fn, cls, false, hidden + plan.skip);
    if (anchor === undefined) return [];
    const [index, classWhere, classParams] = indexFor(cls);
    const [compare, direction] = plan.fromNewest ? ['<=', 'DESC'] : ['>=', 'ASC'];
    // The inner query walks the covering index only; the outer one reads just
    // the page's rows from the table.
    const rows = this.db.all<LogRow>(
      `SELECT ${LOG_COLUMNS} FROM logs WHERE seq IN (
         SELECT seq FROM logs INDEXED BY ${index}
         WHERE fn = ?${classWhere} AND (executed_ms, seq) ${compare} (?, ?)
         ORDER BY executed_ms ${direction}, seq ${direction} LIMIT ?
       ) ORDER BY executed_ms DESC, seq DESC`,
      fn, ...classParams, anchor.ms, anchor.seq, plan.take,
    );
    return rows.map((row) => toLog(row, functionId));
  }
}

function indexFor(cls: number | null): [string, string, SQLInputValue[]] {
  return cls === null ? ['logs_by_time', '', []] : ['logs_by_class_time', ' AND class = ?', [cls]];
}
