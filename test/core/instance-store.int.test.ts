import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { MongoClient, type Db } from 'mongodb';
import { MongoContext } from '../../core/src/store/mongo/context.ts';
import { LogCounts, writerMark, type PendingDoc } from '../../core/src/store/mongo/counts.ts';
import { openMongoStores, DEFAULT_RETRY } from '../../core/src/store/mongo/index.ts';
import { toLogDoc } from '../../core/src/store/mongo/logs.ts';
import { openSqliteStores } from '../../core/src/store/sqlite/index.ts';
import type { RetentionPolicy } from '../../core/src/model.ts';
import type { StoredLog, Stores, WriterProgress } from '../../core/src/stores.ts';
import { startMongoServer, type MongoTestServer } from '../helpers/mongo-server.ts';
import { log } from './store-contract.ts';

// The InstanceStore seam (gateway instances and what dead ones lost) on both
// stores, and, on MongoDB, the states a writer killed in the middle of a batch
// leaves behind (its note in log_pending, part of its records), rebuilt here
// with the driver the way the store writes them.

const DEAD_AFTER = 30_000;
const NONE: RetentionPolicy = { type: 'none' };
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

    it('a writer\'s batch adds its records to the execution counters with it; an insert without progress does not', async () => {
      await stores.instances.register({ id: 'a', host: 'h', pid: 1, startedAt: T0 }, T0);
      await stores.logs.insert([...batch('f', 3), ...batch('g', 2)], progress('a', 5, 5, T0 + 1));
      expect([await stores.counters.get('f'), await stores.counters.get('g')]).to.deep.equal([3, 2]);
      await stores.logs.insert(batch('f', 4));
      expect(await stores.counters.get('f')).to.equal(3);
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

    describe('the counts of a killed writer\'s batch, finished by the claim', () => {
      // A batch's records and its counts (log_buckets, log_totals) and executions
      // (counters) are separate writes: each state a kill leaves between them is
      // rebuilt with the driver and the store's own pieces (toLogDoc, LogCounts),
      // the way MongoLogStore.insert writes them.
      let stores: Stores;
      let db: Db;
      let counts: LogCounts;
      let seq = 1_000_000;
      beforeEach(async () => {
        stores = await open();
        db = client.db(current);
        counts = new LogCounts(db, new MongoContext({ ...DEFAULT_RETRY, log: () => {} }));
        await stores.instances.register({ id: 'dead', host: 'h', pid: 1, startedAt: T0 }, T0);
        // The batches that completed: 60 written of 100 accepted.
        await stores.logs.insert(mixed(60, T0), progress('dead', 100, 60, T0 + 10));
      });
      afterEach(async () => {
        await stores.close();
      });
      const now = T0 + 90 + DEAD_AFTER + 1_000;
      /** The batch in flight at the kill: newer than the first 60, every fourth an error. */
      const next = mixed(40, T0 + 1_000);
      const nextProgress = progress('dead', 130, 100, T0 + 60);

      function mixed(n: number, from: number): StoredLog[] {
        return Array.from({ length: n }, (_, i) => log('f', from + i, { status_code: i % 4 === 3 ? 500 : 200 }));
      }
      async function storeRecords(records: StoredLog[]) {
        await db.collection('logs').insertMany(records.map((r) => toLogDoc(r, ++seq) as never));
      }
      async function note(records: StoredLog[], p: WriterProgress, id = 'batch_9000') {
        await db.collection('log_pending').insertOne({ _id: id as never, ids: records.map((r) => r.id), owner: p.instance, upTo: p.written, accepted: p.accepted, at: p.at, exec: true });
      }
      /** The batch's counts as insert applies them; `bucketsOnly`: killed after the buckets, before the totals and counters. */
      async function applyCounts(records: StoredLog[], p: WriterProgress, bucketsOnly = false) {
        const before = bucketsOnly ? await Promise.all([db.collection('log_totals').findOne({ _id: 'f' as never }), db.collection('counters').findOne({ _id: 'f' as never })]) : null;
        await counts.apply(records.map((r) => toLogDoc(r, 0)), 1, { key: { writer: p.instance, upTo: p.written }, executions: true });
        if (before) {
          await db.collection('log_totals').replaceOne({ _id: 'f' as never }, before[0]!);
          await db.collection('counters').replaceOne({ _id: 'f' as never }, before[1]!);
        }
      }
      const total = async (status: 'all' | 'error', retention: RetentionPolicy) => (await stores.logs.list('f', { status, limit: 50, page: 1 }, retention, now)).pagination.totalCount;
      /** totalCount from the totals (no retention) and from the buckets (time retention), all and errors, equal the stored records; so do total executions, unless `executions` says otherwise. */
      async function expectCountsMatchRecords(label: string, executions?: number) {
        const stored = await db.collection('logs').countDocuments({ function_id: 'f' });
        const errors = await db.collection('logs').countDocuments({ function_id: 'f', status_code: { $gte: 400 } });
        const days: RetentionPolicy = { type: 'time', days: 3650 };
        expect({ all: await total('all', NONE), error: await total('error', NONE), timeAll: await total('all', days), timeError: await total('error', days) }, label)
          .to.deep.equal({ all: stored, error: errors, timeAll: stored, timeError: errors });
        expect(await stores.counters.get('f'), `${label}: total executions`).to.equal(executions ?? stored);
        expect(await db.collection('log_pending').countDocuments({ owner: 'dead' }), `${label}: notes left`).to.equal(0);
      }
      const pendingNotes = () => db.collection<PendingDoc>('log_pending').find({ owner: 'dead' }).toArray();

      const states: Array<{ name: string; stored: number; build: () => Promise<void> }> = [
        { name: 'after its note, before any record', stored: 60, build: () => note(next, nextProgress) },
        { name: 'with part of the batch stored', stored: 75, build: async () => {
          await note(next, nextProgress);
          await storeRecords(next.slice(0, 15));
        } },
        { name: 'with the whole batch stored, no counts', stored: 100, build: async () => {
          await note(next, nextProgress);
          await storeRecords(next);
        } },
        { name: 'with the buckets counted, not the totals nor the executions', stored: 100, build: async () => {
          await note(next, nextProgress);
          await storeRecords(next);
          await applyCounts(next, nextProgress, true);
        } },
        { name: 'with the counts applied, before its progress', stored: 100, build: async () => {
          await note(next, nextProgress);
          await storeRecords(next);
          await applyCounts(next, nextProgress);
        } },
        { name: 'after its progress, before its note was removed', stored: 100, build: async () => {
          await note(next, nextProgress);
          await storeRecords(next);
          await applyCounts(next, nextProgress);
          await stores.instances.heartbeat(progress('dead', 130, 100, T0 + 61));
        } },
        { name: 'with the batch resent unchanged after a failure (two notes, one key), counted by neither', stored: 100, build: async () => {
          await note(next, nextProgress, 'batch_9000');
          await storeRecords(next.slice(0, 30));
          await note(next, nextProgress, 'batch_9100');
          await storeRecords(next.slice(30));
        } },
        { name: 'with a grown resend (an earlier writer): two notes over the same records, the second counted', stored: 105, build: async () => {
          const more = mixed(10, T0 + 2_000);
          await note(next, nextProgress, 'batch_9000');
          await note([...next, ...more], progress('dead', 140, 110, T0 + 90), 'batch_9100');
          await storeRecords([...next, ...more.slice(0, 5)]);
          await applyCounts([...next, ...more.slice(0, 5)], progress('dead', 140, 110, T0 + 90));
        } },
        { name: 'with a grown resend (an earlier writer): two notes over the same records, neither counted', stored: 105, build: async () => {
          const more = mixed(10, T0 + 2_000);
          await note(next, nextProgress, 'batch_9000');
          await note([...next, ...more], progress('dead', 140, 110, T0 + 90), 'batch_9100');
          await storeRecords([...next, ...more.slice(0, 5)]);
        } },
      ];

      for (const state of states) {
        it(`killed ${state.name}: after the claim totalCount and total executions equal the stored records; a second claim or repair changes nothing`, async () => {
          await state.build();
          const notes = await pendingNotes();
          const [claimed] = await stores.instances.claimStale('b', DEAD_AFTER, now);
          expect(claimed!.written).to.equal(state.stored);
          expect(await db.collection('logs').countDocuments({ function_id: 'f' })).to.equal(state.stored);
          await expectCountsMatchRecords('after the claim');
          expect(await stores.instances.claimStale('c', DEAD_AFTER, now + 1), 'nothing left to claim').to.deep.equal([]);
          await expectCountsMatchRecords('after a second claim');
          // A second gateway that read the notes before the first removed them finishes them again.
          if (notes.length > 0) await db.collection<PendingDoc>('log_pending').insertMany(notes);
          await counts.settleNotes(notes);
          await expectCountsMatchRecords('after a second repair');
        });
      }

      it('a claimer killed half way: any later scan finishes the notes, once they are older than the bound', async () => {
        await note(next, nextProgress);
        await storeRecords(next);
        // Claimed by a gateway that then died after counting the buckets.
        await db.collection('gateway_instances').updateOne({ _id: 'dead' as never }, { $set: { endedAt: new Date(now - 5_000), how: 'claimed', by: 'x', lost: 30, recovered: 0 } });
        await applyCounts(next, nextProgress, true);
        expect(await stores.instances.claimStale('c', DEAD_AFTER, nextProgress.at + 10), 'notes younger than the bound are left alone').to.deep.equal([]);
        expect(await total('all', NONE)).to.equal(60);
        expect(await stores.instances.claimStale('c', DEAD_AFTER, now)).to.deep.equal([]);
        await expectCountsMatchRecords('after the scan');
      });

      it('two gateways claiming at once finish the batch once', async () => {
        await note(next, nextProgress);
        await storeRecords(next);
        const other = await open();
        try {
          const [x, y] = await Promise.all([stores.instances.claimStale('b', DEAD_AFTER, now), other.instances.claimStale('c', DEAD_AFTER, now)]);
          expect(x.length + y.length).to.equal(1);
          await expectCountsMatchRecords('after both');
        } finally {
          await other.close();
        }
      });

      it('count retention leaves the records a note names until the claim finished them; then totalCount equals what the listing shows and what is stored', async () => {
        await note(next, nextProgress);
        await storeRecords(next);
        const keep: RetentionPolicy = { type: 'count', count: 10 };
        // Before the claim: the 60 counted records go, the 40 noted ones (uncounted) stay.
        expect(await stores.logs.applyRetention('f', keep, now)).to.equal(60);
        expect(await db.collection('logs').countDocuments({ function_id: 'f' })).to.equal(40);
        await stores.instances.claimStale('b', DEAD_AFTER, now);
        await expectCountsMatchRecords('after the claim', 100);
        const page = await stores.logs.list('f', { status: 'all', limit: 50, page: 1 }, keep, now);
        expect([page.pagination.totalCount, page.logs.length]).to.deep.equal([10, 10]);
        expect(await stores.logs.applyRetention('f', keep, now)).to.equal(30);
        await expectCountsMatchRecords('after the next sweep', 100);
      });

      it('records of the note removed before the claim (the TTL monitor) are not counted', async () => {
        await note(next, nextProgress);
        await storeRecords(next);
        await db.collection('logs').deleteMany({ _id: { $in: next.slice(0, 10).map((r) => r.id) as never[] } });
        await stores.instances.claimStale('b', DEAD_AFTER, now);
        await expectCountsMatchRecords('after the claim', 90);
      });

      it('a live writer\'s batch resent after its counts were applied (its note\'s removal failed) counts once', async () => {
        await stores.instances.register({ id: 'live', host: 'h', pid: 2, startedAt: T0 }, T0);
        const records = mixed(20, T0 + 5_000);
        const p = progress('live', 20, 20, now);
        await stores.logs.insert(records, p);
        await note(records, p, 'batch_left');
        await stores.logs.insert(records, p);
        await expectCountsMatchRecords('after the resend');
        expect(await db.collection('log_pending').countDocuments({ owner: 'live' })).to.equal(0);
      });

      it('a clean end removes the writer\'s leftover notes and its marks on the totals and counters', async () => {
        await stores.instances.register({ id: 'clean', host: 'h', pid: 2, startedAt: T0 }, T0);
        const p = progress('clean', 20, 20, now);
        await stores.logs.insert(mixed(20, T0 + 5_000), p);
        await note(mixed(1, T0), p, 'batch_left');
        const mark = writerMark('clean');
        expect((await db.collection('log_totals').findOne({ _id: 'f' as never }))!.w).to.have.property(mark);
        expect(await stores.instances.end(p, now)).to.equal(true);
        expect(await db.collection('log_pending').countDocuments({ owner: 'clean' })).to.equal(0);
        expect((await db.collection('log_totals').findOne({ _id: 'f' as never }))!.w).to.not.have.property(mark);
        expect((await db.collection('counters').findOne({ _id: 'f' as never }))!.w).to.not.have.property(mark);
        expect(await stores.counters.get('f')).to.equal(80);
      });
    });
  });
});
