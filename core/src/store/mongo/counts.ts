import { createHash } from 'node:crypto';
import { MongoBulkWriteError, type AnyBulkWriteOperation, type Collection, type Db, type Filter, type UpdateFilter } from 'mongodb';
import type { MongoContext } from './context.ts';

// The counts a log batch adds (docs/mongodb.md, "totalCount without a scan"
// and "Finishing a dead writer's batches"): per function and status class, in
// minute, hour and day buckets (`log_buckets`) and in all (`log_totals`), and,
// for a gateway writer's batch, each record's execution in the function's
// execution counter (`counters`). One code path for a live batch
// (MongoLogStore.insert), for the store's own deletes, and for a claimer
// finishing the batches a dead writer left half done (settleNotes).
//
// Applying a writer's batch is keyed: every document changed records the
// highest batch of that writer it took (`w.<writer mark>` = the writer's
// `written` once the batch is stored), and a document that already holds a
// mark at or above the batch's is left alone. A writer sends its batches one
// after another, each complete before the next, and resends a failed batch
// unchanged (same records, same `written`), so a mark at or above a batch's
// means that document already holds that batch's counts. Each document's
// change is one atomic update, so a batch applied twice (resent by its writer,
// finished by two claimers at once, or by a claimer that died half way and
// the next one) changes every document once.

const MINUTE = 60_000;
const HOUR = 3_600_000;
const DAY = 86_400_000;
const SPANS = [MINUTE, HOUR, DAY] as const;
const DUPLICATE_KEY = 11000;

export type StatusClass = 's' | 'e' | 'o';

/** What counting a stored record needs of it. */
export type CountedDoc = { function_id: string; minute: number; cls: StatusClass; expireAt?: Date };

export interface BucketDoc {
  _id: string;
  function_id: string;
  /** The bucket's length: MINUTE, HOUR or DAY (ms). */
  span: number;
  /** Its first millisecond, a multiple of span. */
  start: number;
  all: number;
  s: number;
  e: number;
  expireAt?: Date;
  /** Per writer (its mark), the highest batch whose counts this document holds. */
  w?: Record<string, number>;
}

export interface TotalsDoc {
  _id: string;
  all: number;
  s: number;
  e: number;
  /** The time retention (ms) whose expireAt the stored records carry; null or absent: none. */
  keepMs?: number | null;
  w?: Record<string, number>;
}

export interface CounterDoc {
  _id: string;
  n: number;
  w?: Record<string, number>;
}

/** A batch's note (`log_pending`), see MongoLogStore.insert. */
export interface PendingDoc {
  _id: string;
  ids: string[];
  /** With a writer's progress: the writer instance, and its progress once this batch is stored (see instances.ts). */
  owner?: string;
  upTo?: number;
  accepted?: number;
  at?: number;
  /** The batch adds its records to the execution counters too (every writer batch since this field exists). */
  exec?: boolean;
}

/** A writer's batch: the writer instance and its `written` once the batch is stored. */
export interface CountKey {
  writer: string;
  upTo: number;
}

export function bucketId(functionId: string, span: number, start: number): string {
  return `${functionId}|${span}|${start}`;
}

/**
 * The field name of a writer's mark: 12 characters of a hash of its instance
 * id (72 bits: no two writers share one in practice), so a document written by
 * many gateways over time stays small and no id character can break a path.
 */
export function writerMark(writer: string): string {
  return createHash('sha256').update(writer).digest('base64url').slice(0, 12);
}

interface Op<T> {
  filter: Filter<T>;
  update: UpdateFilter<T>;
}

export class LogCounts {
  readonly #ctx: MongoContext;
  readonly #logs: Collection<CountedDoc & { _id: string }>;
  readonly #buckets: Collection<BucketDoc>;
  readonly #totals: Collection<TotalsDoc>;
  readonly #counters: Collection<CounterDoc>;
  readonly #pending: Collection<PendingDoc>;

  constructor(db: Db, ctx: MongoContext) {
    this.#ctx = ctx;
    this.#logs = db.collection('logs');
    this.#buckets = db.collection<BucketDoc>('log_buckets');
    this.#totals = db.collection<TotalsDoc>('log_totals');
    this.#counters = db.collection<CounterDoc>('counters');
    this.#pending = db.collection<PendingDoc>('log_pending');
  }

  /**
   * Adds (sign 1) or removes (sign -1) records from the bucket and total
   * counts. With `executions`, also adds each record to its function's
   * execution counter (never removed: retention does not lower it). With
   * `key`, each document takes this batch once (see above); without it, the
   * writes are plain $inc.
   */
  async apply(docs: readonly CountedDoc[], sign: 1 | -1, options: { key?: CountKey; executions?: boolean } = {}): Promise<void> {
    if (docs.length === 0) return;
    const buckets = new Map<string, { function_id: string; span: number; start: number; all: number; s: number; e: number; expireAt: number | null }>();
    const totals = new Map<string, { all: number; s: number; e: number }>();
    for (const doc of docs) {
      let total = totals.get(doc.function_id);
      if (!total) totals.set(doc.function_id, total = { all: 0, s: 0, e: 0 });
      total.all += sign;
      if (doc.cls !== 'o') total[doc.cls] += sign;
      for (const span of SPANS) {
        const start = Math.floor(doc.minute / span) * span;
        const id = bucketId(doc.function_id, span, start);
        let bucket = buckets.get(id);
        if (!bucket) buckets.set(id, bucket = { function_id: doc.function_id, span, start, all: 0, s: 0, e: 0, expireAt: null });
        bucket.all += sign;
        if (doc.cls !== 'o') bucket[doc.cls] += sign;
        // A bucket outlives its records by its span: it is only counted while
        // its start is inside the window, i.e. before now passes end + days.
        if (doc.expireAt) bucket.expireAt = Math.max(bucket.expireAt ?? 0, doc.expireAt.getTime() + span);
      }
    }
    const key = options.key;
    const mark = key === undefined ? null : `w.${writerMark(key.writer)}`;
    /** The update of one document, conditional on its mark when keyed. */
    const op = <T extends { _id: string }>(id: string, update: UpdateFilter<T>): Op<T> => {
      if (mark === null) return { filter: { _id: id } as Filter<T>, update };
      return {
        filter: { _id: id, [mark]: { $not: { $gte: key!.upTo } } } as Filter<T>,
        update: { ...update, $max: { ...(update.$max as object | undefined), [mark]: key!.upTo } } as UpdateFilter<T>,
      };
    };
    const bucketOps = [...buckets].map(([id, b]) => op<BucketDoc>(id, {
      $inc: { all: b.all, s: b.s, e: b.e },
      $setOnInsert: { function_id: b.function_id, span: b.span, start: b.start },
      ...(sign === 1 && b.expireAt !== null ? { $max: { expireAt: new Date(b.expireAt) } } : {}),
    }));
    const totalOps = [...totals].map(([id, t]) => op<TotalsDoc>(id, { $inc: { all: t.all, s: t.s, e: t.e } }));
    const counterOps = options.executions && sign === 1 ? [...totals].map(([id, t]) => op<CounterDoc>(id, { $inc: { n: t.all } })) : [];
    // A plain $inc is not idempotent: retried only when it never reached a
    // server. A keyed one is: a resent update finds its own mark.
    await this.#ctx.run('log counts', mark !== null, async () => {
      await write(this.#buckets, bucketOps, sign === 1, mark !== null);
      await write(this.#totals, totalOps, sign === 1, mark !== null);
      await write(this.#counters, counterOps, true, mark !== null);
    });
  }

  /**
   * Finishes the notes of one writer that is no longer live (killed and
   * claimed, or ended): counts the records they name that are stored, each
   * once, under each note's own key, then removes the notes. Every step is
   * safe to repeat, and to run in two gateways at once:
   * - a record named by several notes (a batch resent after a failure) counts
   *   under the one with the lowest `upTo` (then the lowest id), notes are
   *   applied in that order and removed only once all are applied, in the
   *   reverse order: whatever subset of the notes is left after a crash, the
   *   records each one counts, and their keys, are the same as before;
   * - a note whose counts its writer (or an earlier claimer) applied finds its
   *   marks on every document and changes nothing.
   * Returns how many stored records the notes named.
   */
  async settleNotes(notes: readonly PendingDoc[]): Promise<number> {
    const ordered = notes
      .filter((n): n is PendingDoc & { owner: string; upTo: number } => typeof n.owner === 'string' && typeof n.upTo === 'number')
      .sort((a, b) => a.upTo - b.upTo || (a._id < b._id ? -1 : a._id > b._id ? 1 : 0));
    const assigned = new Set<string>();
    let named = 0;
    for (const note of ordered) {
      const ids = note.ids.filter((id) => !assigned.has(id));
      for (const id of ids) assigned.add(id);
      if (ids.length === 0) continue;
      const stored = await this.#ctx.run('log settle', true, () => this.#logs
        .find({ _id: { $in: ids } }, { projection: { function_id: 1, minute: 1, cls: 1, expireAt: 1 } })
        .toArray());
      named += stored.length;
      await this.apply(stored, 1, { key: { writer: note.owner, upTo: note.upTo }, executions: note.exec === true });
    }
    for (const note of [...ordered].reverse()) {
      await this.#ctx.run('log settle', true, () => this.#pending.deleteOne({ _id: note._id }));
    }
    return named;
  }

  /**
   * Drops a writer's marks from the totals and execution counters (the
   * documents every listing and every function read): once it ended cleanly
   * and left no note, nothing consults them again. Bucket marks stay: a
   * bucket only gets those of the writers that wrote in its minute, hour or day.
   */
  async forget(writer: string): Promise<void> {
    const mark = `w.${writerMark(writer)}`;
    await this.#ctx.run('log marks', true, async () => {
      await this.#totals.updateMany({ [mark]: { $exists: true } }, { $unset: { [mark]: '' } });
      await this.#counters.updateMany({ [mark]: { $exists: true } }, { $unset: { [mark]: '' } });
    });
  }
}

/**
 * One bulkWrite of updates. Keyed upserts: a document that exists with a mark
 * at or above the key does not match, so the upsert's insert fails on its
 * _id; so does one that another gateway created a moment ago. Those are
 * sent again without upsert: applied if the mark is still below the key,
 * left alone if not.
 */
async function write<T extends { _id: string }>(collection: Collection<T>, ops: Op<T>[], upsert: boolean, keyed: boolean): Promise<void> {
  if (ops.length === 0) return;
  const bulk = (list: Op<T>[], up: boolean): AnyBulkWriteOperation<T>[] => list.map((o) => ({ updateOne: { filter: o.filter, update: o.update, upsert: up } }));
  try {
    await collection.bulkWrite(bulk(ops, upsert), { ordered: false });
  } catch (err) {
    if (!(keyed && upsert && err instanceof MongoBulkWriteError && allDuplicates(err))) throw err;
    await collection.bulkWrite(bulk(writeErrorIndexes(err).map((i) => ops[i]!), false), { ordered: false });
  }
}

export function writeErrorIndexes(err: MongoBulkWriteError): number[] {
  const errors = Array.isArray(err.writeErrors) ? err.writeErrors : [err.writeErrors];
  return errors.map((e) => e.index);
}

export function allDuplicates(err: MongoBulkWriteError): boolean {
  const errors = Array.isArray(err.writeErrors) ? err.writeErrors : [err.writeErrors];
  return errors.length > 0 && errors.every((e) => e.code === DUPLICATE_KEY);
}
