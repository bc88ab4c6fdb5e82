import { MongoBulkWriteError, MongoServerError, type AnyBulkWriteOperation, type Collection, type Db, type Filter } from 'mongodb';
import type { ExecutionLog, LogPage, LogQuery, RetentionPolicy, StatusFilter } from '../../model.ts';
import { isError, isSuccess, paginate } from '../../status.ts';
import type { InsertResult, LogStore, RecentCounts, StoredLog, WriterProgress } from '../../stores.ts';
import type { MongoContext } from './context.ts';
import { allDuplicates, LogCounts, writeErrorIndexes, type BucketDoc, type PendingDoc, type StatusClass, type TotalsDoc } from './counts.ts';
import { exchangeCollection, writeExchanges, type ExchangeDoc } from './exchanges.ts';
import { recordProgress, type InstanceDoc } from './instances.ts';
import { addLatency, consoleCollection, consoleDocId, MongoInsightStore, setConsoleExpiry } from './insight.ts';
import { toLog, type LogDoc } from './log-doc.ts';

// Execution logs in one collection for every function.
//
// Order: newest first by executed_at, ties newest-inserted first. Each batch
// takes a range of a global sequence ($inc on one document), so `seq` grows
// with insertion order across batches and across gateways.
//
// Counts (P3: totalCount at 1,000,000 records without a scan): per-function
// totals by class (`log_totals`) and per-function counts by class per day,
// hour and minute (`log_buckets`), all maintained with $inc by insert and by
// our own deletes. Counting from a minute on sums at most 59 minute buckets,
// 23 hour buckets and one bucket per day, however dense the history.
// - no retention: the totals document;
// - count retention: min(count, total) for all statuses; for a class, the
//   buckets above the cutoff record's minute plus an index count inside it;
// - time retention: the buckets after the cutoff's minute plus an index count
//   inside it. The TTL monitor deletes records (and, a span later, their
//   buckets) that are already outside the read filter, so its deletions,
//   which no counter sees, never change a visible count.
//
// Retention: per-document `expireAt` (TTL index, expireAfterSeconds 0) for
// time retention, so functions with different policies share one collection;
// the read filter hides what a policy no longer keeps before any monitor
// runs; applyRetention rewrites expireAt and deletes in chunks.

const MINUTE = 60_000;
const HOUR = 3_600_000;
const DAY = 86_400_000;
/** Pages starting this far from both ends are found through the buckets instead of skipping. */
export const DEFAULT_SEEK_FROM = 1_000;
/** Records deleted per round trip in applyRetention. */
const DELETE_CHUNK = 5_000;

export type { PendingDoc } from './counts.ts';

interface SequenceDoc {
  _id: string;
  v: number;
}

export function statusClass(statusCode: number): StatusClass {
  return isSuccess(statusCode) ? 's' : isError(statusCode) ? 'e' : 'o';
}

export function minuteOf(ms: number): number {
  return Math.floor(ms / MINUTE) * MINUTE;
}

function countField(status: StatusFilter): 'all' | 's' | 'e' {
  return status === 'success' ? 's' : status === 'error' ? 'e' : 'all';
}

/**
 * The buckets that together hold exactly the records at or after `from` (a
 * minute boundary): minutes up to the next hour, hours up to the next day,
 * then whole days.
 */
export function bucketsFrom(from: number): { span: number; start: { $gte: number; $lt?: number } }[] {
  const hour = Math.ceil(from / HOUR) * HOUR;
  const day = Math.ceil(hour / DAY) * DAY;
  return [
    { span: MINUTE, start: { $gte: from, $lt: hour } },
    { span: HOUR, start: { $gte: hour, $lt: day } },
    { span: DAY, start: { $gte: day } },
  ];
}

/**
 * Where a page lies in a newest-first list of `total`: read forward from the
 * newest, or, for pages past the middle, backward from the oldest (so a deep
 * page never skips more than half the records).
 */
export function planPage(total: number, limit: number, page: number): { skip: number; take: number; reverse: boolean } | null {
  const offset = (page - 1) * limit;
  if (offset >= total) return null;
  const take = Math.min(limit, total - offset);
  if (offset > total - offset - take) return { skip: total - offset - take, take, reverse: true };
  return { skip: offset, take, reverse: false };
}

/** A record as stored, `seq` its place in the global insertion order. */
export function toLogDoc(record: StoredLog, seq: number): LogDoc {
  const ms = Date.parse(record.executed_at);
  const doc: LogDoc = {
    _id: record.id,
    function_id: record.function_id,
    executed_at: new Date(ms),
    minute: minuteOf(ms),
    seq,
    cls: statusClass(record.status_code),
    status_code: record.status_code,
    execution_time_ms: record.execution_time_ms,
    error_message: record.error_message,
    trigger: record.trigger,
  };
  if (record.error_stack !== undefined) doc.error_stack = record.error_stack;
  if (record.cold_start !== undefined) doc.cold_start = record.cold_start;
  if (record.wait_ms !== undefined) doc.wait_ms = record.wait_ms;
  if (record.manual === true) doc.manual = true;
  if (record.async_id !== undefined) doc.async_id = record.async_id;
  if (record.attempt !== undefined) doc.attempt = record.attempt;
  if (record.expires_at !== null) doc.expireAt = new Date(record.expires_at);
  return doc;
}

/** The newest-first position of a record: (executed_at, seq). */
interface Cut {
  at: Date;
  seq: number;
}

/** Records at or after (newer than or equal to) the cut. */
function atOrAfter(cut: Cut): Filter<LogDoc> {
  return { executed_at: { $gte: cut.at }, $nor: [{ executed_at: cut.at, seq: { $lt: cut.seq } }] };
}

/** Records strictly before (older than) the cut. */
function before(cut: Cut): Filter<LogDoc> {
  return { $or: [{ executed_at: { $lt: cut.at } }, { executed_at: cut.at, seq: { $lt: cut.seq } }] };
}

export class MongoLogStore implements LogStore {
  readonly #db: Db;
  readonly #ctx: MongoContext;
  readonly #logs: Collection<LogDoc>;
  readonly #buckets: Collection<BucketDoc>;
  readonly #totals: Collection<TotalsDoc>;
  readonly #sequences: Collection<SequenceDoc>;
  readonly #pending: Collection<PendingDoc>;
  readonly #instances: Collection<InstanceDoc>;
  readonly #exchanges: Collection<ExchangeDoc>;
  readonly #counts: LogCounts;
  readonly #seekFrom: number;

  constructor(db: Db, ctx: MongoContext, options: { seekFrom?: number } = {}) {
    this.#db = db;
    this.#ctx = ctx;
    this.#seekFrom = options.seekFrom ?? DEFAULT_SEEK_FROM;
    this.#logs = db.collection<LogDoc>('logs');
    this.#buckets = db.collection<BucketDoc>('log_buckets');
    this.#totals = db.collection<TotalsDoc>('log_totals');
    this.#sequences = db.collection<SequenceDoc>('sequences');
    this.#pending = db.collection<PendingDoc>('log_pending');
    this.#instances = db.collection<InstanceDoc>('gateway_instances');
    this.#exchanges = exchangeCollection(db);
    this.#counts = new LogCounts(db, ctx);
  }

  async insert(records: StoredLog[], progress?: WriterProgress): Promise<InsertResult> {
    if (records.length === 0) return progress === undefined ? undefined : { instanceLive: await recordProgress(this.#ctx, this.#instances, progress) };
    // A retried $inc only leaves a gap in the sequence, which is harmless.
    const last = await this.#ctx.run('log sequence', true, async () => {
      const doc = await this.#sequences.findOneAndUpdate({ _id: 'logs' }, { $inc: { v: records.length } }, { upsert: true, returnDocument: 'after' });
      return doc!.v;
    });
    const first = last - records.length + 1;
    const docs = records.map((record, i) => toLogDoc(record, first + i));

    // Records and counts are separate writes (no transactions needed), so a
    // batch sent again after a failure must count each record exactly once.
    // The batch's ids are noted in `log_pending` first, and the note is removed
    // once the counts are applied. A resent record that is already stored
    // (duplicate _id) is counted only if a note still names it, i.e. its
    // counts never got applied. The note costs two small writes per batch.
    //
    // With a writer's progress, the note also names the writer instance and
    // its progress once the batch is stored, and the instance's own progress
    // is raised past it before the note goes: a writer killed anywhere in
    // here leaves either the note (whose stored records a claim counts) or
    // the raised progress, never neither (docs/mongodb.md). Such a batch also
    // adds its records to the execution counters, and its counts are keyed
    // by (writer, upTo) (counts.ts): a resend, or a claimer finishing the
    // note of a writer killed before its counts were applied
    // (LogCounts.settleNotes), changes each count document once.
    const ids = docs.map((d) => d._id);
    const pendingId = `batch_${first}`;
    const note: Omit<PendingDoc, '_id'> = progress === undefined ? { ids } : { ids, owner: progress.instance, upTo: progress.written, accepted: progress.accepted, at: progress.at, exec: true };
    await this.#ctx.run('log insert', true, () => this.#pending.replaceOne({ _id: pendingId }, note, { upsert: true }));
    let toCount: LogDoc[] = docs;
    await this.#ctx.run('log insert', true, async () => {
      try {
        await this.#logs.insertMany(docs, { ordered: false });
        toCount = docs;
      } catch (err) {
        if (!(err instanceof MongoBulkWriteError && allDuplicates(err))) throw err;
        const duplicates = new Set(writeErrorIndexes(err));
        const duplicateIds = docs.filter((_, i) => duplicates.has(i)).map((d) => d._id);
        const noted = new Set<string>();
        for (const note of await this.#pending.find({ _id: { $ne: pendingId }, ids: { $in: duplicateIds } }).toArray()) {
          for (const id of note.ids) noted.add(id);
        }
        toCount = docs.filter((d, i) => !duplicates.has(i) || noted.has(d._id));
      }
    });
    // The latency histogram counts what the counts count (a resent record once); at write time, never by scanning records.
    const counted = new Set(toCount.map((d) => d._id));
    await addLatency(this.#ctx, this.#db, records.filter((r) => counted.has(r.id)));
    // Recorded exchanges (replay) go with their records, before the batch counts as written.
    await writeExchanges(this.#ctx, this.#exchanges, records);
    await this.#counts.apply(toCount, 1, progress === undefined ? {} : { key: { writer: progress.instance, upTo: progress.written }, executions: true });
    if (progress === undefined) {
      await this.#ctx.run('log insert', true, () => this.#pending.deleteMany({ ids: { $in: ids } }));
      return;
    }
    let instanceLive: boolean;
    try {
      instanceLive = await recordProgress(this.#ctx, this.#instances, progress);
    } catch (err) {
      // The batch is stored and counted: failing it now would have the writer
      // resend it. The note stays, so the batch still counts as written should
      // this writer die; its next batch raises the progress and removes it.
      this.#ctx.retry.log("MongoDB: instance progress not recorded; the batch's note is kept", { error: (err as Error).message });
      return { instanceLive: true };
    }
    // This batch's notes, and any earlier one of the writer its progress now covers.
    await this.#ctx.run('log insert', true, () => this.#pending.deleteMany({ $or: [{ ids: { $in: ids } }, { owner: progress.instance, upTo: { $lte: progress.written } }] }));
    return { instanceLive };
  }

  async #totalsOf(functionId: string): Promise<TotalsDoc> {
    const doc = await this.#ctx.run('log totals', true, () => this.#totals.findOne({ _id: functionId }));
    return doc ?? { _id: functionId, all: 0, s: 0, e: 0 };
  }

  /**
   * The `n`-th newest record (1-based) of a function with `total` records,
   * read from the nearer end; with `fromNewestOnly`, always from the newest end,
   * so that a `total` short of the stored records (a killed writer's batch
   * whose counts a claimer has not finished yet) can only give an older cut,
   * never a newer one.
   */
  async #nth(functionId: string, n: number, total: number, fromNewestOnly = false): Promise<Cut | null> {
    const fromNewest = fromNewestOnly || n <= total / 2;
    const skip = fromNewest ? n - 1 : total - n;
    // Far from both ends: start from the buckets, as deep pages do.
    const seek = skip >= this.#seekFrom ? await this.#seek(functionId, 'all', n - 1) : null;
    const doc = await this.#ctx.run('log cutoff', true, () => {
      if (seek) {
        return this.#logs
          .find({ function_id: functionId, ...(seek.upper === null ? {} : { executed_at: { $lt: new Date(seek.upper) } }) }, { projection: { executed_at: 1, seq: 1 } })
          .sort({ executed_at: -1, seq: -1 })
          .skip(n - 1 - seek.counted)
          .limit(1)
          .next();
      }
      return this.#logs
        .find({ function_id: functionId }, { projection: { executed_at: 1, seq: 1 } })
        .sort(fromNewest ? { executed_at: -1, seq: -1 } : { executed_at: 1, seq: 1 })
        .skip(skip)
        .limit(1)
        .next();
    });
    return doc ? { at: doc.executed_at, seq: doc.seq } : null;
  }

  /** Sum of one count field over a function's records in minutes after `minute`. */
  async #bucketsAfter(functionId: string, minute: number, field: 'all' | 's' | 'e'): Promise<number> {
    const [row] = await this.#ctx.run('log bucket sum', true, () => this.#buckets.aggregate<{ n: number }>([
      { $match: { function_id: functionId, $or: bucketsFrom(minute + MINUTE) } },
      { $group: { _id: null, n: { $sum: `$${field}` } } },
    ]).toArray());
    return row?.n ?? 0;
  }

  /** The records a policy shows (as a filter) and how many of them are in the status class. */
  async #visible(functionId: string, status: StatusFilter, retention: RetentionPolicy, now: number): Promise<{ filter: Filter<LogDoc>; total: number }> {
    const field = countField(status);
    const base: Filter<LogDoc> = { function_id: functionId };
    if (status !== 'all') base.cls = field as 's' | 'e';
    if (retention.type === 'time') {
      const cutoff = now - retention.days * DAY;
      const cutMinute = minuteOf(cutoff);
      const [after, inside] = await Promise.all([
        this.#bucketsAfter(functionId, cutMinute, field),
        this.#ctx.run('log count', true, () => this.#logs.countDocuments({ ...base, executed_at: { $gte: new Date(cutoff), $lt: new Date(cutMinute + MINUTE) } })),
      ]);
      return { filter: { ...base, executed_at: { $gte: new Date(cutoff) } }, total: after + inside };
    }
    const totals = await this.#totalsOf(functionId);
    if (retention.type === 'count' && totals.all > retention.count) {
      const cut = await this.#nth(functionId, retention.count, totals.all);
      if (cut) {
        const filter = { ...base, ...atOrAfter(cut) };
        if (status === 'all') return { filter, total: retention.count };
        const cutMinute = minuteOf(cut.at.getTime());
        const [after, inside] = await Promise.all([
          this.#bucketsAfter(functionId, cutMinute, field),
          this.#ctx.run('log count', true, () => this.#logs.countDocuments({ ...filter, $and: [{ executed_at: { $lt: new Date(cutMinute + MINUTE) } }] })),
        ]);
        return { filter, total: after + inside };
      }
    }
    return { filter: base, total: Math.max(0, totals[field]) };
  }

  /** The minute buckets after `since`'s minute, plus an index count inside it (as #visible counts). */
  async recentCounts(functionId: string, since: number): Promise<RecentCounts> {
    const sinceMinute = minuteOf(since);
    const inside = (cls?: 'e') =>
      this.#ctx.run('log count', true, () => this.#logs.countDocuments({ function_id: functionId, ...(cls ? { cls } : {}), executed_at: { $gte: new Date(since), $lt: new Date(sinceMinute + MINUTE) } }));
    const [total, errors, totalInside, errorsInside] = await Promise.all([
      this.#bucketsAfter(functionId, sinceMinute, 'all'),
      this.#bucketsAfter(functionId, sinceMinute, 'e'),
      inside(),
      inside('e'),
    ]);
    return { total: total + totalInside, errors: errors + errorsInside };
  }

  async list(functionId: string, query: LogQuery, retention: RetentionPolicy, now: number): Promise<LogPage> {
    const { filter, total } = await this.#visible(functionId, query.status, retention, now);
    const plan = planPage(total, query.limit, query.page);
    let logs: ExecutionLog[] = [];
    if (plan && plan.skip < this.#seekFrom) {
      const direction = plan.reverse ? 1 : -1;
      const docs = await this.#ctx.run('log list', true, () => this.#logs
        .find(filter)
        .sort({ executed_at: direction, seq: direction })
        .skip(plan.skip)
        .limit(plan.take)
        .toArray());
      if (plan.reverse) docs.reverse();
      logs = docs.map(toLog);
    } else if (plan) {
      // A deep page: the buckets say how many records lie after each day,
      // hour and minute, so the page starts at most one minute of records
      // after a known time instead of half a million index keys in.
      const offset = (query.page - 1) * query.limit;
      const { upper, counted } = await this.#seek(functionId, countField(query.status), offset);
      const docs = await this.#ctx.run('log list', true, () => this.#logs
        .find(upper === null ? filter : { ...filter, $and: [{ executed_at: { $lt: new Date(upper) } }] })
        .sort({ executed_at: -1, seq: -1 })
        .skip(offset - counted)
        .limit(plan.take)
        .toArray());
      logs = docs.map(toLog);
    }
    return { logs, pagination: paginate(total, query.limit, query.page) };
  }

  /**
   * The latest time `upper` such that the records at or after it (`counted`)
   * are at most `offset`, walking day, then hour, then minute buckets from the
   * newest. Only the newest end is walked, which no retention filter cuts, so
   * the bucket counts equal the visible counts there.
   */
  async #seek(functionId: string, field: 'all' | 's' | 'e', offset: number): Promise<{ upper: number | null; counted: number }> {
    let upper: number | null = null;
    let counted = 0;
    for (const span of [DAY, HOUR, MINUTE]) {
      const buckets = await this.#ctx.run('log seek', true, () => this.#buckets
        .find({ function_id: functionId, span, ...(upper === null ? {} : { start: { $lt: upper } }) }, { projection: { start: 1, [field]: 1 } })
        .sort({ start: -1 })
        .limit(span === DAY ? 100_000 : span === HOUR ? 24 : 60)
        .toArray());
      for (const bucket of buckets) {
        const n = Math.max(0, bucket[field]);
        if (counted + n > offset) break;
        counted += n;
        upper = bucket.start;
      }
    }
    return { upper, counted };
  }

  async applyRetention(functionId: string, retention: RetentionPolicy, now: number): Promise<number> {
    // The gateway's sweeper calls this for every function every few minutes:
    // expiry is rewritten only when the policy changed (or some minute holds
    // records written without it), never on every sweep.
    const totals = await this.#totalsOf(functionId);
    if (retention.type === 'time') {
      const keepMs = retention.days * DAY;
      const unexpiring = await this.#ctx.run('log expiry', true, () => this.#buckets.findOne({ function_id: functionId, expireAt: { $exists: false } }, { projection: { _id: 1 } }));
      if (totals.keepMs !== keepMs || unexpiring) {
        await this.#rewriteExpiry(functionId, keepMs);
        await setConsoleExpiry(this.#ctx, this.#db, functionId, keepMs);
        await this.#ctx.run('log expiry', true, () => this.#totals.updateOne({ _id: functionId }, { $set: { keepMs } }));
      }
      return this.#deleteWhere(functionId, { executed_at: { $lt: new Date(now - keepMs) } });
    }
    await this.#ctx.run('log expiry', true, async () => {
      const expiring = await this.#buckets.findOne({ function_id: functionId, expireAt: { $exists: true } }, { projection: { _id: 1 } });
      if (expiring || (totals.keepMs ?? null) !== null) {
        await this.#logs.updateMany({ function_id: functionId, expireAt: { $exists: true } }, { $unset: { expireAt: '' } });
        await this.#exchanges.updateMany({ function_id: functionId, expireAt: { $exists: true } }, { $unset: { expireAt: '' } });
        await this.#buckets.updateMany({ function_id: functionId, expireAt: { $exists: true } }, { $unset: { expireAt: '' } });
        await this.#totals.updateOne({ _id: functionId }, { $set: { keepMs: null } });
        await setConsoleExpiry(this.#ctx, this.#db, functionId, null);
      }
    });
    if (retention.type === 'none') return 0;
    if (totals.all <= retention.count) return 0;
    // A sweep deletes: its cut is read from the newest end (see #nth).
    const cut = await this.#nth(functionId, retention.count, totals.all, true);
    if (!cut) return 0;
    return this.#deleteWhere(functionId, before(cut));
  }

  /** expireAt = executed_at + keepMs on every record of the function (and its buckets). */
  async #rewriteExpiry(functionId: string, keepMs: number): Promise<void> {
    await this.#ctx.run('log expiry', true, async () => {
      await rewriteExpiryOf(this.#logs, functionId, keepMs);
      await rewriteExpiryOf(this.#exchanges, functionId, keepMs);
      const buckets = await this.#buckets.find({ function_id: functionId }, { projection: { span: 1, start: 1 } }).toArray();
      if (buckets.length > 0) {
        await this.#buckets.bulkWrite(buckets.map((b) => ({
          updateOne: { filter: { _id: b._id }, update: { $set: { expireAt: new Date(b.start + b.span + keepMs) } } },
        })), { ordered: false });
      }
    });
  }

  /**
   * Deletes a function's records matching `where`, in chunks, taking them off
   * the counts. Records a batch note names are left for a later sweep: their
   * counts may not be applied yet (a batch in flight, or one a killed writer
   * left until a claimer finishes it), and taking off counts never added
   * would leave totalCount short of what the listing shows.
   */
  async #deleteWhere(functionId: string, where: Filter<LogDoc>): Promise<number> {
    const noted = await this.#ctx.run('log sweep', true, async () => (await this.#pending.find({}, { projection: { ids: 1 } }).toArray()).flatMap((n) => n.ids));
    const unnoted: Filter<LogDoc> = noted.length === 0 ? {} : { _id: { $nin: noted } };
    let deleted = 0;
    for (;;) {
      const chunk = await this.#ctx.run('log sweep', true, () => this.#logs
        .find({ function_id: functionId, ...where, ...unnoted }, { projection: { function_id: 1, minute: 1, cls: 1 } })
        .limit(DELETE_CHUNK)
        .toArray());
      if (chunk.length === 0) break;
      const ids = chunk.map((d) => d._id);
      const result = await this.#ctx.run('log sweep', true, () => this.#logs.deleteMany({ _id: { $in: ids } }));
      await this.#ctx.run('log sweep', true, () => this.#exchanges.deleteMany({ _id: { $in: ids } }));
      deleted += result.deletedCount;
      await this.#ctx.run('log sweep', true, () => consoleCollection(this.#db).deleteMany({ _id: { $in: chunk.map((d) => consoleDocId(functionId, d._id)) } }));
      // Taken off the counts as found; a record the TTL monitor removed between
      // the find and the delete was outside every read filter already.
      await this.#counts.apply(chunk, -1);
      if (chunk.length < DELETE_CHUNK) break;
      await new Promise((resolve) => setImmediate(resolve));
    }
    if (deleted > 0) {
      await this.#ctx.run('log sweep', true, () => this.#buckets.deleteMany({ function_id: functionId, all: { $lte: 0 } }));
    }
    return deleted;
  }

  async deleteFunction(functionId: string): Promise<number> {
    return this.#ctx.run('log delete', true, async () => {
      const result = await this.#logs.deleteMany({ function_id: functionId });
      await this.#exchanges.deleteMany({ function_id: functionId });
      await this.#buckets.deleteMany({ function_id: functionId });
      await this.#totals.deleteOne({ _id: functionId });
      await MongoInsightStore.deleteFunction(this.#ctx, this.#db, functionId);
      return result.deletedCount;
    });
  }
}

/** expireAt = executed_at + keepMs on every document of the function in a collection of records (logs, log_exchanges). */
async function rewriteExpiryOf(collection: Collection<LogDoc> | Collection<ExchangeDoc>, functionId: string, keepMs: number): Promise<void> {
  const docs = collection as unknown as Collection<{ _id: string; function_id: string; executed_at: Date; expireAt?: Date }>;
  try {
    // One server-side update where the server supports update pipelines (MongoDB 4.2+).
    await docs.updateMany({ function_id: functionId }, [{ $set: { expireAt: { $add: ['$executed_at', keepMs] } } }]);
  } catch (err) {
    if (!(err instanceof MongoServerError)) throw err;
    // Servers without update pipelines (the test stand-in): rewrite in batches.
    const cursor = docs.find({ function_id: functionId }, { projection: { executed_at: 1 } }).batchSize(DELETE_CHUNK);
    let ops: AnyBulkWriteOperation<{ _id: string; function_id: string; executed_at: Date; expireAt?: Date }>[] = [];
    for await (const doc of cursor) {
      ops.push({ updateOne: { filter: { _id: doc._id }, update: { $set: { expireAt: new Date(doc.executed_at.getTime() + keepMs) } } } });
      if (ops.length >= DELETE_CHUNK) {
        await docs.bulkWrite(ops, { ordered: false });
        ops = [];
      }
    }
    if (ops.length > 0) await docs.bulkWrite(ops, { ordered: false });
  }
}

/** Index specs, created at start (createIndexes is idempotent for equal specs). */
export async function ensureLogIndexes(db: Db): Promise<void> {
  await db.collection('logs').createIndexes([
    { key: { function_id: 1, executed_at: -1, seq: -1 }, name: 'fn_newest' },
    { key: { function_id: 1, cls: 1, executed_at: -1, seq: -1 }, name: 'fn_class_newest' },
    { key: { expireAt: 1 }, name: 'ttl_expireAt', expireAfterSeconds: 0 },
  ]);
  await db.collection('log_pending').createIndexes([{ key: { ids: 1 }, name: 'ids' }]);
  await db.collection('log_buckets').createIndexes([
    { key: { function_id: 1, span: 1, start: -1 }, name: 'fn_span_start' },
    { key: { expireAt: 1 }, name: 'ttl_expireAt', expireAfterSeconds: 0 },
  ]);
}
