import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { MongoClient, type Db } from 'mongodb';
import { StoreError } from '../../core/src/errors.ts';
import { openMongoStores } from '../../core/src/store/mongo/index.ts';
import type { Stores } from '../../core/src/stores.ts';
import { startMongoServer, type MongoTestServer } from '../helpers/mongo-server.ts';
import { describeStoreContract, functionRecord, log } from './store-contract.ts';

const DAY = 86_400_000;

// The contract suite against MongoDB: the mongo-java-server stand-in started
// here (built by Maven on first use), or a real server from MONGODB_URL.

describe('MongoDB store', function () {
  this.timeout(180_000);
  let server: MongoTestServer;
  const dbNames: string[] = [];

  before(async () => {
    server = await startMongoServer();
  });

  after(async () => {
    if (!server) return;
    if (!server.standIn) {
      const client = await MongoClient.connect(server.url);
      for (const name of dbNames) await client.db(name).dropDatabase();
      await client.close();
    }
    await server.stop();
  });

  function open(): Promise<Stores> {
    const dbName = 'fnhost_test_' + randomUUID().slice(0, 8);
    dbNames.push(dbName);
    return openMongoStores({ url: server.url, dbName, retry: { log: () => {} } });
  }

  describeStoreContract('MongoDB', open, { timeoutMs: 120_000, expiresInBackground: !!process.env['MONGODB_URL'] });

  // Deep pages (1,000 records from both ends and more) start from the count
  // buckets; the contract's histories are smaller, so run it again with every
  // page but the first found that way.
  describeStoreContract('MongoDB, every page through the bucket seek', () => {
    const dbName = 'fnhost_test_' + randomUUID().slice(0, 8);
    dbNames.push(dbName);
    return openMongoStores({ url: server.url, dbName, deepPageSeekFrom: 1, retry: { log: () => {} } });
  }, { timeoutMs: 120_000, expiresInBackground: !!process.env['MONGODB_URL'] });

  describe('MongoDB specifics', () => {
    let client: MongoClient;
    let dbName: string;
    let db: Db;
    let stores: Stores;

    beforeEach(async () => {
      dbName = 'fnhost_test_' + randomUUID().slice(0, 8);
      dbNames.push(dbName);
      stores = await openMongoStores({ url: server.url, dbName, retry: { log: () => {} } });
      client = await MongoClient.connect(server.url);
      db = client.db(dbName);
    });

    afterEach(async () => {
      await stores.close();
      await client.close();
    });

    it('creates the TTL indexes (expireAt, expireAfterSeconds 0) on logs, log buckets, console output, latency buckets, admin sessions and the schedule ledger, and the listing indexes; none on KV, whose usage counters a TTL monitor would bypass', async () => {
      const kvIndexes = await db.collection('kv').indexes();
      expect(kvIndexes.find((index) => index.expireAfterSeconds !== undefined)).to.equal(undefined);
      expect(kvIndexes.find((index) => index.name === 'ns_expireAt')).to.deep.include({ key: { ns: 1, expireAt: 1 } });
      for (const collection of ['logs', 'log_buckets', 'console_output', 'latency_buckets', 'admin_sessions', 'schedule_runs']) {
        const ttl = (await db.collection(collection).indexes()).find((index) => index.name === 'ttl_expireAt');
        expect(ttl, collection).to.deep.include({ key: { expireAt: 1 }, expireAfterSeconds: 0 });
      }
      const logIndexes = await db.collection('logs').indexes();
      expect(logIndexes.map((index) => index.key)).to.deep.include.members([
        { function_id: 1, executed_at: -1, seq: -1 },
        { function_id: 1, cls: 1, executed_at: -1, seq: -1 },
      ]);
      expect((await db.collection('schedule_runs').indexes()).map((index) => index.key)).to.deep.include({ function_id: 1, planned_at: -1, _id: -1 });
      const functionIndexes = await db.collection('functions').indexes();
      expect(functionIndexes.find((index) => index.name === 'namespace_name')).to.deep.include({ key: { namespace: 1, name: 1 }, unique: true });
      expect((await db.collection('kv').indexes()).find((index) => index.name === 'ns_key')).to.deep.include({ unique: true });
    });

    it('gives console output the record\'s time retention (expireAt), and takes it off when the policy no longer expires records', async () => {
      const now = Date.now();
      const fnId = randomUUID();
      const rec = log(fnId, now - 1000, {}, { type: 'time', days: 1 });
      await stores.logs.insert([rec]);
      expect(await stores.insight.putConsole(fnId, [{ logId: rec.id, output: { lines: [], dropped_lines: 0, dropped_bytes: 0 } }], now + DAY, now)).to.deep.equal([true]);
      const stored = await db.collection('console_output').findOne({ function_id: fnId });
      expect(stored!['expireAt']).to.deep.equal(new Date(now + DAY));
      await stores.logs.applyRetention(fnId, { type: 'none' }, now);
      expect((await db.collection('console_output').findOne({ function_id: fnId }))!['expireAt']).to.equal(undefined);
      await stores.logs.applyRetention(fnId, { type: 'time', days: 2 }, now);
      expect((await db.collection('console_output').findOne({ function_id: fnId }))!['expireAt']).to.deep.equal(new Date(now + 2 * DAY));
    });

    it('writes a batch\'s exchanges once, also when the batch is resent, and finds them through their record', async () => {
      const fnId = randomUUID();
      const body = { encoding: 'utf8' as const, data: '{"card":"[redacted]"}', size: 21, truncated: false };
      const exchange = { request: { method: 'POST', path: '/pay', query: '', headers: { 'content-type': 'application/json' }, body }, response: null };
      const recorded = { ...log(fnId, Date.now()), exchange };
      const batch = [recorded, log(fnId, Date.now())];
      await stores.logs.insert(batch);
      await stores.logs.insert(batch); // a resent batch (the writer's retry after a failure it could not tell from success)
      expect(await db.collection('log_exchanges').countDocuments({ function_id: fnId })).to.equal(1);
      const found = await stores.exchanges.get(fnId, recorded.id, { type: 'none' }, Date.now());
      expect(found).to.deep.include({ found: true, exchange });
      expect(await stores.exchanges.get(fnId, batch[1]!.id, { type: 'none' }, Date.now())).to.deep.include({ found: true, exchange: null });
    });

    it('opening again on the same database keeps the indexes (creation is idempotent)', async () => {
      const before = await db.collection('logs').indexes();
      const again = await openMongoStores({ url: server.url, dbName });
      await again.close();
      expect(await db.collection('logs').indexes()).to.deep.equal(before);
    });

    it('hides expired logs and KV keys on the real clock although the documents are still stored (no TTL monitor has run)', async () => {
      const now = Date.now();
      const fnId = randomUUID();
      const old = log(fnId, now - 3 * DAY, { status_code: 500 }, { type: 'time', days: 1 });
      const fresh = log(fnId, now - 1000, {}, { type: 'time', days: 1 });
      await stores.logs.insert([old, fresh]);
      // (A write deletes its function's expired keys first: 'kept' goes in first.)
      await stores.kv.set(fnId, 'kept', '2', 3600, now);
      await stores.kv.set(fnId, 'gone', '1', 1, now - 5000);
      // The stand-in has no TTL monitor; on a real server it may already have removed the log.
      if (server.standIn) {
        expect(await db.collection('logs').countDocuments({ function_id: fnId })).to.equal(2);
        expect(await db.collection('kv').countDocuments({ ns: fnId })).to.equal(2);
      }
      const stored = await db.collection('logs').findOne({ _id: old.id as never });
      if (stored) expect(stored['expireAt']).to.deep.equal(new Date(old.expires_at!));
      const page = await stores.logs.list(fnId, { status: 'all', limit: 50, page: 1 }, { type: 'time', days: 1 }, now);
      expect(page.logs.map((l) => l.id)).to.deep.equal([fresh.id]);
      expect(page.pagination.totalCount).to.equal(1);
      expect((await stores.logs.list(fnId, { status: 'error', limit: 50, page: 1 }, { type: 'time', days: 1 }, now)).pagination.totalCount).to.equal(0);
      expect(await stores.kv.get(fnId, 'gone', now)).to.equal(undefined);
      expect(await stores.kv.has(fnId, 'gone', now)).to.equal(false);
      expect(await stores.kv.list(fnId, '', 10, now)).to.deep.equal(['kept']);
      expect(await stores.kv.sweep(now)).to.be.at.least(server.standIn ? 1 : 0);
      expect(await db.collection('kv').countDocuments({ ns: fnId })).to.equal(1);
    });

    it('brings an older database\'s KV under quotas at open: its TTL index dropped, each key\'s bytes filled in, each function\'s usage counted', async () => {
      const legacy = 'fnhost_test_' + randomUUID().slice(0, 8);
      dbNames.push(legacy);
      const old = client.db(legacy);
      await old.collection('kv').createIndexes([
        { key: { ns: 1, key: 1 }, name: 'ns_key', unique: true },
        { key: { expireAt: 1 }, name: 'ttl_expireAt', expireAfterSeconds: 0 },
      ]);
      const fnId = randomUUID();
      await old.collection('kv').insertMany([
        { ns: fnId, key: 'a', value: '"é"', expireAt: null },
        { ns: fnId, key: 'bb', value: '12345', expireAt: null },
      ]);
      const opened = await openMongoStores({ url: server.url, dbName: legacy, retry: { log: () => {} } });
      try {
        expect((await old.collection('kv').indexes()).map((index) => index.name)).to.not.include('ttl_expireAt');
        expect((await old.collection('kv').findOne({ key: 'a' }))!['bytes']).to.equal(1 + 4);
        expect(await opened.kv.usage(fnId, Date.now())).to.deep.equal({ keys: 2, bytes: 5 + 7 });
        expect(await opened.kv.set(fnId, 'c', '1', null, Date.now(), { maxBytes: 13, maxKeys: 10 })).to.deep.include({ stored: false, quota: 'kv_bytes', used: 12 });
      } finally {
        await opened.close();
      }
    });

    it('two stores on one database (two gateway replicas) writing for one function at once never pass its quota', async () => {
      const other = await openMongoStores({ url: server.url, dbName, retry: { log: () => {} } });
      try {
        const fnId = randomUUID();
        const value = JSON.stringify('v'.repeat(1000)); // 1002 bytes + a 3-4 byte key
        const quota = { maxBytes: 10_500, maxKeys: 1000 };
        const now = Date.now();
        const writes = Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? stores : other).kv.set(fnId, `k${i}`, value, null, now, quota));
        const results = await Promise.all(writes);
        const usage = await stores.kv.usage(fnId, now);
        expect(usage.bytes).to.be.at.most(quota.maxBytes);
        expect(results.filter((r) => r.stored).length).to.equal(usage.keys);
        expect(usage.keys).to.equal(await db.collection('kv').countDocuments({ ns: fnId }));
        expect(usage.keys).to.equal(10); // 10 keys of 1004-1005 bytes fit in 10,500, 11 do not
      } finally {
        await other.close();
      }
    });

    it('keeps a session as its id hash with an expireAt Date for the TTL index, and hides it on the real clock once ended', async () => {
      const now = Date.now();
      const idHash = randomUUID().replaceAll('-', '').repeat(2);
      await stores.sessions.create({ idHash, label: 'abcd1234', csrf: 'c'.repeat(43), createdAt: now - 60_000, lastSeenAt: now - 60_000, expiresAt: now - 1000 }, 1000);
      const doc = await db.collection('admin_sessions').findOne({ _id: idHash as never });
      // The stand-in has no TTL monitor; a real server's may have removed it already.
      if (server.standIn) expect(doc).to.deep.include({ _id: idHash, csrf: 'c'.repeat(43), expireAt: new Date(now - 1000), createdAt: new Date(now - 60_000) });
      expect(await stores.sessions.get(idHash, now)).to.equal(null);
      expect(await stores.sessions.sweep(now)).to.be.at.least(server.standIn ? 1 : 0);
      expect(await db.collection('admin_sessions').countDocuments({ _id: idHash as never })).to.equal(0);
    });

    it('applyRetention rewrites expireAt of stored logs and their buckets: set for time, changed with the days, removed for count and none', async () => {
      const fnId = randomUUID();
      const t = Date.UTC(2100, 0, 1);
      const records = [log(fnId, t), log(fnId, t + 90_000), log(fnId, t + 200_000)];
      await stores.logs.insert(records);
      const expiries = async () => (await db.collection('logs').find({ function_id: fnId }).sort({ seq: 1 }).toArray()).map((d) => d['expireAt'] ?? null);
      const bucketExpiries = async (span = 60_000) => (await db.collection('log_buckets').find({ function_id: fnId, span }).sort({ start: 1 }).toArray()).map((d) => d['expireAt'] ?? null);
      expect(await expiries()).to.deep.equal([null, null, null]);
      expect(await stores.logs.applyRetention(fnId, { type: 'time', days: 7 }, t)).to.equal(0);
      expect(await expiries()).to.deep.equal(records.map((r) => new Date(Date.parse(r.executed_at) + 7 * DAY)));
      // A bucket expires a minute after the last moment a record in it can.
      expect(await bucketExpiries()).to.deep.equal([0, 60_000, 180_000].map((m) => new Date(t + m + 60_000 + 7 * DAY)));
      // And the hour and day buckets an hour and a day after theirs.
      expect(await bucketExpiries(3_600_000)).to.deep.equal([new Date(t + 3_600_000 + 7 * DAY)]);
      expect(await bucketExpiries(DAY)).to.deep.equal([new Date(t + DAY + 7 * DAY)]);
      await stores.logs.applyRetention(fnId, { type: 'time', days: 2 }, t);
      expect(await expiries()).to.deep.equal(records.map((r) => new Date(Date.parse(r.executed_at) + 2 * DAY)));
      expect(await stores.logs.applyRetention(fnId, { type: 'count', count: 2 }, t)).to.equal(1);
      expect(await expiries()).to.deep.equal([null, null]);
      expect(await bucketExpiries()).to.deep.equal([null, null]);
      expect(await bucketExpiries(DAY)).to.deep.equal([null]);
      await stores.logs.applyRetention(fnId, { type: 'time', days: 1 }, t);
      // The periodic sweep with an unchanged policy leaves expireAt alone (no rewrite of every record each time).
      const marker = new Date(Date.UTC(2200, 0, 1));
      await db.collection('logs').updateMany({ function_id: fnId }, { $set: { expireAt: marker } });
      await stores.logs.applyRetention(fnId, { type: 'time', days: 1 }, t);
      expect(await expiries()).to.deep.equal([marker, marker]);
      await stores.logs.applyRetention(fnId, { type: 'time', days: 3 }, t);
      expect(await expiries()).to.deep.equal(records.slice(1).map((r) => new Date(Date.parse(r.executed_at) + 3 * DAY)));
      await stores.logs.applyRetention(fnId, { type: 'none' }, t);
      expect(await expiries()).to.deep.equal([null, null]);
    });

    it('counts executions exactly under concurrent $inc from two store instances', async () => {
      const fnId = randomUUID();
      const other = randomUUID();
      const second = await openMongoStores({ url: server.url, dbName });
      try {
        const adds: Promise<void>[] = [];
        for (let i = 0; i < 100; i++) {
          const store = i % 2 === 0 ? stores : second;
          adds.push(store.counters.add(new Map([[fnId, 1 + (i % 3)], [other, 1]])));
        }
        await Promise.all(adds);
        let expected = 0;
        for (let i = 0; i < 100; i++) expected += 1 + (i % 3);
        expect(await stores.counters.get(fnId)).to.equal(expected);
        expect(await second.counters.get(other)).to.equal(100);
      } finally {
        await second.close();
      }
    });

    it('log counts stay exact under concurrent batches from two store instances', async () => {
      const fnId = randomUUID();
      const second = await openMongoStores({ url: server.url, dbName });
      const t = Date.UTC(2100, 0, 1);
      try {
        const batches = Array.from({ length: 20 }, (_, b) => Array.from({ length: 25 }, (_, i) => log(fnId, t + (b * 25 + i) * 1000, { status_code: i % 5 === 0 ? 500 : 200 })));
        await Promise.all(batches.map((batch, i) => (i % 2 === 0 ? stores : second).logs.insert(batch)));
        const all = await stores.logs.list(fnId, { status: 'all', limit: 1000, page: 1 }, { type: 'none' }, t);
        expect(all.pagination.totalCount).to.equal(500);
        expect(new Set(all.logs.map((l) => l.id)).size).to.equal(500);
        expect((await stores.logs.list(fnId, { status: 'error', limit: 1, page: 1 }, { type: 'none' }, t)).pagination.totalCount).to.equal(100);
        // Sending a batch again (the writer retrying) neither duplicates records nor counts them twice.
        await stores.logs.insert(batches[0]!);
        expect((await stores.logs.list(fnId, { status: 'all', limit: 1, page: 1 }, { type: 'none' }, t)).pagination.totalCount).to.equal(500);
        expect(await db.collection('log_pending').countDocuments({})).to.equal(0);
      } finally {
        await second.close();
      }
    });

    it('a batch resent after its counts failed to apply is counted once: stored records a pending note names are counted, the rest not', async () => {
      const fnId = randomUUID();
      const t = Date.UTC(2100, 0, 1);
      const stored = log(fnId, t, { status_code: 500 });
      const counted = log(fnId, t + 2);
      const fresh = log(fnId, t + 1);
      await stores.logs.insert([counted]);
      // As a first attempt leaves it when the server went away between storing the record and counting it.
      await db.collection('logs').insertOne({ _id: stored.id as never, function_id: fnId, executed_at: new Date(t), minute: t, seq: 1, cls: 'e', status_code: 500, execution_time_ms: stored.execution_time_ms, error_message: stored.error_message, trigger: 'http' });
      await db.collection('log_pending').insertOne({ _id: 'batch_1' as never, ids: [stored.id] });
      await stores.logs.insert([stored, fresh, counted]);
      await stores.logs.insert([stored, fresh]);
      const count = async (status: 'all' | 'error') => (await stores.logs.list(fnId, { status, limit: 10, page: 1 }, { type: 'none' }, t)).pagination.totalCount;
      expect(await count('all')).to.equal(3);
      expect(await count('error')).to.equal(1);
      expect(await db.collection('log_pending').countDocuments({ ids: { $in: [stored.id, fresh.id, counted.id] } })).to.equal(0);
      await stores.logs.insert([stored, fresh]);
      expect(await count('all')).to.equal(3);
      expect((await stores.logs.list(fnId, { status: 'all', limit: 10, page: 1 }, { type: 'time', days: 1 }, t)).pagination.totalCount).to.equal(3);
    });

  });

  describe('lost connections', () => {
    // These two start their own stand-in (even when MONGODB_URL is set) so they can stop and restart it.
    it('a log batch written while the server is down is retried with backoff, logged, and stored once the server is back on the same port', async () => {
      let restartable = await startMongoServer({ useEnv: false });
      const port = restartable.port!;
      const lines: string[] = [];
      const stores = await openMongoStores({ url: restartable.url, dbName: 'fnhost_reconnect', serverSelectionTimeoutMS: 500, retry: { log: (msg, fields) => lines.push(JSON.stringify({ msg, ...fields })), retryForMs: 60_000, maxDelayMs: 500 } });
      try {
        const fn = functionRecord();
        await stores.functions.create(fn);
        await restartable.stop();
        // Issued while nothing listens: it must wait through retries, not fail.
        const t = Date.UTC(2100, 0, 1);
        const batch = [log(fn.function_id, t), log(fn.function_id, t + 1, { status_code: 500 })];
        const pending = stores.logs.insert(batch);
        await waitFor(() => lines.length >= 1, 30_000);
        restartable = await startMongoServer({ useEnv: false, port });
        await pending;
        // The stand-in keeps data in memory: a restarted one is empty, but the same store works again.
        const page = await stores.logs.list(fn.function_id, { status: 'all', limit: 10, page: 1 }, { type: 'none' }, t);
        expect(page.logs.map((l) => l.id)).to.deep.equal([batch[1]!.id, batch[0]!.id]);
        expect(page.pagination.totalCount).to.equal(2);
        await stores.counters.add(new Map([[fn.function_id, 2]]));
        expect(await stores.counters.get(fn.function_id)).to.equal(2);
        await stores.functions.create(fn);
        expect(await stores.functions.get(fn.function_id)).to.deep.equal(fn);
        expect(JSON.parse(lines[0]!)).to.include({ msg: 'MongoDB unreachable; retrying', operation: 'log sequence', retry: 1 });
      } finally {
        await stores.close();
        await restartable.stop();
      }
    });

    it('gives up after the retry window with StoreError carrying the driver error as cause', async () => {
      const restartable = await startMongoServer({ useEnv: false });
      const stores = await openMongoStores({ url: restartable.url, dbName: 'fnhost_down', serverSelectionTimeoutMS: 200, retry: { log: () => {}, retryForMs: 1000, maxDelayMs: 200 } });
      try {
        await restartable.stop();
        const err = await stores.kv.get('ns', 'k', Date.now()).then(() => null, (e: unknown) => e);
        expect(err).to.be.instanceOf(StoreError);
        expect((err as StoreError).message).to.match(/MongoDB kv get failed after \d+ attempts/);
        expect((err as StoreError).cause).to.be.instanceOf(Error);
        expect((err as StoreError).expose).to.equal(false);
      } finally {
        await stores.close();
      }
    });

    it('fails to open with StoreError when no server answers within the retry window', async () => {
      const err = await openMongoStores({ url: 'mongodb://127.0.0.1:1', serverSelectionTimeoutMS: 200, retry: { log: () => {}, retryForMs: 500 } }).then(() => null, (e: unknown) => e);
      expect(err).to.be.instanceOf(StoreError);
      expect((err as Error).message).to.include('127.0.0.1:1');
    });
  });
});

async function waitFor(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
