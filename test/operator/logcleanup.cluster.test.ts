import { expect } from 'chai';
import { MongoClient } from 'mongodb';
import { isoTimestamp, newLogId } from '@fnhost/core';
import type { Stores, StoredLog } from '@fnhost/core';
import { openMongoStores } from '@fnhost/core/store/mongo/index.ts';
import { derivedFunctionId } from '../../operator/src/names.ts';
import { startMongoServer } from '../helpers/mongo-server.ts';
import type { MongoTestServer } from '../helpers/mongo-server.ts';
import { getCluster, makeKubectl, waitForNoReleaseOperator, ROOT, startOperator, uniqueName, waitFor } from './harness.ts';
import type { ClusterAccess, OperatorProcess } from './harness.ts';

// The finalizer's cleanup outside the cluster, end to end: an operator given
// MONGODB_URL (the MongoDB stand-in, or a real server from MONGODB_URL)
// deletes a deleted Function's execution logs and counter from the store, and
// nothing of another Function's.

const CODE = 'export default async function (req, res) { res.json({ ok: true }) }\n';

describe('Function deletion cleans its execution logs from MongoDB (real API server)', function () {
  this.timeout(180_000);
  let cluster: ClusterAccess;
  let kubectl: ReturnType<typeof makeKubectl>;
  let ns: string;
  let mongo: MongoTestServer;
  let stores: Stores;
  let op: OperatorProcess;
  const dbName = `fnhost_test_${uniqueName('op').replace(/-/g, '_')}`;
  const url = () => {
    const u = new URL(mongo.url);
    u.pathname = `/${dbName}`;
    return u.toString();
  };

  const logsOf = async (functionId: string) =>
    (await stores.logs.list(functionId, { status: 'all', limit: 100, page: 1 }, { type: 'none' }, Date.now())).pagination.totalCount;
  const record = (functionId: string, i: number): StoredLog => ({
    id: newLogId(),
    function_id: functionId,
    status_code: i % 5 === 0 ? 500 : 200,
    execution_time_ms: 3,
    error_message: i % 5 === 0 ? 'boom' : null,
    executed_at: isoTimestamp(Date.now() - i * 1000),
    trigger: 'http',
    expires_at: null,
  });

  before(async () => {
    cluster = await getCluster();
    kubectl = makeKubectl(cluster);
    expect((await kubectl(['apply', '--server-side', '--force-conflicts', '-f', `${ROOT}crds/fnhost.dev_functions.yaml`])).code).to.equal(0);
    await waitFor('the CRD', async () => (await kubectl(['wait', '--for=condition=Established', '--timeout=30s', 'crd/functions.fnhost.dev'])).code === 0, 60_000);
    await waitForNoReleaseOperator(kubectl);
    ns = uniqueName('fnlogs');
    expect((await kubectl(['create', 'namespace', ns])).code).to.equal(0);
    mongo = await startMongoServer();
    stores = await openMongoStores({ url: url() });
    op = startOperator(cluster, {
      FNHOST_TOKEN_KEY: 'logcleanup-test-token-key-0123456789abcdef',
      FNHOST_WATCH_NAMESPACE: ns,
      FNHOST_LEASE_NAMESPACE: ns,
      MONGODB_URL: url(),
    });
    await op.port;
  });

  after(async () => {
    if (kubectl && ns) await kubectl(['delete', 'fn', '--all', '-n', ns, '--timeout=60s']);
    await op?.stop();
    await stores?.close();
    if (mongo && !mongo.standIn) {
      // A real server from MONGODB_URL: drop this test's database.
      const client = await MongoClient.connect(mongo.url);
      await client.db(dbName).dropDatabase();
      await client.close();
    }
    await mongo?.stop();
    if (kubectl && ns) await kubectl(['delete', 'namespace', ns, '--wait=false']);
  });

  it('the operator started with the store cleaner', async () => {
    const started = op.logs.find((l) => l.msg === 'operator started');
    expect(started?.logCleaner).to.equal('store');
  });

  it('deleting a Function removes its logs and counter, and keeps the other Function\'s', async () => {
    const [gone, kept] = [uniqueName('gone'), uniqueName('kept')];
    const [goneId, keptId] = [derivedFunctionId(ns, gone), derivedFunctionId(ns, kept)];
    for (const name of [gone, kept]) {
      const manifest = { apiVersion: 'fnhost.dev/v1alpha1', kind: 'Function', metadata: { name, namespace: ns }, spec: { code: CODE, replicas: 0 } };
      const r = await kubectl(['apply', '-f', '-'], JSON.stringify(manifest));
      expect(r.code, r.stderr).to.equal(0);
    }
    await waitFor('both Functions reconciled', async () => {
      const list = JSON.parse((await kubectl(['get', 'fn', '-n', ns, '-o', 'json'])).stdout);
      return list.items.filter((f: any) => f.status?.observedGeneration === f.metadata.generation && (f.metadata.finalizers ?? []).length > 0).length === 2;
    });
    // As the gateway would have written them.
    await stores.logs.insert(Array.from({ length: 30 }, (_, i) => record(goneId, i)));
    await stores.logs.insert(Array.from({ length: 10 }, (_, i) => record(keptId, i)));
    await stores.counters.add(new Map([[goneId, 30], [keptId, 10]]));
    expect(await logsOf(goneId)).to.equal(30);

    const r = await kubectl(['delete', 'fn', gone, '-n', ns, '--wait=false']);
    expect(r.code, r.stderr).to.equal(0);
    await waitFor('the Function to be gone', async () => (await kubectl(['get', 'fn', gone, '-n', ns])).code !== 0);
    expect(op.logs.some((l) => l.msg === 'execution logs cleaned' && l.functionId === goneId && l.cleaner === 'store')).to.equal(true);
    expect(await logsOf(goneId)).to.equal(0);
    expect(await stores.counters.get(goneId)).to.equal(0);
    expect(await logsOf(keptId)).to.equal(10);
    expect(await stores.counters.get(keptId)).to.equal(10);
  });
});
