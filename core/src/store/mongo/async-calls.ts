import { randomUUID } from 'node:crypto';
import { Binary, type Collection, type Db, type UpdateFilter, type WriteConcernSettings } from 'mongodb';
import { lostAttempt } from '../../async-call.ts';
import type {
  AcceptResult, AsyncAttempt, AsyncBounds, AsyncCall, AsyncCompletion, AsyncCompletionWrite, AsyncState, AsyncStats, DeadReason, NewAsyncCall,
} from '../../async-call.ts';
import { pendingCallback, type AsyncCallback } from '../../async-callback.ts';
import { recountCorrections, usageDrift, type RecountResult, type UsageDrift } from '../../async-recount.ts';
import type { AsyncCallStore } from '../../stores.ts';
import type { MongoContext } from './context.ts';

// The queue of asynchronous calls on MongoDB (collections async_calls,
// async_usage, async_idempotency). Every write asks for w: 'majority' with
// the journal: the strongest concern a deployment offers (on a standalone
// server, its own journal). Leases are fields (lease_owner, lease_until)
// taken in batches by a conditional updateMany under a claim token (claim)
// and given back by reap(); nothing here relies on
// a TTL index (the stand-in in the tests never deletes by TTL), and
// retention is the sweep's.

const DURABLE: WriteConcernSettings = { w: 'majority', journal: true };
/** The usage document of the queue's total (function ids are UUIDs or names: never this). */
const TOTAL = ':total';

interface CallDoc {
  _id: string;
  function_id: string;
  /** Acceptance order: ms × 1024 + a counter of the accepting process. */
  seq: number;
  state: AsyncState;
  accepted_at: number;
  attempt: number;
  next_at: number;
  lease_owner: string | null;
  lease_until: number | null;
  attempts: AsyncAttempt[];
  dead_reason: DeadReason | null;
  result: AsyncCall['result'];
  bytes: number;
  idem_key: string | null;
  kept_until: number | null;
  finished_at: number | null;
  /** The token of the claim that took it last (claim reads its calls back by it). */
  claim?: string;
  /** The token of the completeMany batch that wrote its last attempt's end. */
  done?: string;
  /** Headers as [name, value] pairs: a header name may hold a `.` or `$`, which field names should not. */
  request: { method: string; path: string; headers: Array<[string, string]>; body: Binary | null } | null;
  /** Absent on calls stored before callbacks existed. */
  callback?: AsyncCallback | null;
}

interface UsageDoc {
  _id: string;
  bytes: number;
}

interface KeyDoc {
  _id: string;
  call_id: string;
  until: number;
}

function toCall(doc: CallDoc): AsyncCall {
  return {
    id: doc._id,
    function_id: doc.function_id,
    state: doc.state,
    accepted_at: doc.accepted_at,
    attempt: doc.attempt,
    next_at: doc.next_at,
    lease_owner: doc.lease_owner,
    lease_until: doc.lease_until,
    attempts: doc.attempts,
    dead_reason: doc.dead_reason,
    result: doc.result,
    bytes: doc.bytes,
    idempotency_key: doc.idem_key,
    kept_until: doc.kept_until,
    finished_at: doc.finished_at,
    request: doc.request === null ? null : {
      method: doc.request.method,
      path: doc.request.path,
      headers: Object.fromEntries(doc.request.headers),
      body: doc.request.body === null ? null : Buffer.from(doc.request.body.buffer),
    },
    callback: doc.callback ?? null,
  };
}

/** The update that records an attempt's end; `done` is the completing batch's token (completeMany). */
function completionUpdate(c: AsyncCompletion, now: number, token: string): UpdateFilter<CallDoc> {
  const push = c.attempt === null ? {} : { $push: { attempts: c.attempt } };
  if (c.state === 'queued') return { $set: { state: 'queued', next_at: c.next_at, lease_owner: null, lease_until: null, done: token }, ...push };
  return {
    $set: {
      state: c.state, lease_owner: null, lease_until: null,
      dead_reason: c.state === 'dead' ? c.reason : null,
      result: c.result, kept_until: c.kept_until, finished_at: now, done: token,
      ...(c.state !== 'dead' ? { request: null } : {}),
    },
    ...push,
  };
}

function isDuplicateKey(err: unknown): boolean {
  let e: unknown = err;
  while (e !== undefined && e !== null) {
    if ((e as { code?: unknown }).code === 11000) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

let counter = 0;

export class MongoAsyncCallStore implements AsyncCallStore {
  readonly #ctx: MongoContext;
  readonly #calls: Collection<CallDoc>;
  readonly #usage: Collection<UsageDoc>;
  readonly #keys: Collection<KeyDoc>;

  constructor(db: Db, ctx: MongoContext) {
    this.#ctx = ctx;
    this.#calls = db.collection<CallDoc>('async_calls', { writeConcern: DURABLE });
    this.#usage = db.collection<UsageDoc>('async_usage', { writeConcern: DURABLE });
    this.#keys = db.collection<KeyDoc>('async_idempotency', { writeConcern: DURABLE });
  }

  async accept(call: NewAsyncCall, bounds: AsyncBounds, now: number): Promise<AcceptResult> {
    const keyId = call.idempotency_key === null ? null : `${call.function_id}\n${call.idempotency_key}`;
    if (keyId !== null) {
      // The key is taken first, by its _id: of two replicas accepting the same key at once, one inserts.
      const first = await this.#takeKey(keyId, call.id, now, bounds.idempotencyWindowMs);
      if (first !== null) return { outcome: 'duplicate', id: first };
    }
    const refusal = await this.#reserve(call.function_id, call.bytes, bounds.functionBytes, 'function')
      ?? await this.#reserve(TOTAL, call.bytes, bounds.totalBytes, 'total', call.function_id);
    if (refusal !== null) {
      if (keyId !== null) await this.#ctx.run('async key release', true, () => this.#keys.deleteOne({ _id: keyId, call_id: call.id }));
      return refusal;
    }
    const doc: CallDoc = {
      _id: call.id,
      function_id: call.function_id,
      seq: call.accepted_at * 1024 + (counter++ % 1024),
      state: 'queued',
      accepted_at: call.accepted_at,
      attempt: 0,
      next_at: call.accepted_at,
      lease_owner: null,
      lease_until: null,
      attempts: [],
      dead_reason: null,
      result: null,
      bytes: call.bytes,
      idem_key: call.idempotency_key,
      kept_until: null,
      finished_at: null,
      request: {
        method: call.request.method,
        path: call.request.path,
        headers: Object.entries(call.request.headers),
        body: call.request.body === null ? null : new Binary(call.request.body),
      },
      callback: call.callback_url === null ? null : pendingCallback(call.callback_url),
    };
    try {
      // Idempotent by its _id: a resend after a lost answer finds it stored.
      await this.#ctx.run('async accept', true, async () => {
        try {
          await this.#calls.insertOne(doc);
        } catch (err) {
          if (!isDuplicateKey(err)) throw err;
        }
      });
    } catch (err) {
      await this.#release(call.function_id, call.bytes).catch(() => undefined);
      throw err;
    }
    return { outcome: 'accepted', call: toCall(doc) };
  }

  async dueFunctions(now: number, limit: number): Promise<string[]> {
    const ids = await this.#ctx.run('async due', true, () => this.#calls.distinct('function_id', { state: 'queued', next_at: { $lte: now } }));
    return (ids as string[]).slice(0, limit);
  }

  async claim(functionId: string, owner: string, now: number, leaseUntil: number, max: number): Promise<AsyncCall[]> {
    // Three round trips for up to `max` calls (rather than one findOneAndUpdate each): the oldest due ids; one
    // updateMany that takes those still queued (each document's update is atomic, so a call another
    // gateway took in between is not matched: one lease per call) and marks them with this claim's
    // token; the taken documents read back by that token. Resent on a lost answer: the resend matches
    // nothing new, and the token still finds what the first send took.
    const due = await this.#ctx.run('async claim', true, () =>
      this.#calls.find({ function_id: functionId, state: 'queued', next_at: { $lte: now } }, { projection: { _id: 1 } }).sort({ seq: 1 }).limit(max).toArray());
    if (due.length === 0) return [];
    const ids = due.map((d) => d._id);
    const token = randomUUID();
    await this.#ctx.run('async claim', true, () =>
      this.#calls.updateMany(
        { _id: { $in: ids }, state: 'queued', next_at: { $lte: now } },
        { $set: { state: 'running', lease_owner: owner, lease_until: leaseUntil, claim: token }, $inc: { attempt: 1 } },
      ));
    const docs = await this.#ctx.run('async claim', true, () =>
      this.#calls.find({ _id: { $in: ids }, claim: token, state: 'running', lease_owner: owner }).toArray());
    return docs.sort((a, b) => a.seq - b.seq).map(toCall);
  }

  async completeMany(writes: readonly AsyncCompletionWrite[], now: number): Promise<boolean[]> {
    if (writes.length === 0) return [];
    // One bulkWrite for the batch, each update conditional on its lease; the batch's token marks the
    // documents it wrote, so which ones were written is known even when a lease was lost or the
    // bulkWrite was resent after a lost answer.
    const token = randomUUID();
    const ops = writes.map((w) => ({ updateOne: { filter: { _id: w.id, state: 'running' as const, lease_owner: w.owner, attempt: w.attempt }, update: completionUpdate(w.completion, now, token) } }));
    const r = await this.#ctx.run('async complete', true, () => this.#calls.bulkWrite(ops, { ordered: false }));
    let written: boolean[];
    if (r.matchedCount === writes.length) {
      written = writes.map(() => true);
    } else {
      const found = await this.#ctx.run('async complete', true, () =>
        this.#calls.find({ _id: { $in: writes.map((w) => w.id) }, done: token }, { projection: { _id: 1 } }).toArray());
      const ids = new Set(found.map((d) => d._id));
      written = writes.map((w) => ids.has(w.id));
    }
    // A finished call no longer holds its request: its bytes leave the queue's counts, once per function per batch.
    const released = new Map<string, number>();
    writes.forEach((w, i) => {
      if (written[i] && (w.completion.state === 'succeeded' || w.completion.state === 'failed')) released.set(w.function_id, (released.get(w.function_id) ?? 0) + w.bytes);
    });
    if (released.size > 0) await this.#releaseMany(released);
    return written;
  }

  async reap(now: number): Promise<number> {
    const expired = await this.#ctx.run('async reap', true, () =>
      this.#calls.find({ state: 'running', lease_until: { $lt: now } }, { projection: { attempt: 1, lease_until: 1 } }).limit(1000).toArray());
    let n = 0;
    for (const doc of expired) {
      const r = await this.#ctx.run('async reap', true, () =>
        this.#calls.updateOne(
          { _id: doc._id, state: 'running', attempt: doc.attempt, lease_until: doc.lease_until },
          { $set: { state: 'queued', next_at: now, lease_owner: null, lease_until: null }, $push: { attempts: lostAttempt(doc.attempt, doc.lease_until!) } },
        ));
      n += r.modifiedCount;
    }
    return n;
  }

  async get(functionId: string, id: string): Promise<AsyncCall | null> {
    const doc = await this.#ctx.run('async get', true, () => this.#calls.findOne({ _id: id, function_id: functionId }));
    return doc === null ? null : toCall(doc);
  }

  async list(functionId: string, states: readonly AsyncState[], limit: number): Promise<AsyncCall[]> {
    if (states.length === 0) return [];
    const docs = await this.#ctx.run('async list', true, () =>
      this.#calls.find({ function_id: functionId, state: { $in: [...states] } }).sort({ seq: 1 }).limit(limit).toArray());
    return docs.map(toCall);
  }

  async requeue(functionId: string, ids: readonly string[] | 'all', now: number): Promise<number> {
    const filter = ids === 'all' ? { function_id: functionId, state: 'dead' as const } : { function_id: functionId, state: 'dead' as const, _id: { $in: [...ids] } };
    const r = await this.#ctx.run('async requeue', true, () =>
      this.#calls.updateMany(filter, { $set: { state: 'queued', attempt: 0, next_at: now, accepted_at: now, dead_reason: null, result: null, kept_until: null, finished_at: null } }));
    return r.modifiedCount;
  }

  async setCallback(functionId: string, id: string, callback: AsyncCallback): Promise<boolean> {
    const r = await this.#ctx.run('async callback', true, () =>
      this.#calls.updateOne({ _id: id, function_id: functionId, callback: { $ne: null } }, { $set: { callback } }));
    return r.matchedCount === 1;
  }

  async claimCallbacks(now: number, staleBefore: number, leaseUntil: number, max: number): Promise<AsyncCall[]> {
    const free = {
      'callback.state': 'pending',
      state: { $in: ['succeeded', 'failed', 'dead'] as AsyncState[] },
      $or: [{ 'callback.lease_until': { $lt: now } }, { 'callback.lease_until': null, finished_at: { $lt: staleBefore } }],
    };
    const found = await this.#ctx.run('async callbacks', true, () => this.#calls.find(free, { projection: { _id: 1 } }).sort({ finished_at: 1 }).limit(max).toArray());
    const out: AsyncCall[] = [];
    for (const { _id } of found) {
      // Taken by whoever updates it first: the filter says it is still free.
      const doc = await this.#ctx.run('async callbacks', false, () =>
        this.#calls.findOneAndUpdate({ _id, ...free }, { $set: { 'callback.lease_until': leaseUntil } }, { returnDocument: 'after' }));
      if (doc !== null) out.push(toCall(doc));
    }
    return out;
  }

  async stats(): Promise<AsyncStats> {
    const [queued, running, dead, oldest] = await Promise.all([
      this.#ctx.run('async stats', true, () => this.#calls.countDocuments({ state: 'queued' })),
      this.#ctx.run('async stats', true, () => this.#calls.countDocuments({ state: 'running' })),
      this.#ctx.run('async stats', true, () => this.#calls.countDocuments({ state: 'dead' })),
      this.#ctx.run('async stats', true, () => this.#calls.find({ state: 'queued' }, { projection: { accepted_at: 1 } }).sort({ accepted_at: 1 }).limit(1).next()),
    ]);
    return { queued, running, dead, oldestQueuedAt: oldest?.accepted_at ?? null };
  }

  async sweep(now: number): Promise<number> {
    const dead = await this.#ctx.run('async sweep', true, () =>
      this.#calls.find({ state: 'dead', kept_until: { $lte: now } }, { projection: { function_id: 1, bytes: 1 } }).toArray());
    let n = 0;
    for (const d of dead) {
      const r = await this.#ctx.run('async sweep', true, () => this.#calls.deleteOne({ _id: d._id, state: 'dead' }));
      if (r.deletedCount === 1) await this.#release(d.function_id, d.bytes);
      n += r.deletedCount;
    }
    await this.#ctx.run('async sweep', true, () => this.#keys.deleteMany({ until: { $lte: now } }));
    const r = await this.#ctx.run('async sweep', true, () => this.#calls.deleteMany({ state: { $in: ['succeeded', 'failed'] }, kept_until: { $lte: now } }));
    return n + r.deletedCount;
  }

  async deleteFunction(functionId: string): Promise<number> {
    const usage = await this.#ctx.run('async delete', true, () => this.#usage.findOneAndDelete({ _id: functionId }));
    if (usage !== null && usage.bytes > 0) await this.#ctx.run('async delete', false, () => this.#usage.updateOne({ _id: TOTAL }, { $inc: { bytes: -usage.bytes } }));
    const prefix = `${functionId}\n`;
    await this.#ctx.run('async delete', true, () => this.#keys.deleteMany({ _id: { $gte: prefix, $lt: `${functionId}\u000b` } }));
    const r = await this.#ctx.run('async delete', true, () => this.#calls.deleteMany({ function_id: functionId }));
    return r.deletedCount;
  }

  async recount(previous: UsageDrift): Promise<RecountResult> {
    const counts = new Map((await this.#ctx.run('async recount', true, () => this.#usage.find({}).toArray())).map((u) => [u._id, u.bytes] as const));
    const held = await this.#ctx.run('async recount', true, () =>
      this.#calls.find({ state: { $in: ['queued', 'running', 'dead'] } }, { projection: { function_id: 1, bytes: 1 } }).toArray());
    const result = recountCorrections(previous, usageDrift(counts, held, TOTAL), counts);
    const applied = [];
    const drift = new Map(result.drift);
    for (const c of result.corrections) {
      // Only if the count is still what this pass read: another replica's recount (or a write) since
      // then leaves it to the next pass, which reads it again: never corrected twice.
      const r = await this.#ctx.run('async recount', false, () => this.#usage.updateOne({ _id: c.id, bytes: c.counted }, { $inc: { bytes: c.by } }));
      if (r.modifiedCount === 1) applied.push(c);
      else drift.set(c.id, -c.by);
    }
    return { drift, corrections: applied };
  }

  /** The key's call when it was seen within its window, else null (the key is now this call's). */
  async #takeKey(keyId: string, callId: string, now: number, windowMs: number): Promise<string | null> {
    for (let i = 0; i < 3; i++) {
      try {
        await this.#ctx.run('async key', false, () => this.#keys.insertOne({ _id: keyId, call_id: callId, until: now + windowMs }));
        return null;
      } catch (err) {
        if (!isDuplicateKey(err)) throw err;
      }
      const seen = await this.#ctx.run('async key', true, () => this.#keys.findOne({ _id: keyId }));
      if (seen !== null && seen.until > now) return seen.call_id;
      // An expired key is taken over by whoever swaps it first.
      const taken = await this.#ctx.run('async key', false, () =>
        this.#keys.updateOne({ _id: keyId, until: { $lte: now } }, { $set: { call_id: callId, until: now + windowMs } }));
      if (taken.modifiedCount === 1) return null;
    }
    const seen = await this.#ctx.run('async key', true, () => this.#keys.findOne({ _id: keyId }));
    return seen?.call_id ?? callId;
  }

  /** Adds `bytes` to a usage unless it would pass `limit` (a conditional $inc); the refusal otherwise. */
  async #reserve(id: string, bytes: number, limit: number, bound: 'function' | 'total', undoFunction?: string): Promise<AcceptResult | null> {
    await this.#ctx.run('async usage', true, () => this.#usage.updateOne({ _id: id }, { $setOnInsert: { bytes: 0 } }, { upsert: true }));
    const r = await this.#ctx.run('async usage', false, () => this.#usage.updateOne({ _id: id, bytes: { $lte: limit - bytes } }, { $inc: { bytes } }));
    if (r.modifiedCount === 1) return null;
    if (undoFunction !== undefined) await this.#ctx.run('async usage', false, () => this.#usage.updateOne({ _id: undoFunction }, { $inc: { bytes: -bytes } }));
    const used = (await this.#ctx.run('async usage', true, () => this.#usage.findOne({ _id: id })))?.bytes ?? 0;
    return { outcome: 'full', bound, used, limit };
  }

  async #release(functionId: string, bytes: number): Promise<void> {
    await this.#releaseMany(new Map([[functionId, bytes]]));
  }

  /** Takes bytes off each function's count and their sum off the total, in one bulkWrite. */
  async #releaseMany(bytesByFunction: ReadonlyMap<string, number>): Promise<void> {
    let total = 0;
    const ops = [...bytesByFunction].map(([id, bytes]) => {
      total += bytes;
      return { updateOne: { filter: { _id: id }, update: { $inc: { bytes: -bytes } } } };
    });
    ops.push({ updateOne: { filter: { _id: TOTAL }, update: { $inc: { bytes: -total } } } });
    await this.#ctx.run('async usage', false, () => this.#usage.bulkWrite(ops));
  }
}

export async function ensureAsyncCallIndexes(db: Db): Promise<void> {
  await db.collection('async_calls').createIndexes([
    { key: { function_id: 1, state: 1, seq: 1 }, name: 'function_state_seq' },
    { key: { state: 1, next_at: 1 }, name: 'state_next' },
    { key: { state: 1, lease_until: 1 }, name: 'state_lease' },
    { key: { kept_until: 1 }, name: 'kept_until' },
    { key: { 'callback.state': 1, finished_at: 1 }, name: 'callback_state' },
  ]);
}
