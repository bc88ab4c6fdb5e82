import { expect } from 'chai';
import type { NetworkPolicy } from '@fnhost/core';
import { openMongoStores } from '@fnhost/core/store/mongo/index.ts';
import { PolicyCache } from '../../gateway/src/policy/cache.ts';
import { PolicyFollower } from '../../gateway/src/policy/follower.ts';
import { systemClock } from '../../gateway/src/scheduler/local.ts';
import { startMongoServer, type MongoTestServer } from '../helpers/mongo-server.ts';
import { pollUntil } from '../helpers/wait.ts';

// Two gateway replicas share the network policies in MongoDB (the wire-protocol stand-in here):
// a change written through one reaches the other's listeners (its egress proxy's recheck of the
// open tunnels) within the follow interval, read from the change log both write.

const DENY: NetworkPolicy = { default: 'allow', allow: [], deny: ['203.0.113.7'] };

describe('gateway: policy changes followed across replicas (MongoDB)', function () {
  this.timeout(60_000);
  let mongo: MongoTestServer;
  const closers: Array<() => Promise<void>> = [];

  before(async () => {
    mongo = await startMongoServer();
  });
  after(async () => {
    for (const close of closers.reverse()) await close();
    await mongo?.stop();
  });

  it('a change written through replica A runs replica B\'s listeners with its scope; B\'s own writes still run them at once', async () => {
    const dbName = `fnhost_follow_${process.pid}_${Date.now()}`;
    const storesA = await openMongoStores({ url: mongo.url, dbName });
    const storesB = await openMongoStores({ url: mongo.url, dbName });
    closers.push(() => storesA.close(), () => storesB.close());
    const a = new PolicyCache(storesA.policies, { shared: true });
    const b = new PolicyCache(storesB.policies, { shared: true });
    const heardByB: string[] = [];
    b.onChange((scope) => void heardByB.push(scope));
    // A change before B started concerns no tunnel B had open: not handed on.
    await a.set('fn-before', DENY, 'admin', Date.now());
    const failures: string[] = [];
    const follower = new PolicyFollower({ store: storesB.policies, changed: (scope) => b.changed(scope), clock: systemClock, background: { failed: (task, err) => void failures.push(`${task}: ${(err as Error).message}`) }, intervalMs: 100 });
    expect(await follower.poll(), 'the baseline read').to.deep.equal([]);
    follower.start();
    closers.push(() => follower.close());

    const writtenAt = Date.now();
    await a.set('fn-1', DENY, 'admin', writtenAt);
    await pollUntil('B hearing of fn-1', async () => (heardByB.includes('fn-1') ? true : undefined), 10_000, 20);
    await a.set('global', { default: 'deny', allow: [], deny: [] }, 'admin', Date.now());
    await pollUntil('B hearing of global', async () => (heardByB.includes('global') ? true : undefined), 10_000, 20);
    expect(heardByB.filter((s) => s !== 'fn-1' && s !== 'global')).to.deep.equal([]);
    // B's own write: its listeners run before the write is answered, as on one machine.
    const before = heardByB.length;
    await b.set('fn-2', DENY, 'admin', Date.now());
    expect(heardByB.slice(before, before + 1)).to.deep.equal(['fn-2']);
    expect(failures).to.deep.equal([]);
  });
});
