import { MongoBulkWriteError, type Collection, type Db } from 'mongodb';
import type { RecordedExchange, RetentionPolicy } from '../../model.ts';
import { recordedExchangeBytes } from '../../recording.ts';
import type { ExchangeLookup, ExchangeStore, StoredLog } from '../../stores.ts';
import type { MongoContext } from './context.ts';
import { allDuplicates } from './counts.ts';
import type { LogDoc } from './log-doc.ts';

// Recorded exchanges on MongoDB (collection `log_exchanges`, one document per
// record that has one, `_id` the log id). Apart from the log documents so a
// listing never carries their bodies. They follow their records: written
// by LogStore.insert with the batch, `expireAt` copied from the record (the
// same TTL index), rewritten with it when the policy changes, and deleted by
// the same sweep chunks and function deletion (logs.ts).

export interface ExchangeDoc {
  _id: string;
  function_id: string;
  executed_at: Date;
  exchange: RecordedExchange;
  expireAt?: Date;
  /** recordedExchangeBytes (absent on exchanges stored before it: they count 0). */
  bytes?: number;
}

export function exchangeCollection(db: Db): Collection<ExchangeDoc> {
  return db.collection<ExchangeDoc>('log_exchanges');
}

/**
 * The exchanges of a batch, in one insertMany: a resent batch finds some
 * already there (duplicate _id, the same document), which is success. Plain
 * inserts rather than upserts: the server skips the lookup an upsert makes.
 */
export async function writeExchanges(ctx: MongoContext, exchanges: Collection<ExchangeDoc>, records: readonly StoredLog[]): Promise<void> {
  const docs: ExchangeDoc[] = [];
  for (const r of records) {
    if (r.exchange === undefined) continue;
    docs.push({
      _id: r.id, function_id: r.function_id, executed_at: new Date(r.executed_at), exchange: r.exchange, bytes: recordedExchangeBytes(r.exchange),
      ...(r.expires_at === null ? {} : { expireAt: new Date(r.expires_at) }),
    });
  }
  if (docs.length === 0) return;
  await ctx.run('exchange insert', true, async () => {
    try {
      await exchanges.insertMany(docs, { ordered: false });
    } catch (err) {
      if (!(err instanceof MongoBulkWriteError && allDuplicates(err))) throw err;
    }
  });
}

export class MongoExchangeStore implements ExchangeStore {
  readonly #ctx: MongoContext;
  readonly #exchanges: Collection<ExchangeDoc>;
  readonly #logs: Collection<LogDoc>;

  constructor(db: Db, ctx: MongoContext) {
    this.#ctx = ctx;
    this.#exchanges = exchangeCollection(db);
    this.#logs = db.collection<LogDoc>('logs');
  }

  async get(functionId: string, logId: string, retention: RetentionPolicy, now: number): Promise<ExchangeLookup> {
    const log = await this.#ctx.run('exchange read', true, () => this.#logs.findOne({ _id: logId, function_id: functionId }, { projection: { executed_at: 1, seq: 1, trigger: 1 } }));
    if (log === null || !(await this.#visible(functionId, log, retention, now))) return { found: false };
    const doc = await this.#ctx.run('exchange read', true, () => this.#exchanges.findOne({ _id: logId, function_id: functionId }));
    return { found: true, executed_at: log.executed_at.toISOString(), trigger: log.trigger, exchange: doc?.exchange ?? null };
  }

  async recordedBytes(functionIds: readonly string[], now: number): Promise<number> {
    if (functionIds.length === 0) return 0;
    const rows = await this.#ctx.run('exchange bytes', true, () => this.#exchanges.aggregate<{ bytes: number }>([
      { $match: { function_id: { $in: [...functionIds] }, $or: [{ expireAt: { $exists: false } }, { expireAt: { $gt: new Date(now) } }] } },
      { $group: { _id: null, bytes: { $sum: '$bytes' } } },
    ]).toArray());
    return rows[0]?.bytes ?? 0;
  }

  /** The retention read filter for one record (the store's reads hide expired records before the TTL monitor runs). */
  async #visible(functionId: string, log: Pick<LogDoc, 'executed_at' | 'seq'>, retention: RetentionPolicy, now: number): Promise<boolean> {
    if (retention.type === 'none') return true;
    if (retention.type === 'time') return log.executed_at.getTime() >= now - retention.days * 86_400_000;
    const newer = await this.#ctx.run('exchange read', true, () => this.#logs.countDocuments({
      function_id: functionId,
      $or: [{ executed_at: { $gt: log.executed_at } }, { executed_at: log.executed_at, seq: { $gt: log.seq } }],
    }, { limit: retention.count }));
    return newer < retention.count;
  }
}

export async function ensureExchangeIndexes(db: Db): Promise<void> {
  await exchangeCollection(db).createIndexes([
    { key: { function_id: 1 }, name: 'fn' },
    { key: { expireAt: 1 }, name: 'ttl_expireAt', expireAfterSeconds: 0 },
  ]);
}
