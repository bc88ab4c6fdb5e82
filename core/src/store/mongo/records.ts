import { randomUUID } from 'node:crypto';
import { MongoServerError, type Collection, type Db } from 'mongodb';
import { ConflictError, NotFoundError, StoreError } from '../../errors.ts';
import { checkKvQuota, kvEntryBytes, type KvQuota, type KvSetResult, type KvUsage } from '../../kv-quota.ts';
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
  /** null keeps the key; otherwise reads hide it once past, and a write of its function or the sweep deletes it. */
  expireAt: Date | null;
  /** UTF-8 key + JSON value (kvEntryBytes). */
  bytes: number;
}

/** Per function (KV namespace): the stored keys and bytes, expired ones included until deleted. */
interface KvUsageDoc {
  _id: string;
  /** The Kubernetes namespace whose total a quota bounds (KvQuota.group), once a write named one. */
  grp?: string | null;
  keys: number;
  bytes: number;
}

/** A regular expression matching strings that start with `prefix`, taken literally. */
export function prefixPattern(prefix: string): string {
  return '^' + prefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function live(now: number) {
  return { $or: [{ expireAt: null }, { expireAt: { $gt: new Date(now) } }] };
}

function expired(now: number) {
  return { expireAt: { $ne: null, $lte: new Date(now) } };
}

/** Expired keys a write deletes before it checks the quota (the rest, if any, are subtracted by an aggregation). */
const PURGE_PER_WRITE = 100;

// Usage without a scan per write, and exact for what a reader sees: the
// usage document counts the STORED keys and bytes ($inc with every write,
// delete and sweep deletion, each an atomic single-document operation), and
// live usage = stored - the function's expired-but-stored keys, summed over
// the (ns, expireAt) index range `expireAt <= now` (short: a write deletes
// up to PURGE_PER_WRITE of them first, the gateway's sweep the rest). No TTL
// index on kv: the TTL monitor would delete documents without the counter
// knowing. The quota is reserved before the write by a conditional $inc
// (`bytes <= limit - growth`), so two gateway replicas writing for the same
// function cannot both pass a check that only one fits: docs/kv.md "Quotas"
// gives the bounds.
export class MongoKvStore implements KvStore {
  readonly #ctx: MongoContext;
  readonly #kv: Collection<KvDoc>;
  readonly #usage: Collection<KvUsageDoc>;

  constructor(db: Db, ctx: MongoContext) {
    this.#ctx = ctx;
    this.#kv = db.collection<KvDoc>('kv');
    this.#usage = db.collection<KvUsageDoc>('kv_usage');
  }

  async get(namespace: string, key: string, now: number): Promise<string | undefined> {
    const doc = await this.#ctx.run('kv get', true, () => this.#kv.findOne({ ns: namespace, key, ...live(now) }, { projection: { value: 1 } }));
    return doc?.value;
  }

  async set(namespace: string, key: string, json: string, ttlSeconds: number | null, now: number, quota?: KvQuota): Promise<KvSetResult> {
    const expireAt = ttlSeconds === null ? null : new Date(now + ttlSeconds * 1000);
    const bytes = kvEntryBytes(key, json);
    await this.#purgeExpired(namespace, now, PURGE_PER_WRITE);
    let reserved = { keys: 0, bytes: 0 };
    if (quota !== undefined) {
      const old = await this.#ctx.run('kv set', true, () => this.#kv.findOne({ ns: namespace, key }, { projection: { bytes: 1, expireAt: 1 } }));
      const oldLive = old !== null && (old.expireAt === null || old.expireAt.getTime() > now);
      const dKeys = oldLive ? 0 : 1;
      const dBytes = bytes - (oldLive ? old.bytes : 0);
      const stale = await this.#expiredSum([namespace], now);
      const stored = await this.#stored(namespace);
      const refusal = checkKvQuota({ keys: stored.keys - stale.keys, bytes: stored.bytes - stale.bytes }, dKeys, dBytes, quota);
      if (refusal !== null) return { stored: false, ...refusal };
      if (quota.group?.maxBytes !== undefined && dBytes > 0) {
        const total = (await this.groupUsage(quota.group.id, now)).bytes;
        if (total + dBytes > quota.group.maxBytes) return { stored: false, quota: 'namespace_kv_bytes', used: total, limit: quota.group.maxBytes };
      }
      // The reservation: the stored counts change by what this write adds
      // (an expired old key is still stored), on condition that the live
      // counts after it stay within the quota.
      reserved = { keys: old === null ? 1 : 0, bytes: bytes - (old?.bytes ?? 0) };
      const filter: Record<string, unknown> = { _id: namespace };
      if (dKeys > 0) filter['keys'] = { $lte: quota.maxKeys + stale.keys - dKeys };
      if (dBytes > 0) filter['bytes'] = { $lte: quota.maxBytes + stale.bytes - dBytes };
      const group = quota.group === undefined ? {} : { $set: { grp: quota.group.id } };
      let took = false;
      try {
        const result = await this.#ctx.run('kv quota reserve', false, () =>
          this.#usage.updateOne(filter, { $inc: { keys: reserved.keys, bytes: reserved.bytes }, ...group }, { upsert: stored.keys === 0 && stored.bytes === 0 }));
        took = result.matchedCount + result.upsertedCount > 0;
      } catch (err) {
        if (!isDuplicateKey(err) && !(err instanceof StoreError && isDuplicateKey(err.cause))) throw err;
      }
      if (!took) {
        // Another replica's write took the room between the check and the reservation.
        const now2 = await this.usage(namespace, now);
        const again = checkKvQuota(now2, dKeys, dBytes, quota) ?? { quota: 'kv_bytes' as const, used: now2.bytes, limit: quota.maxBytes };
        return { stored: false, ...again };
      }
    }
    let before: { bytes?: number } | null;
    try {
      before = await this.#ctx.run('kv set', false, () =>
        this.#kv.findOneAndUpdate({ ns: namespace, key }, { $set: { value: json, expireAt, bytes } }, { upsert: true, returnDocument: 'before', projection: { bytes: 1 } }));
    } catch (err) {
      // Two upserts of a new key at once: one inserts, the other hits the unique index; write again.
      if (!isDuplicateKey(err) && !(err instanceof StoreError && isDuplicateKey(err.cause))) throw err;
      before = await this.#ctx.run('kv set', false, () =>
        this.#kv.findOneAndUpdate({ ns: namespace, key }, { $set: { value: json, expireAt, bytes } }, { returnDocument: 'before', projection: { bytes: 1 } }));
    }
    const actual = before === null ? { keys: 1, bytes } : { keys: 0, bytes: bytes - (before.bytes ?? 0) };
    // The reservation set the group already; this corrects the count only (nothing when the estimate held).
    await this.#addUsage(namespace, actual.keys - reserved.keys, actual.bytes - reserved.bytes);
    return { stored: true };
  }

  async usage(namespace: string, now: number): Promise<KvUsage> {
    const stale = await this.#expiredSum([namespace], now);
    const stored = await this.#stored(namespace);
    return { keys: stored.keys - stale.keys, bytes: stored.bytes - stale.bytes };
  }

  async groupUsage(group: string, now: number): Promise<KvUsage> {
    const docs = await this.#ctx.run('kv group usage', true, () => this.#usage.find({ grp: group }).toArray());
    const stale = await this.#expiredSum(docs.map((d) => d._id), now);
    let keys = 0;
    let bytes = 0;
    for (const d of docs) {
      keys += d.keys;
      bytes += d.bytes;
    }
    return { keys: keys - stale.keys, bytes: bytes - stale.bytes };
  }

  async has(namespace: string, key: string, now: number): Promise<boolean> {
    return (await this.#ctx.run('kv has', true, () => this.#kv.countDocuments({ ns: namespace, key, ...live(now) }, { limit: 1 }))) > 0;
  }

  async delete(namespace: string, key: string): Promise<boolean> {
    const doc = await this.#ctx.run('kv delete', true, () => this.#kv.findOneAndDelete({ ns: namespace, key }, { projection: { bytes: 1 } }));
    if (doc === null) return false;
    await this.#addUsage(namespace, -1, -(doc.bytes ?? 0));
    return true;
  }

  async list(namespace: string, prefix: string, limit: number, now: number): Promise<string[]> {
    const filter = prefix === '' ? { ns: namespace, ...live(now) } : { ns: namespace, key: { $regex: prefixPattern(prefix) }, ...live(now) };
    const docs = await this.#ctx.run('kv list', true, () => this.#kv.find(filter, { projection: { key: 1 } }).sort({ key: 1 }).limit(limit).toArray());
    return docs.map((doc) => doc.key);
  }

  async sweep(now: number): Promise<number> {
    let deleted = 0;
    for (;;) {
      const batch = await this.#ctx.run('kv sweep', true, () => this.#kv.find(expired(now), { projection: { _id: 1, ns: 1 } }).limit(1000).toArray());
      const freed = new Map<string, KvUsage>();
      for (const doc of batch) {
        const gone = await this.#ctx.run('kv sweep', true, () => this.#kv.findOneAndDelete({ _id: doc._id, ...expired(now) }, { projection: { bytes: 1 } }));
        if (gone === null) continue;
        deleted++;
        const f = freed.get(doc.ns) ?? { keys: 0, bytes: 0 };
        freed.set(doc.ns, { keys: f.keys + 1, bytes: f.bytes + (gone.bytes ?? 0) });
      }
      for (const [ns, f] of freed) await this.#addUsage(ns, -f.keys, -f.bytes);
      if (batch.length < 1000) return deleted;
    }
  }

  async deleteNamespace(namespace: string): Promise<void> {
    await this.#ctx.run('kv delete namespace', true, () => this.#kv.deleteMany({ ns: namespace }));
    await this.#ctx.run('kv delete namespace', true, () => this.#usage.deleteOne({ _id: namespace }));
  }

  /** Deletes up to `limit` of the namespace's expired keys, each once (findOneAndDelete), and takes them off its usage. */
  async #purgeExpired(namespace: string, now: number, limit: number): Promise<void> {
    const docs = await this.#ctx.run('kv purge', true, () => this.#kv.find({ ns: namespace, ...expired(now) }, { projection: { _id: 1 } }).limit(limit).toArray());
    let keys = 0;
    let bytes = 0;
    for (const doc of docs) {
      const gone = await this.#ctx.run('kv purge', true, () => this.#kv.findOneAndDelete({ _id: doc._id, ...expired(now) }, { projection: { bytes: 1 } }));
      if (gone === null) continue;
      keys++;
      bytes += gone.bytes ?? 0;
    }
    await this.#addUsage(namespace, -keys, -bytes);
  }

  async #expiredSum(namespaces: string[], now: number): Promise<KvUsage> {
    if (namespaces.length === 0) return { keys: 0, bytes: 0 };
    const rows = await this.#ctx.run('kv usage', true, () => this.#kv.aggregate<{ keys: number; bytes: number }>([
      { $match: { ns: namespaces.length === 1 ? namespaces[0] : { $in: namespaces }, ...expired(now) } },
      { $group: { _id: null, keys: { $sum: 1 }, bytes: { $sum: '$bytes' } } },
    ]).toArray());
    return rows[0] === undefined ? { keys: 0, bytes: 0 } : { keys: rows[0].keys, bytes: rows[0].bytes };
  }

  async #stored(namespace: string): Promise<KvUsage> {
    const doc = await this.#ctx.run('kv usage', true, () => this.#usage.findOne({ _id: namespace }));
    return doc === null ? { keys: 0, bytes: 0 } : { keys: doc.keys, bytes: doc.bytes };
  }

  async #addUsage(namespace: string, keys: number, bytes: number, group?: string): Promise<void> {
    if (keys === 0 && bytes === 0 && group === undefined) return;
    const update = group === undefined ? { $inc: { keys, bytes } } : { $inc: { keys, bytes }, $set: { grp: group } };
    // Not idempotent: retried only when the command never reached a server.
    await this.#ctx.run('kv usage', false, () => this.#usage.updateOne({ _id: namespace }, update, { upsert: true }));
  }
}

/**
 * Brings KV written before quotas existed under them, once: documents
 * without `bytes` get it, and then every function's usage is recounted.
 * Stores no more than the documents' own size; run at open.
 */
async function backfillKvUsage(db: Db): Promise<void> {
  const kv = db.collection<KvDoc>('kv');
  let changed = false;
  for (;;) {
    const batch = await kv.find({ bytes: { $exists: false } }, { projection: { _id: 1, key: 1, value: 1 } }).limit(500).toArray();
    if (batch.length === 0) break;
    changed = true;
    await kv.bulkWrite(batch.map((doc) => ({ updateOne: { filter: { _id: doc._id }, update: { $set: { bytes: kvEntryBytes(doc.key, doc.value) } } } })), { ordered: false });
  }
  if (!changed) return;
  const totals = await kv.aggregate<{ _id: string; keys: number; bytes: number }>([{ $group: { _id: '$ns', keys: { $sum: 1 }, bytes: { $sum: '$bytes' } } }]).toArray();
  const usage = db.collection<KvUsageDoc>('kv_usage');
  for (const t of totals) await usage.updateOne({ _id: t._id }, { $set: { keys: t.keys, bytes: t.bytes } }, { upsert: true });
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

  async changeScopes(limit: number): Promise<Array<Pick<NetworkPolicyChange, 'id' | 'scope'>>> {
    const docs = await this.#ctx.run('policy change scopes', true, () => this.#changes.find({}, { projection: { _id: 1, scope: 1 } }).sort({ seq: -1 }).limit(limit).toArray());
    return docs.map((doc) => ({ id: doc._id, scope: doc.scope }));
  }
}

export async function ensureRecordIndexes(db: Db): Promise<void> {
  await db.collection('functions').createIndexes([
    { key: { namespace: 1, name: 1 }, name: 'namespace_name', unique: true },
    { key: { name: 1, namespace: 1 }, name: 'name_namespace' },
  ]);
  // The TTL index of earlier releases deleted keys behind the usage
  // counters' back (MongoKvStore): dropped; the gateway's sweep deletes instead.
  if ((await db.collection('kv').indexes().catch(() => [])).some((index) => index.name === 'ttl_expireAt')) {
    await db.collection('kv').dropIndex('ttl_expireAt');
  }
  await db.collection('kv').createIndexes([
    { key: { ns: 1, key: 1 }, name: 'ns_key', unique: true },
    { key: { ns: 1, expireAt: 1 }, name: 'ns_expireAt' },
    { key: { expireAt: 1 }, name: 'expireAt' },
  ]);
  await db.collection('kv_usage').createIndexes([{ key: { grp: 1 }, name: 'grp' }]);
  await backfillKvUsage(db);
  await db.collection('policy_changes').createIndexes([{ key: { seq: -1 }, name: 'seq_newest' }]);
}
