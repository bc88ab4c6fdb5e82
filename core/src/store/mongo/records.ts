import { randomUUID } from 'node:crypto';
import { MongoServerError, type Collection, type Db } from 'mongodb';
import { ConflictError, NotFoundError } from '../../errors.ts';
import type { FunctionRecord, NetworkPolicy, NetworkPolicyChange } from '../../model.ts';
import type { CounterStore, FunctionStore, KvStore, PolicyScope, PolicyStore } from '../../stores.ts';
import type { MongoContext } from './context.ts';

// Functions, execution counters, KV and network policies on MongoDB.

const DUPLICATE_KEY = 11000;

function isDuplicateKey(err: unknown): boolean {
  return err instanceof MongoServerError && err.code === DUPLICATE_KEY;
}

interface FunctionDoc {
  _id: string;
  namespace: string;
  name: string;
  /**
   * The whole record as JSON text: env keys may hold `.` or `$`, which
   * MongoDB field names handle poorly, and the record comes back unchanged.
   */
  record: string;
}

function functionDoc(fn: FunctionRecord): FunctionDoc {
  return { _id: fn.function_id, namespace: fn.namespace, name: fn.name, record: JSON.stringify(fn) };
}

function fromFunctionDoc(doc: FunctionDoc | null): FunctionRecord | null {
  return doc ? (JSON.parse(doc.record) as FunctionRecord) : null;
}

export class MongoFunctionStore implements FunctionStore {
  readonly #ctx: MongoContext;
  readonly #functions: Collection<FunctionDoc>;

  constructor(db: Db, ctx: MongoContext) {
    this.#ctx = ctx;
    this.#functions = db.collection<FunctionDoc>('functions');
  }

  async create(fn: FunctionRecord): Promise<void> {
    // insertOne is safe to resend: a second copy fails on the unique _id.
    let attempt = 0;
    await this.#ctx.run('function create', true, async () => {
      attempt++;
      try {
        await this.#functions.insertOne(functionDoc(fn));
      } catch (err) {
        if (!isDuplicateKey(err)) throw err;
        // A retry finding our own first attempt's document is success.
        if (attempt > 1 && (await this.#functions.findOne({ _id: fn.function_id }))?.record === JSON.stringify(fn)) return;
        throw new ConflictError(`a function named "${fn.name}" already exists in namespace "${fn.namespace}", or the id ${fn.function_id} is taken`);
      }
    });
  }

  async get(functionId: string): Promise<FunctionRecord | null> {
    return fromFunctionDoc(await this.#ctx.run('function get', true, () => this.#functions.findOne({ _id: functionId })));
  }

  async getByName(namespace: string, name: string): Promise<FunctionRecord | null> {
    return fromFunctionDoc(await this.#ctx.run('function get', true, () => this.#functions.findOne({ namespace, name })));
  }

  async list(namespace?: string): Promise<FunctionRecord[]> {
    const docs = await this.#ctx.run('function list', true, () => this.#functions
      .find(namespace === undefined ? {} : { namespace })
      .sort({ name: 1, namespace: 1 })
      .toArray());
    return docs.map((doc) => JSON.parse(doc.record) as FunctionRecord);
  }

  async update(fn: FunctionRecord): Promise<void> {
    await this.#ctx.run('function update', true, async () => {
      let matched: number;
      try {
        matched = (await this.#functions.replaceOne({ _id: fn.function_id }, functionDoc(fn))).matchedCount;
      } catch (err) {
        if (isDuplicateKey(err)) throw new ConflictError(`a function named "${fn.name}" already exists in namespace "${fn.namespace}"`);
        throw err;
      }
      if (matched === 0) throw new NotFoundError(`function ${fn.function_id} not found`);
    });
  }

  async delete(functionId: string): Promise<boolean> {
    return this.#ctx.run('function delete', true, async () => (await this.#functions.deleteOne({ _id: functionId })).deletedCount === 1);
  }
}

interface CounterDoc {
  _id: string;
  n: number;
}

export class MongoCounterStore implements CounterStore {
  readonly #ctx: MongoContext;
  readonly #counters: Collection<CounterDoc>;

  constructor(db: Db, ctx: MongoContext) {
    this.#ctx = ctx;
    this.#counters = db.collection<CounterDoc>('counters');
  }

  async add(increments: ReadonlyMap<string, number>): Promise<void> {
    const ops = [...increments].filter(([, n]) => n !== 0).map(([id, n]) => ({ updateOne: { filter: { _id: id }, update: { $inc: { n } }, upsert: true } }));
    if (ops.length === 0) return;
    // Atomic per function ($inc with upsert); not idempotent, so retried only
    // when the command never reached a server.
    await this.#ctx.run('counter add', false, () => this.#counters.bulkWrite(ops, { ordered: false }));
  }

  async get(functionId: string): Promise<number> {
    const doc = await this.#ctx.run('counter get', true, () => this.#counters.findOne({ _id: functionId }));
    return doc?.n ?? 0;
  }

  async delete(functionId: string): Promise<void> {
    await this.#ctx.run('counter delete', true, () => this.#counters.deleteOne({ _id: functionId }));
  }
}

interface KvDoc {
  ns: string;
  key: string;
  value: string;
  /** null keeps the key; otherwise the TTL index removes it once past (reads hide it at once). */
  expireAt: Date | null;
}

/** A regular expression matching strings that start with `prefix`, taken literally. */
export function prefixPattern(prefix: string): string {
  return '^' + prefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function live(now: number) {
  return { $or: [{ expireAt: null }, { expireAt: { $gt: new Date(now) } }] };
}

export class MongoKvStore implements KvStore {
  readonly #ctx: MongoContext;
  readonly #kv: Collection<KvDoc>;

  constructor(db: Db, ctx: MongoContext) {
    this.#ctx = ctx;
    this.#kv = db.collection<KvDoc>('kv');
  }

  async get(namespace: string, key: string, now: number): Promise<string | undefined> {
    const doc = await this.#ctx.run('kv get', true, () => this.#kv.findOne({ ns: namespace, key, ...live(now) }, { projection: { value: 1 } }));
    return doc?.value;
  }

  async set(namespace: string, key: string, json: string, ttlSeconds: number | null, now: number): Promise<void> {
    const expireAt = ttlSeconds === null ? null : new Date(now + ttlSeconds * 1000);
    await this.#ctx.run('kv set', true, async () => {
      try {
        await this.#kv.updateOne({ ns: namespace, key }, { $set: { value: json, expireAt } }, { upsert: true });
      } catch (err) {
        // Two upserts of a new key at once: one inserts, the other hits the unique index; write again.
        if (!isDuplicateKey(err)) throw err;
        await this.#kv.updateOne({ ns: namespace, key }, { $set: { value: json, expireAt } });
      }
    });
  }

  async has(namespace: string, key: string, now: number): Promise<boolean> {
    return (await this.#ctx.run('kv has', true, () => this.#kv.countDocuments({ ns: namespace, key, ...live(now) }, { limit: 1 }))) > 0;
  }

  async delete(namespace: string, key: string): Promise<boolean> {
    return this.#ctx.run('kv delete', true, async () => (await this.#kv.deleteOne({ ns: namespace, key })).deletedCount === 1);
  }

  async list(namespace: string, prefix: string, limit: number, now: number): Promise<string[]> {
    const filter = prefix === '' ? { ns: namespace, ...live(now) } : { ns: namespace, key: { $regex: prefixPattern(prefix) }, ...live(now) };
    const docs = await this.#ctx.run('kv list', true, () => this.#kv.find(filter, { projection: { key: 1 } }).sort({ key: 1 }).limit(limit).toArray());
    return docs.map((doc) => doc.key);
  }

  async sweep(now: number): Promise<number> {
    return this.#ctx.run('kv sweep', true, async () => (await this.#kv.deleteMany({ expireAt: { $ne: null, $lte: new Date(now) } })).deletedCount);
  }

  async deleteNamespace(namespace: string): Promise<void> {
    await this.#ctx.run('kv delete namespace', true, () => this.#kv.deleteMany({ ns: namespace }));
  }
}

interface PolicyDoc {
  _id: string;
  policy: NetworkPolicy;
}

interface PolicyChangeDoc {
  _id: string;
  seq: number;
  scope: string;
  actor: string;
  at: string;
  before: NetworkPolicy | null;
  after: NetworkPolicy | null;
}

function copyPolicy(policy: NetworkPolicy | null): NetworkPolicy | null {
  return policy ? { default: policy.default, allow: [...policy.allow], deny: [...policy.deny] } : null;
}

export class MongoPolicyStore implements PolicyStore {
  readonly #ctx: MongoContext;
  readonly #policies: Collection<PolicyDoc>;
  readonly #changes: Collection<PolicyChangeDoc>;
  readonly #sequences: Collection<{ _id: string; v: number }>;

  constructor(db: Db, ctx: MongoContext) {
    this.#ctx = ctx;
    this.#policies = db.collection<PolicyDoc>('policies');
    this.#changes = db.collection<PolicyChangeDoc>('policy_changes');
    this.#sequences = db.collection('sequences');
  }

  async get(scope: PolicyScope): Promise<NetworkPolicy | null> {
    const doc = await this.#ctx.run('policy get', true, () => this.#policies.findOne({ _id: scope }));
    return copyPolicy(doc?.policy ?? null);
  }

  async set(scope: PolicyScope, policy: NetworkPolicy | null, actor: string, now: number): Promise<NetworkPolicyChange> {
    const before = await this.get(scope);
    const after = copyPolicy(policy);
    await this.#ctx.run('policy set', true, async () => {
      if (after) await this.#policies.replaceOne({ _id: scope }, { policy: after }, { upsert: true });
      else await this.#policies.deleteOne({ _id: scope });
    });
    const seq = await this.#ctx.run('policy change sequence', true, async () =>
      (await this.#sequences.findOneAndUpdate({ _id: 'policy_changes' }, { $inc: { v: 1 } }, { upsert: true, returnDocument: 'after' }))!.v);
    const change: NetworkPolicyChange = { id: 'pch_' + randomUUID(), scope, actor, at: new Date(now).toISOString(), before, after };
    await this.#ctx.run('policy change', true, async () => {
      try {
        await this.#changes.insertOne({ _id: change.id, seq, scope, actor, at: change.at, before, after });
      } catch (err) {
        if (!isDuplicateKey(err)) throw err; // our own first attempt got through
      }
    });
    return change;
  }

  async changes(limit: number): Promise<NetworkPolicyChange[]> {
    const docs = await this.#ctx.run('policy changes', true, () => this.#changes.find().sort({ seq: -1 }).limit(limit).toArray());
    return docs.map((doc) => ({ id: doc._id, scope: doc.scope, actor: doc.actor, at: doc.at, before: copyPolicy(doc.before), after: copyPolicy(doc.after) }));
  }
}

export async function ensureRecordIndexes(db: Db): Promise<void> {
  await db.collection('functions').createIndexes([
    { key: { namespace: 1, name: 1 }, name: 'namespace_name', unique: true },
    { key: { name: 1, namespace: 1 }, name: 'name_namespace' },
  ]);
  await db.collection('kv').createIndexes([
    { key: { ns: 1, key: 1 }, name: 'ns_key', unique: true },
    { key: { expireAt: 1 }, name: 'ttl_expireAt', expireAfterSeconds: 0 },
  ]);
  await db.collection('policy_changes').createIndexes([{ key: { seq: -1 }, name: 'seq_newest' }]);
}
