import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { newAsyncId, requestBytes, type AsyncAttempt, type AsyncCall, type AsyncCompletionWrite, type AsyncRequest } from '../../core/src/async-call.ts';
import { openMongoStores } from '../../core/src/store/mongo/index.ts';
import { openSqliteStores } from '../../core/src/store/sqlite/index.ts';
import type { Stores } from '../../core/src/stores.ts';
import { startMongoServer, type MongoTestServer } from '../helpers/mongo-server.ts';

// The async queue's batched claim and completion (AsyncCallStore.claim,
// completeMany; docs/async.md "Drain") on both stores: oldest first, one lease
// per call however many gateways claim at once, a batch written only where
// its lease still holds, and the queue's byte counts released exactly once.

const T = Date.UTC(2100, 0, 1);
const BOUNDS = { functionBytes: 1 << 30, totalBytes: 1 << 30, idempotencyWindowMs: 60_000 };

function request(n: number): AsyncRequest {
  return { method: 'POST', path: `/n/${n}`, headers: { 'content-type': 'text/plain' }, body: Buffer.from(`body ${n}`) };
}

async function acceptN(stores: Stores, functionId: string, n: number): Promise<AsyncCall[]> {
  const out: AsyncCall[] = [];
  for (let i = 0; i < n; i++) {
    const req = request(i);
    // One ms apart: acceptance order is the claim order.
    const r = await stores.asyncCalls.accept({ id: newAsyncId(), function_id: functionId, accepted_at: T + i, request: req, bytes: requestBytes(req), idempotency_key: null, callback_url: null }, BOUNDS, T + i);
    if (r.outcome !== 'accepted') throw new Error(`not accepted: ${r.outcome}`);
    out.push(r.call);
  }
  return out;
}

/** The function's counted bytes, as accept() reports them when a call would pass a 1-byte bound. */
async function usedBytes(stores: Stores, functionId: string): Promise<number> {
  const req = request(0);
  const r = await stores.asyncCalls.accept({ id: newAsyncId(), function_id: functionId, accepted_at: T, request: req, bytes: requestBytes(req), idempotency_key: null, callback_url: null }, { ...BOUNDS, functionBytes: 1 }, T);
  if (r.outcome !== 'full') throw new Error(`expected a refusal, got ${r.outcome}`);
  return r.used;
}

function attemptOf(call: AsyncCall, status: number): AsyncAttempt {
  return { attempt: call.attempt, log_id: `log-${call.id}`, started_at: new Date(T).toISOString(), ended_at: new Date(T + 5).toISOString(), status_code: status, error_message: null };
}

function succeeded(call: AsyncCall, owner: string): AsyncCompletionWrite {
  return {
    id: call.id, function_id: call.function_id, bytes: call.bytes, owner, attempt: call.attempt,
    completion: { state: 'succeeded', attempt: attemptOf(call, 200), result: { status_code: 200, headers: {}, body: '', truncated: false }, kept_until: T + 86_400_000 },
  };
}

function describeBatches(name: string, open: () => Promise<Stores>): void {
  describe(`async queue batches: ${name}`, () => {
    let stores: Stores;
    beforeEach(async () => {
      stores = await open();
    });
    afterEach(async () => {
      await stores.close();
    });

    it('claims a batch oldest first in one call, each running under the lease with its attempt counted and its request', async () => {
      const fid = `f-${randomUUID()}`;
      const calls = await acceptN(stores, fid, 7);
      const got = await stores.asyncCalls.claim(fid, 'gw-a', T + 100, T + 10_000, 5);
      expect(got.map((c) => c.id)).to.deep.equal(calls.slice(0, 5).map((c) => c.id));
      for (const [i, c] of got.entries()) {
        expect(c).to.include({ state: 'running', attempt: 1, lease_owner: 'gw-a', lease_until: T + 10_000 });
        expect(c.request!.path).to.equal(`/n/${i}`);
        expect(c.request!.body!.toString()).to.equal(`body ${i}`);
      }
      const rest = await stores.asyncCalls.claim(fid, 'gw-a', T + 100, T + 10_000, 5);
      expect(rest.map((c) => c.id)).to.deep.equal(calls.slice(5).map((c) => c.id));
      expect(await stores.asyncCalls.claim(fid, 'gw-a', T + 100, T + 10_000, 5)).to.deep.equal([]);
    });

    it('gives each call to one claimer only when four gateways claim the same function at once', async () => {
      const fid = `f-${randomUUID()}`;
      const calls = await acceptN(stores, fid, 40);
      const owners = ['gw-a', 'gw-b', 'gw-c', 'gw-d'];
      const taken = new Map<string, string>();
      // Rounds of simultaneous claims until the queue is empty: every call taken exactly once.
      for (let round = 0; round < 40 && taken.size < calls.length; round++) {
        const answers = await Promise.all(owners.map((o) => stores.asyncCalls.claim(fid, o, T + 100, T + 10_000, 3)));
        answers.forEach((got, i) => {
          for (const c of got) {
            expect(taken.has(c.id), `${c.id} claimed twice`).to.equal(false);
            expect(c.lease_owner).to.equal(owners[i]);
            taken.set(c.id, owners[i]!);
          }
          // Each claimer's batch is in acceptance order.
          const seqs = got.map((c) => calls.findIndex((x) => x.id === c.id));
          expect(seqs).to.deep.equal([...seqs].sort((a, b) => a - b));
        });
      }
      expect(taken.size).to.equal(calls.length);
      const running = await stores.asyncCalls.list(fid, ['running'], 100);
      expect(running.map((c) => [c.id, c.lease_owner, c.attempt])).to.have.deep.members(calls.map((c) => [c.id, taken.get(c.id), 1]));
    });

    it('leaves a call whose backoff is not over for a later claim, without holding back the calls behind it', async () => {
      const fid = `f-${randomUUID()}`;
      const calls = await acceptN(stores, fid, 3);
      const [first] = await stores.asyncCalls.claim(fid, 'gw-a', T + 100, T + 10_000, 1);
      const retry: AsyncCompletionWrite = { ...succeeded(first!, 'gw-a'), completion: { state: 'queued', next_at: T + 60_000, attempt: attemptOf(first!, 500) } };
      expect(await stores.asyncCalls.completeMany([retry], T + 200)).to.deep.equal([true]);
      const next = await stores.asyncCalls.claim(fid, 'gw-a', T + 300, T + 10_000, 5);
      expect(next.map((c) => c.id)).to.deep.equal([calls[1]!.id, calls[2]!.id]);
      const later = await stores.asyncCalls.claim(fid, 'gw-a', T + 60_000, T + 70_000, 5);
      expect(later.map((c) => [c.id, c.attempt])).to.deep.equal([[calls[0]!.id, 2]]);
      expect(later[0]!.attempts.map((a) => a.status_code)).to.deep.equal([500]);
    });

    it('completes a batch in one call, writing nothing for a lease lost meanwhile, and releases the finished calls\' bytes once', async () => {
      const fid = `f-${randomUUID()}`;
      const calls = await acceptN(stores, fid, 4);
      const total = calls.reduce((s, c) => s + c.bytes, 0);
      expect(await usedBytes(stores, fid)).to.equal(total);
      const got = await stores.asyncCalls.claim(fid, 'gw-a', T + 100, T + 1_000, 4);
      // gw-a is taken for dead: its leases expire, the calls are reaped, gw-b claims the second one.
      expect(await stores.asyncCalls.reap(T + 2_000)).to.equal(4);
      const [stolen] = await stores.asyncCalls.claim(fid, 'gw-b', T + 2_000, T + 20_000, 1);
      expect(stolen!.id).to.equal(calls[0]!.id);
      // Re-claim the rest for gw-a, so its batch holds live leases (attempt 2) and one lost one (calls[0]'s attempt 1).
      const again = await stores.asyncCalls.claim(fid, 'gw-a', T + 2_000, T + 20_000, 3);
      expect(again.map((c) => c.attempt)).to.deep.equal([2, 2, 2]);
      const dead: AsyncCompletionWrite = {
        ...succeeded(again[2]!, 'gw-a'),
        completion: { state: 'dead', attempt: attemptOf(again[2]!, 500), reason: 'retries_exhausted', result: null, kept_until: T + 86_400_000 },
      };
      const written = await stores.asyncCalls.completeMany([succeeded(got[0]!, 'gw-a'), succeeded(again[0]!, 'gw-a'), succeeded(again[1]!, 'gw-a'), dead], T + 3_000);
      expect(written).to.deep.equal([false, true, true, true]);
      // The same batch sent again (a resend after a lost answer) writes nothing more.
      expect(await stores.asyncCalls.completeMany([succeeded(again[0]!, 'gw-a')], T + 3_000)).to.deep.equal([false]);
      const byId = new Map((await stores.asyncCalls.list(fid, ['queued', 'running', 'succeeded', 'dead'], 10)).map((c) => [c.id, c]));
      expect(byId.get(calls[0]!.id)).to.include({ state: 'running', lease_owner: 'gw-b' });
      expect(byId.get(calls[0]!.id)!.attempts.map((a) => a.status_code)).to.deep.equal([null]);
      for (const c of [again[0]!, again[1]!]) {
        const done = byId.get(c.id)!;
        expect(done).to.include({ state: 'succeeded', finished_at: T + 3_000, request: null });
        expect(done.attempts.map((a) => [a.attempt, a.status_code])).to.deep.equal([[1, null], [2, 200]]);
      }
      expect(byId.get(again[2]!.id)).to.include({ state: 'dead', dead_reason: 'retries_exhausted' });
      expect(byId.get(again[2]!.id)!.request).to.not.equal(null);
      // Two succeeded calls left the count; the running one and the dead one (it keeps its request) still count.
      expect(await usedBytes(stores, fid)).to.equal(total - again[0]!.bytes - again[1]!.bytes);
    });
  });
}

describe('SQLite store', () => {
  let dir: string;
  let n = 0;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'fnhost-async-'));
  });
  after(() => {
    rmSync(dir, { recursive: true, force: true });
  });
  describeBatches('SQLite', async () => openSqliteStores({ path: join(dir, `db-${++n}.db`) }));
});

describe('MongoDB store (stand-in)', function () {
  this.timeout(180_000);
  let server: MongoTestServer;
  before(async () => {
    server = await startMongoServer();
  });
  after(async () => {
    await server?.stop();
  });
  describeBatches('MongoDB', () => openMongoStores({ url: server.url, dbName: `fnhost_async_${randomUUID().slice(0, 8)}`, retry: { log: () => {} } }));
});
