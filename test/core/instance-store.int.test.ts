import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { MongoClient, type Db } from 'mongodb';
import { openMongoStores } from '../../core/src/store/mongo/index.ts';
import { openSqliteStores } from '../../core/src/store/sqlite/index.ts';
import type { StoredLog, Stores, WriterProgress } from '../../core/src/stores.ts';
import { startMongoServer, type MongoTestServer } from '../helpers/mongo-server.ts';
import { log } from './store-contract.ts';

// The InstanceStore seam (gateway instances and what dead ones lost) on both
// stores, and, on MongoDB, the states a writer killed in the middle of a batch
// leaves behind (its note in log_pending, part of its records), rebuilt here
// with the driver the way the store writes them.

const DEAD_AFTER = 30_000;
const T0 = Date.UTC(2100, 0, 1);

function batch(fn: string, n: number): StoredLog[] {
  return Array.from({ length: n }, (_, i) => log(fn, T0 + i));
}

function progress(instance: string, accepted: number, written: number, at: number): WriterProgress {
  return { instance, accepted, written, at };
}

function describeInstanceStore(name: string, open: () => Promise<Stores>): void {
  describe(`gateway instances on ${name}`, () => {
    let stores: Stores;
    beforeEach(async () => {
      stores = await open();
    });
    afterEach(async () => {
      await stores.close();
    });

    it('records progress with each batch in the same write, only ever raising it', async () => {
      await stores.instances.register({ id: 'a', host: 'h', pid: 1, startedAt: T0 }, T0);
      expect(await stores.logs.insert(batch('f', 4), progress('a', 9, 4, T0 + 10))).to.deep.equal({ instanceLive: true });
      expect(await stores.instances.get('a')).to.deep.include({ accepted: 9, written: 4, heartbeatAt: T0 + 10, ended: null });
      expect(await stores.instances.heartbeat(progress('a', 7, 3, T0 + 5)), 'an older heartbeat').to.equal(true);
      expect(await stores.instances.get('a')).to.deep.include({ accepted: 9, written: 4, heartbeatAt: T0 + 10 });
      expect(await stores.instances.heartbeat(progress('a', 12, 4, T0 + 20))).to.equal(true);
      expect(await stores.instances.get('a')).to.deep.include({ accepted: 12, written: 4, heartbeatAt: T0 + 20 });
      expect(await stores.logs.insert(batch('f', 2))).to.equal(undefined);
    });

    it('claims an instance once the bound passed, once, and counts accepted - written', async () => {
      await stores.instances.register({ id: 'dead', host: 'pod-1', pid: 7, startedAt: T0 }, T0);
      await stores.instances.register({ id: 'b', host: 'pod-2', pid: 8, startedAt: T0 }, T0);
      await stores.logs.insert(batch('f', 6), progress('dead', 10, 6, T0 + 100));
      expect(await stores.instances.claimStale('b', DEAD_AFTER, T0 + 100 + DEAD_AFTER)).to.deep.equal([]);
      const now = T0 + 100 + DEAD_AFTER + 1;
      const claimed = await stores.instances.claimStale('b', DEAD_AFTER, now);
      expect(claimed.map((c) => c.id), 'b is stale too, but never claims itself').to.deep.equal(['dead']);
      expect(claimed[0]).to.deep.include({ host: 'pod-1', pid: 7, startedAt: T0, heartbeatAt: T0 + 100, accepted: 10, written: 6 });
      expect(claimed[0]!.ended).to.deep.equal({ at: now, how: 'claimed', by: 'b', lost: 4, recovered: 0 });
      expect(await stores.instances.claimStale('b', DEAD_AFTER, now + 1)).to.deep.equal([]);
      expect(await stores.instances.lossTotals()).to.deep.equal({ lost: 4, recovered: 0, dead: 1 });
      // The dead instance's progress is refused from now on; its batch is still stored.
      expect(await stores.instances.heartbeat(progress('dead', 11, 6, now))).to.equal(false);
      expect(await stores.logs.insert(batch('f', 2), progress('dead', 11, 8, now))).to.deep.equal({ instanceLive: false });
      expect((await stores.logs.list('f', { status: 'all', limit: 50, page: 1 }, { type: 'none' }, now)).pagination.totalCount).to.equal(8);
      // recover only raises.
      await stores.instances.recover('dead', 3);
      await stores.instances.recover('dead', 2);
      expect(await stores.instances.lossTotals()).to.deep.equal({ lost: 4, recovered: 3, dead: 1 });
    });

    it('two gateways claiming at once count a dead instance once', async () => {
      await stores.instances.register({ id: 'dead', host: 'h', pid: 1, startedAt: T0 }, T0);
      await stores.instances.heartbeat(progress('dead', 5, 0, T0));
      const other = await open();
      try {
        const now = T0 + DEAD_AFTER + 1;
        const [x, y] = await Promise.all([stores.instances.claimStale('b', DEAD_AFTER, now), other.instances.claimStale('c', DEAD_AFTER, now)]);
        expect(x.length + y.length).to.equal(1);
        expect(await other.instances.lossTotals()).to.deep.equal({ lost: 5, recovered: 0, dead: 1 });
      } finally {
        await other.close();
      }
    });

    it('a clean end removes an instance that wrote everything, and keeps one that could not with its loss', async () => {
      await stores.instances.register({ id: 'clean', host: 'h', pid: 1, startedAt: T0 }, T0);
      await stores.instances.register({ id: 'short', host: 'h', pid: 2, startedAt: T0 }, T0);
      expect(await stores.instances.end(progress('clean', 5, 5, T0 + 1), T0 + 1)).to.equal(true);
      expect(await stores.instances.get('clean')).to.equal(null);
      expect(await stores.instances.end(progress('short', 5, 2, T0 + 1), T0 + 1)).to.equal(true);
      expect((await stores.instances.get('short'))!.ended).to.deep.equal({ at: T0 + 1, how: 'shutdown', by: null, lost: 3, recovered: 0 });
      expect(await stores.instances.end(progress('short', 5, 2, T0 + 2), T0 + 2), 'already ended').to.equal(false);
      expect(await stores.instances.claimStale('x', DEAD_AFTER, T0 + DEAD_AFTER * 2)).to.deep.equal([]);
      expect(await stores.instances.lossTotals()).to.deep.equal({ lost: 3, recovered: 0, dead: 0 });
    });
  });
}

describe('InstanceStore', function () {
  this.timeout(180_000);
  let dir: string;
  let counter = 0;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'fnhost-instances-'));
  });
  after(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  describe('SQLite', () => {
    // Each test gets a database file; a second open() within a test shares it (two gateways).
    let path = '';
    beforeEach(() => {
      path = join(dir, `i-${++counter}.db`);
    });
    describeInstanceStore('SQLite', async () => openSqliteStores({ path }));
  });

  describe('MongoDB', () => {
    let server: MongoTestServer;
    let client: MongoClient;
    const dbNames: string[] = [];
    let current = '';
    before(async () => {
      server = await startMongoServer();
      client = await MongoClient.connect(server.url);
    });
    after(async () => {
      if (!server) return;
      if (!server.standIn) for (const name of dbNames) await client.db(name).dropDatabase();
      await client?.close();
      await server.stop();
    });
    // Each test gets a database; a second open() within a test shares it (two gateways).
    beforeEach(() => {
      current = 'fnhost_test_' + randomUUID().slice(0, 8);
      dbNames.push(current);
    });
    const open = () => openMongoStores({ url: server.url, dbName: current, retry: { log: () => {} } });

    describeInstanceStore('MongoDB', open);

    describe('a writer killed in the middle of a batch', () => {
      let stores: Stores;
      let db: Db;
      beforeEach(async () => {
        stores = await open();
        db = client.db(current);
        await stores.instances.register({ id: 'dead', host: 'h', pid: 1, startedAt: T0 }, T0);
        // 100 accepted, 60 written: the last batch that completed.
        await stores.logs.insert(batch('f', 60), progress('dead', 100, 60, T0 + 10));
      });
      afterEach(async () => {
        await stores.close();
      });
      const now = T0 + 10 + DEAD_AFTER + 1_000;

      /** Records stored the way insert stores them, without the rest of insert (which would remove the note). */
      async function storeOnly(records: StoredLog[]) {
        await db.collection('logs').insertMany(records.map((r) => ({ _id: r.id as never, function_id: r.function_id, executed_at: new Date(r.executed_at), status_code: r.status_code })));
      }

      /** What the store writes first for a batch sent with this progress. */
      async function note(records: StoredLog[], p: WriterProgress, id = 'batch_9000') {
        await db.collection('log_pending').insertOne({ _id: id as never, ids: records.map((r) => r.id), owner: p.instance, upTo: p.written, accepted: p.accepted, at: p.at });
      }

      it('after its note, before any record: the note raises accepted, nothing more is written', async () => {
        const next = batch('f', 40);
        await note(next, progress('dead', 130, 100, T0 + 60));
        const [claimed] = await stores.instances.claimStale('b', DEAD_AFTER, now);
        expect(claimed).to.deep.include({ accepted: 130, written: 60, heartbeatAt: T0 + 60 });
        expect(claimed!.ended!.lost).to.equal(70);
      });

      it('with part of the batch stored: exactly those count as written', async () => {
        const next = batch('f', 40);
        await note(next, progress('dead', 130, 100, T0 + 60));
        await storeOnly(next.slice(0, 15)); // stored, progress not raised
        const [claimed] = await stores.instances.claimStale('b', DEAD_AFTER, now);
        expect(claimed).to.deep.include({ accepted: 130, written: 75 });
        expect(claimed!.ended!.lost).to.equal(55);
      });

      it('with a batch resent after a failure (two notes over the same records), each stored record counts once', async () => {
        const next = batch('f', 40);
        const more = batch('f', 10);
        await note(next, progress('dead', 130, 100, T0 + 60), 'batch_9000');
        await note([...next, ...more], progress('dead', 140, 110, T0 + 90), 'batch_9100');
        await storeOnly([...next, ...more.slice(0, 5)]);
        const [claimed] = await stores.instances.claimStale('b', DEAD_AFTER, now);
        expect(claimed).to.deep.include({ accepted: 140, written: 105 });
        expect(claimed!.ended!.lost).to.equal(35);
      });

      it('after its progress was raised, before its note was removed: nothing counts twice', async () => {
        const next = batch('f', 40);
        await note(next, progress('dead', 130, 100, T0 + 60));
        await storeOnly(next);
        await stores.instances.heartbeat(progress('dead', 130, 100, T0 + 61));
        const [claimed] = await stores.instances.claimStale('b', DEAD_AFTER, now);
        expect(claimed).to.deep.include({ accepted: 130, written: 100 });
        expect(claimed!.ended!.lost).to.equal(30);
      });

      it('a completed batch leaves no note: the next batch removes the notes its progress covers', async () => {
        const stale = batch('f', 5);
        await note(stale, progress('dead', 100, 65, T0 + 11), 'batch_8000'); // a note whose removal failed
        await stores.logs.insert(batch('f', 10), progress('dead', 110, 70, T0 + 20));
        expect(await db.collection('log_pending').countDocuments({ owner: 'dead' })).to.equal(0);
      });
    });
  });
});
