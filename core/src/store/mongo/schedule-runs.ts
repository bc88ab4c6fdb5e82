import type { Collection, Db, ObjectId } from 'mongodb';
import type { MissedReason, ScheduleRun } from '../../schedule-ledger.ts';
import type { ScheduleRunStore, StoredScheduleRun } from '../../stores.ts';
import type { MongoContext } from './context.ts';

// The ledger of scheduled runs on MongoDB (collection schedule_runs): the
// function's time retention as a TTL index on expireAt (reads filter too,
// the TTL monitor being slow), and a per-function bound applied after each add.

interface RunDoc {
  _id?: ObjectId;
  function_id: string;
  planned_at: Date;
  manual: boolean;
  outcome: ScheduleRun['outcome'];
  missed_reason: MissedReason | null;
  log_id: string | null;
  status_code: number | null;
  execution_time_ms: number | null;
  started_at: Date | null;
  expireAt?: Date;
}

function toRun(doc: RunDoc): ScheduleRun {
  const planned = doc.planned_at.getTime();
  return {
    function_id: doc.function_id,
    planned_at: doc.planned_at.toISOString(),
    manual: doc.manual,
    outcome: doc.outcome,
    missed_reason: doc.missed_reason,
    log_id: doc.log_id,
    status_code: doc.status_code,
    execution_time_ms: doc.execution_time_ms,
    started_at: doc.started_at === null ? null : doc.started_at.toISOString(),
    lag_ms: doc.started_at === null ? null : doc.started_at.getTime() - planned,
  };
}

const NEWEST_FIRST = { planned_at: -1, _id: -1 } as const;

export class MongoScheduleRunStore implements ScheduleRunStore {
  readonly #ctx: MongoContext;
  readonly #runs: Collection<RunDoc>;

  constructor(db: Db, ctx: MongoContext) {
    this.#ctx = ctx;
    this.#runs = db.collection<RunDoc>('schedule_runs');
  }

  async add(run: StoredScheduleRun, keepAtMost: number): Promise<void> {
    const doc: RunDoc = {
      function_id: run.function_id,
      planned_at: new Date(run.planned_at),
      manual: run.manual,
      outcome: run.outcome,
      missed_reason: run.missed_reason,
      log_id: run.log_id,
      status_code: run.status_code,
      execution_time_ms: run.execution_time_ms,
      started_at: run.started_at === null ? null : new Date(run.started_at),
    };
    if (run.expires_at !== null) doc.expireAt = new Date(run.expires_at);
    // Not resent on a lost connection: a doubled ledger entry would be wrong, a missing one is logged by the caller.
    await this.#ctx.run('schedule run add', false, () => this.#runs.insertOne(doc));
    const fn = { function_id: run.function_id };
    const edge = await this.#ctx.run('schedule run bound', true, () =>
      this.#runs.find(fn, { projection: { planned_at: 1 } }).sort(NEWEST_FIRST).skip(keepAtMost).limit(1).next());
    if (edge === null) return;
    await this.#ctx.run('schedule run bound', true, () =>
      this.#runs.deleteMany({ ...fn, $or: [{ planned_at: { $lt: edge.planned_at } }, { planned_at: edge.planned_at, _id: { $lte: edge._id! } }] }));
  }

  async list(functionId: string, limit: number, now: number): Promise<ScheduleRun[]> {
    const docs = await this.#ctx.run('schedule run list', true, () =>
      this.#runs
        .find({ function_id: functionId, $or: [{ expireAt: { $exists: false } }, { expireAt: { $gt: new Date(now) } }] })
        .sort(NEWEST_FIRST)
        .limit(limit)
        .toArray());
    return docs.map(toRun);
  }

  async lastPlanned(functionId: string): Promise<number | null> {
    const doc = await this.#ctx.run('schedule run last', true, () =>
      this.#runs.find({ function_id: functionId, manual: false }, { projection: { planned_at: 1 } }).sort(NEWEST_FIRST).limit(1).next());
    return doc === null ? null : doc.planned_at.getTime();
  }

  async sweep(now: number): Promise<number> {
    return this.#ctx.run('schedule run sweep', true, async () => (await this.#runs.deleteMany({ expireAt: { $lte: new Date(now) } })).deletedCount);
  }

  async deleteFunction(functionId: string): Promise<number> {
    return this.#ctx.run('schedule run delete', true, async () => (await this.#runs.deleteMany({ function_id: functionId })).deletedCount);
  }
}

export async function ensureScheduleRunIndexes(db: Db): Promise<void> {
  await db.collection('schedule_runs').createIndexes([
    { key: { function_id: 1, planned_at: -1, _id: -1 }, name: 'function_newest' },
    { key: { expireAt: 1 }, name: 'ttl_expireAt', expireAfterSeconds: 0 },
  ]);
}
