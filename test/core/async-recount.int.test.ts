import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { MongoClient, type Db } from 'mongodb';
import { newAsyncId, requestBytes, type AsyncBounds, type AsyncRequest, type UsageDrift } from '../../core/src/index.ts';
import { openMongoStores } from '../../core/src/store/mongo/index.ts';
import type { Stores } from '../../core/src/stores.ts';
import { startMongoServer, type MongoTestServer } from '../helpers/mongo-server.ts';

// The recount of the async queue's byte counts on MongoDB (the wire-protocol stand-in): the states a
// gateway killed between two writes leaves (a reservation whose insert never landed; a finished call
// whose release never came) are rebuilt with the driver the way the store writes them. Without the
// recount the leaked bytes count forever, and a function's queue that holds nothing refuses calls.

const T0 = Date.UTC(2100, 0, 1);
const REQUEST: AsyncRequest = { method: 'POST', path: '/', headers: { 'content-type': 'text/plain' }, body: Buffer.alloc(100, 1) };
const BYTES = requestBytes(REQUEST);
const BOUNDS: AsyncBounds = { functionBytes: 3 * BYTES, totalBytes: 1 << 30, idempotencyWindowMs: 60_000 };

describe('async byte recount on MongoDB (the stand-in)', () => {
  let server: MongoTestServer;
  let client: MongoClient;
  let stores: Stores;
  let db: Db;

  before(async () => {
    server = await startMongoServer();
    client = await MongoClient.connect(server.url);
  });
  after(async () => {
    await client?.close();
    await server?.stop();
  });
  beforeEach(async () => {
    const name = 'fnhost_recount_' + randomUUID().slice(0, 8);
    stores = await openMongoStores({ url: server.url, dbName: name, retry: { log: () => {} } });
    db = client.db(name);
  });
  afterEach(async () => {
    await stores.close();
  });

  const accept = (fn: string) =>
    stores.asyncCalls.accept({ id: newAsyncId(), function_id: fn, accepted_at: T0, request: REQUEST, bytes: BYTES, idempotency_key: null, callback_url: null }, BOUNDS, T0);
  const counts = async () => Object.fromEntries((await db.collection<{ _id: string; bytes: number }>('async_usage').find({}).toArray()).map((u) => [u._id, u.bytes]));
  /** What a gateway killed after #reserve and before insertOne left: the bytes counted, no call. */
  const leakReservation = async (fn: string, bytes: number) => {
    await db.collection<{ _id: string; bytes: number }>('async_usage').updateOne({ _id: fn }, { $inc: { bytes } });
    await db.collection<{ _id: string; bytes: number }>('async_usage').updateOne({ _id: ':total' }, { $inc: { bytes } });
  };
  const recountTwice = async () => {
    const first = await stores.asyncCalls.recount(new Map());
    return stores.asyncCalls.recount(first.drift);
  };

  it('exact counts are left alone', async () => {
    for (let i = 0; i < 2; i++) expect((await accept('f1')).outcome).to.equal('accepted');
    expect((await accept('f2')).outcome).to.equal('accepted');
    const second = await recountTwice();
    expect(second.corrections).to.deep.equal([]);
    expect([...second.drift]).to.deep.equal([]);
    expect(await counts()).to.deep.equal({ f1: 2 * BYTES, f2: BYTES, ':total': 3 * BYTES });
  });

  it('a reservation whose insert never landed: the function refuses calls until two recounts agree, then takes them again', async () => {
    expect((await accept('f1')).outcome).to.equal('accepted');
    await leakReservation('f1', 2 * BYTES);
    // The queue holds one call of three, yet counts three: full.
    expect(await accept('f1')).to.deep.include({ outcome: 'full', bound: 'function' });
    const first = await stores.asyncCalls.recount(new Map());
    expect(first.corrections, 'one pass never corrects').to.deep.equal([]);
    expect([...first.drift]).to.deep.equal([['f1', 2 * BYTES], [':total', 2 * BYTES]]);
    const second = await stores.asyncCalls.recount(first.drift);
    expect(second.corrections).to.deep.equal([
      { id: 'f1', counted: 3 * BYTES, by: -2 * BYTES },
      { id: ':total', counted: 3 * BYTES, by: -2 * BYTES },
    ]);
    expect(await counts()).to.deep.equal({ f1: BYTES, ':total': BYTES });
    expect((await accept('f1')).outcome).to.equal('accepted');
    // A third pass finds nothing to do: corrected once.
    expect((await stores.asyncCalls.recount(second.drift)).corrections).to.deep.equal([]);
  });

  it("a finished call whose release never came is recounted; so is a leak that stays while other calls come and go", async () => {
    for (let i = 0; i < 3; i++) expect((await accept('f1')).outcome).to.equal('accepted');
    const [call] = await stores.asyncCalls.claim('f1', 'gw-dead', T0, T0 + 60_000, 1);
    // complete()'s finishing update, without the release after it (the gateway was killed between).
    await db.collection('async_calls').updateOne({ _id: call!.id as never }, { $set: { state: 'succeeded', request: null, lease_owner: null, lease_until: null, finished_at: T0 } });
    const first = await stores.asyncCalls.recount(new Map());
    expect([...first.drift]).to.deep.equal([['f1', BYTES], [':total', BYTES]]);
    // Between the passes another call is claimed and completed whole: the leak's drift is the same.
    const [other] = await stores.asyncCalls.claim('f1', 'gw-live', T0, T0 + 60_000, 1);
    expect(await stores.asyncCalls.completeMany([{ id: other!.id, function_id: 'f1', bytes: other!.bytes, owner: 'gw-live', attempt: 1, completion: { state: 'succeeded', attempt: { attempt: 1, log_id: null, started_at: new Date(T0).toISOString(), ended_at: new Date(T0).toISOString(), status_code: 200, error_message: null }, result: { status_code: 200, headers: {}, body: '', truncated: false }, kept_until: T0 + 1 } }], T0)).to.deep.equal([true]);
    const second = await stores.asyncCalls.recount(first.drift);
    expect(second.corrections.map((c) => [c.id, c.by])).to.deep.equal([['f1', -BYTES], [':total', -BYTES]]);
    expect(await counts()).to.deep.equal({ f1: BYTES, ':total': BYTES });
  });

  it('a drift seen once (a write under way) is not corrected', async () => {
    expect((await accept('f1')).outcome).to.equal('accepted');
    // A reservation in flight at the first pass (its insert not landed yet)...
    await leakReservation('f1', BYTES);
    const first = await stores.asyncCalls.recount(new Map());
    expect([...first.drift]).to.deep.equal([['f1', BYTES], [':total', BYTES]]);
    // ...then given back (the insert failed, so accept released it) before the second.
    await leakReservation('f1', -BYTES);
    const second = await stores.asyncCalls.recount(first.drift);
    expect(second.corrections).to.deep.equal([]);
    expect(await counts()).to.deep.equal({ f1: BYTES, ':total': BYTES });
  });

  it('two gateways recounting the same leak correct it once', async () => {
    expect((await accept('f1')).outcome).to.equal('accepted');
    await leakReservation('f1', 5);
    const other = await openMongoStores({ url: server.url, dbName: db.databaseName, retry: { log: () => {} } });
    try {
      const mine: UsageDrift = (await stores.asyncCalls.recount(new Map())).drift;
      const theirs: UsageDrift = (await other.asyncCalls.recount(new Map())).drift;
      const a = await stores.asyncCalls.recount(mine);
      const b = await other.asyncCalls.recount(theirs);
      expect(a.corrections.length + b.corrections.length).to.equal(2);
      expect(await counts()).to.deep.equal({ f1: BYTES, ':total': BYTES });
    } finally {
      await other.close();
    }
  });
});
