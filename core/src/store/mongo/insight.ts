import { MongoServerError, type AnyBulkWriteOperation, type Collection, type Db } from 'mongodb';
import {
  LATENCY_KEEP_MS, LATENCY_SLOT_MS, LATENCY_WINDOWS, firstSlot, latencyIncrements, summarizeRows,
  type ConsoleOutput, type FunctionLatency, type LatencyLevel,
} from '../../insight.ts';
import type { ExecutionLog, RetentionPolicy } from '../../model.ts';
import type { InsightStore, StoredLog } from '../../stores.ts';
import type { MongoContext } from './context.ts';
import { toLog, type LogDoc } from './log-doc.ts';

// Execution insight on MongoDB (core/src/insight.ts): a record by id (its
// _id), its console output (`console_output`, _id the log id, the same
// per-document `expireAt` TTL as `logs`), and latency histogram documents
// (`latency_buckets`, one per function, level and slot, bins as fields,
// $inc-ed by the log insert and removed by a TTL index past the day).

/** _id: consoleDocId(function, log): keyed by the posting runtime's function too, so output never lands on another function's record. */
export interface ConsoleDoc {
  _id: string;
  log_id: string;
  function_id: string;
  stored_at: Date;
  output: ConsoleOutput;
  expireAt?: Date;
}

interface LatencyDoc {
  _id: string;
  function_id: string;
  level: LatencyLevel;
  slot: number;
  /** bin number (as a string key) → executions */
  bins: Record<string, number>;
  cold: number;
  expireAt: Date;
}

const DAY = 86_400_000;
const REWRITE_CHUNK = 5_000;

export function consoleDocId(functionId: string, logId: string): string {
  return `${functionId}/${logId}`;
}

export function consoleCollection(db: Db): Collection<ConsoleDoc> {
  return db.collection<ConsoleDoc>('console_output');
}

/** $inc of the batch's histogram rows (one upsert per function, level and slot). */
export async function addLatency(ctx: MongoContext, db: Db, records: readonly StoredLog[]): Promise<void> {
  const docs = new Map<string, { functionId: string; level: LatencyLevel; slot: number; inc: Record<string, number> }>();
  for (const inc of latencyIncrements(records)) {
    const id = `${inc.functionId}|${inc.level}|${inc.slot}`;
    let doc = docs.get(id);
    if (doc === undefined) docs.set(id, (doc = { functionId: inc.functionId, level: inc.level, slot: inc.slot, inc: {} }));
    doc.inc[`bins.${inc.bin}`] = (doc.inc[`bins.${inc.bin}`] ?? 0) + inc.n;
    doc.inc.cold = (doc.inc.cold ?? 0) + inc.cold;
  }
  if (docs.size === 0) return;
  const ops: AnyBulkWriteOperation<LatencyDoc>[] = [...docs].map(([id, d]) => ({
    updateOne: {
      filter: { _id: id },
      update: {
        $inc: d.inc,
        $setOnInsert: { function_id: d.functionId, level: d.level, slot: d.slot, expireAt: new Date((d.slot + 1) * LATENCY_SLOT_MS[d.level] + LATENCY_KEEP_MS[d.level]) },
      },
      upsert: true,
    },
  }));
  await ctx.run('latency histogram', true, () => db.collection<LatencyDoc>('latency_buckets').bulkWrite(ops, { ordered: false }));
}

/** Time retention on a function's console documents, as on its records (ConsoleDoc.expireAt from stored_at). */
export async function setConsoleExpiry(ctx: MongoContext, db: Db, functionId: string, keepMs: number | null): Promise<void> {
  const consoles = consoleCollection(db);
  await ctx.run('console expiry', true, async () => {
    if (keepMs === null) {
      await consoles.updateMany({ function_id: functionId, expireAt: { $exists: true } }, { $unset: { expireAt: '' } });
      return;
    }
    try {
      await consoles.updateMany({ function_id: functionId }, [{ $set: { expireAt: { $add: ['$stored_at', keepMs] } } }]);
    } catch (err) {
      if (!(err instanceof MongoServerError)) throw err;
      // Servers without update pipelines (the test stand-in): in batches.
      let ops: AnyBulkWriteOperation<ConsoleDoc>[] = [];
      for await (const doc of consoles.find({ function_id: functionId }, { projection: { stored_at: 1 } }).batchSize(REWRITE_CHUNK)) {
        ops.push({ updateOne: { filter: { _id: doc._id }, update: { $set: { expireAt: new Date(doc.stored_at.getTime() + keepMs) } } } });
        if (ops.length >= REWRITE_CHUNK) {
          await consoles.bulkWrite(ops, { ordered: false });
          ops = [];
        }
      }
      if (ops.length > 0) await consoles.bulkWrite(ops, { ordered: false });
    }
  });
}

export class MongoInsightStore implements InsightStore {
  readonly #ctx: MongoContext;
  readonly #logs: Collection<LogDoc>;
  readonly #consoles: Collection<ConsoleDoc>;
  readonly #latency: Collection<LatencyDoc>;

  constructor(db: Db, ctx: MongoContext) {
    this.#ctx = ctx;
    this.#logs = db.collection<LogDoc>('logs');
    this.#consoles = consoleCollection(db);
    this.#latency = db.collection<LatencyDoc>('latency_buckets');
  }

  async getLog(functionId: string, logId: string, retention: RetentionPolicy, now: number): Promise<ExecutionLog | null> {
    return this.#ctx.run('log read', true, async () => {
      const doc = await this.#logs.findOne({ _id: logId, function_id: functionId });
      if (doc === null) return null;
      // The read filter, as listings apply it (the TTL monitor is slow).
      if (doc.expireAt !== undefined && doc.expireAt.getTime() <= now) return null;
      if (retention.type === 'time' && doc.executed_at.getTime() < now - retention.days * DAY) return null;
      if (retention.type === 'count') {
        const newer = await this.#logs.countDocuments(
          { function_id: functionId, $or: [{ executed_at: { $gt: doc.executed_at } }, { executed_at: doc.executed_at, seq: { $gt: doc.seq } }] },
          { limit: retention.count },
        );
        if (newer >= retention.count) return null;
      }
      return toLog(doc);
    });
  }

  async putConsole(functionId: string, outputs: ReadonlyArray<{ logId: string; output: ConsoleOutput }>, expiresAt: number | null, now: number): Promise<boolean[]> {
    if (outputs.length === 0) return [];
    const ids = outputs.map((o) => o.logId);
    const stored = await this.#ctx.run('console write', true, async () => new Set((await this.#logs.find({ _id: { $in: ids }, function_id: functionId }, { projection: { _id: 1 } }).toArray()).map((d) => d._id)));
    const ops: AnyBulkWriteOperation<ConsoleDoc>[] = [];
    for (const { logId, output } of outputs) {
      if (!stored.has(logId)) continue;
      const doc: ConsoleDoc = { _id: consoleDocId(functionId, logId), log_id: logId, function_id: functionId, stored_at: new Date(now), output };
      if (expiresAt !== null) doc.expireAt = new Date(expiresAt);
      // Insert once: a second output for the same id keeps the first.
      ops.push({ updateOne: { filter: { _id: doc._id }, update: { $setOnInsert: doc }, upsert: true } });
    }
    if (ops.length > 0) await this.#ctx.run('console write', true, () => this.#consoles.bulkWrite(ops, { ordered: false }));
    return outputs.map((o) => stored.has(o.logId));
  }

  async getConsole(functionId: string, logId: string): Promise<ConsoleOutput | null> {
    return this.#ctx.run('console read', true, async () => (await this.#consoles.findOne({ _id: consoleDocId(functionId, logId) }))?.output ?? null);
  }

  async latency(functionId: string, now: number): Promise<FunctionLatency> {
    return this.#ctx.run('latency read', true, async () => {
      const result: Partial<FunctionLatency> = {};
      for (const w of LATENCY_WINDOWS) {
        const docs = await this.#latency.find({ function_id: functionId, level: w.level, slot: { $gte: firstSlot(now, w.ms, w.level) } }).toArray();
        // Each document's cold count rides on a row of no executions.
        result[w.name] = summarizeRows(docs.flatMap((d) => [
          ...Object.entries(d.bins ?? {}).map(([bin, n]) => ({ bin: Number(bin), n, cold: 0 })),
          { bin: 0, n: 0, cold: d.cold ?? 0 },
        ]));
      }
      return result as FunctionLatency;
    });
  }

  /** Used by MongoLogStore when a function goes. */
  static async deleteFunction(ctx: MongoContext, db: Db, functionId: string): Promise<void> {
    await ctx.run('console delete', true, async () => {
      await consoleCollection(db).deleteMany({ function_id: functionId });
      await db.collection('latency_buckets').deleteMany({ function_id: functionId });
    });
  }
}

export async function ensureInsightIndexes(db: Db): Promise<void> {
  await db.collection('console_output').createIndexes([
    { key: { function_id: 1 }, name: 'fn' },
    { key: { expireAt: 1 }, name: 'ttl_expireAt', expireAfterSeconds: 0 },
  ]);
  await db.collection('latency_buckets').createIndexes([
    { key: { function_id: 1, level: 1, slot: -1 }, name: 'fn_level_slot' },
    { key: { expireAt: 1 }, name: 'ttl_expireAt', expireAfterSeconds: 0 },
  ]);
}
