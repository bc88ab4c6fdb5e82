import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { MongoClient } from 'mongodb';
import { openMongoStores } from '../../core/src/store/mongo/index.ts';
import type { Stores } from '../../core/src/stores.ts';
import { ANNOTATION_ID_HOME } from '../../core/src/function-id-home.ts';
import type { FunctionResource } from '../../core/src/function-resource.ts';
import { FunctionCache } from '../../gateway/src/cluster/functions.ts';
import { FunctionIdHomes, FunctionIdIndex } from '../../operator/src/identities.ts';
import { derivedFunctionId } from '../../operator/src/names.ts';
import { startMongoServer, type MongoTestServer } from '../helpers/mongo-server.ts';
import { FakeClock, fnResource } from './fixtures.ts';

// Issue 28.1 through the real store both sides share in a cluster: the operator's FunctionIdHomes
// writes each id's home into MongoDB (the stand-in, or MONGODB_URL) on one connection, a gateway's
// FunctionCache reads it on another, as the two processes do. The sequence of the issue, then a
// granted move; Kubernetes itself is in test/e2e/tenancy.cluster.test.ts.

describe('functionId homes through MongoDB: the operator writes, a gateway reads', function () {
  this.timeout(180_000);
  let server: MongoTestServer;
  let operatorStores: Stores;
  let gatewayStores: Stores;
  let dbName: string;

  before(async () => {
    server = await startMongoServer();
    dbName = 'fnhost_test_homes_' + randomUUID().slice(0, 8);
    operatorStores = await openMongoStores({ url: server.url, dbName, retry: { log: () => {} } });
    gatewayStores = await openMongoStores({ url: server.url, dbName, retry: { log: () => {} } });
  });

  after(async () => {
    await operatorStores?.close();
    await gatewayStores?.close();
    if (server && !server.standIn) {
      const client = await MongoClient.connect(server.url);
      await client.db(dbName).dropDatabase();
      await client.close();
    }
    await server?.stop();
  });

  it('team-b\'s claim never wins team-a\'s id, while team-a\'s Function is there, deleted or re-applied; a granted move does', async () => {
    const index = new FunctionIdIndex();
    const homes = new FunctionIdHomes({ store: operatorStores.homes, index, clock: new FakeClock(), grants: true });
    const cache = new FunctionCache({ homes: gatewayStores.homes });
    const id = derivedFunctionId('team-a', 'hello-a');
    const seen = async (...fns: FunctionResource[]) => {
      for (const fn of fns) {
        index.put(fn);
        cache.put(fn);
      }
      await cache.homesRead();
    };
    const gone = async (fn: FunctionResource, rv: string) => {
      index.remove(`${fn.metadata.namespace}/${fn.metadata.name}`);
      cache.apply({ key: `${fn.metadata.namespace}/${fn.metadata.name}`, object: undefined, resourceVersion: rv });
      await cache.homesRead();
    };
    const owner = fnResource({}, { namespace: 'team-a', name: 'hello-a', uid: 'a-1', resourceVersion: '10', creationTimestamp: '2026-11-20T10:00:00Z' });
    await seen(owner);
    expect((await homes.hold(owner)).held).to.equal(true);

    const steal = fnResource({ functionId: id }, { namespace: 'team-b', name: 'steal', uid: 'b-1', resourceVersion: '11', creationTimestamp: '2026-11-25T10:00:00Z' });
    await seen(steal);
    expect((await homes.hold(steal)).held).to.equal(false);
    expect(cache.get(id)?.namespace).to.equal('team-a');

    // team-a's redeploy: deleted (the claimant, older now, is looked at again), then applied again.
    await gone(owner, '12');
    expect((await homes.hold(steal)).held).to.equal(false);
    expect(cache.get(id)).to.equal(undefined);
    expect(cache.getByName('team-b', 'steal')).to.equal(undefined);
    const again = fnResource({}, { namespace: 'team-a', name: 'hello-a', uid: 'a-2', resourceVersion: '13', creationTimestamp: '2026-11-26T10:00:00Z' });
    await seen(again);
    expect((await homes.hold(again)).held).to.equal(true);
    expect(cache.get(id)?.namespace).to.equal('team-a');
    // team-b's claimant deleted: team-a's Function holds the id, and is the one whose finalizer would clean it.
    await gone(steal, '14');
    expect(await homes.holds(again)).to.equal(true);
    expect(cache.get(id)?.name).to.equal('hello-a');

    // A granted move: the operator moves the home, the gateway reads it at the mover's next change.
    const mover = fnResource({ functionId: id }, { namespace: 'team-b', name: 'hello-moved', uid: 'b-2', resourceVersion: '15', creationTimestamp: '2026-11-27T10:00:00Z', annotations: { [ANNOTATION_ID_HOME]: 'team-a' } });
    await seen(mover);
    expect(cache.get(id)?.namespace).to.equal('team-a');
    const moved = await homes.hold(mover);
    expect(moved.held).to.equal(true);
    await seen({ ...mover, metadata: { ...mover.metadata, resourceVersion: '16' }, status: { functionId: id } });
    expect(cache.get(id)?.name).to.equal('hello-moved');
    expect(cache.getByName('team-a', 'hello-a')).to.equal(undefined);
    expect((await homes.hold(again)).held).to.equal(false);
    expect(await gatewayStores.homes.get(id)).to.deep.include({ namespace: 'team-b', name: 'hello-moved', how: 'moved' });
  });
});
