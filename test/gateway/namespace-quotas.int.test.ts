import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { KvQuotaError, type FunctionRecord, type RecordedExchange, type Stores } from '@fnhost/core';
import { openMongoStores } from '@fnhost/core/store/mongo/index.ts';
import { KvGuard } from '../../gateway/src/kv/guard.ts';
import { kvSettingsFrom, recordedLimitFor } from '../../gateway/src/kv/settings.ts';
import { Metrics } from '../../gateway/src/metrics.ts';
import { RecordedQuota } from '../../gateway/src/quotas/recorded.ts';
import { startMongoServer, type MongoTestServer } from '../helpers/mongo-server.ts';

// Per-namespace quotas of cluster mode (issue 28 point 2) on the MongoDB store
// (the stand-in): the gateway's KV guard and recorded-bytes quota over real
// store calls, two functions of one namespace sharing its totals, and a
// function of another namespace unaffected. (The chart's values reach these
// as FNHOST_NAMESPACE_* variables, parsed by kvSettingsFrom here.)

function fnIn(namespace: string, name: string): FunctionRecord {
  return {
    function_id: randomUUID(), name, namespace, code: 'x', env: {}, routes: [], timeout_seconds: 30, memory_mib: 128, active: true,
    retention: { type: 'none' }, schedule: null, created_at: '2026-11-28T00:00:00.000Z', updated_at: '2026-11-28T00:00:00.000Z',
  };
}

describe('namespace quotas on MongoDB (cluster mode)', function () {
  this.timeout(120_000);
  let mongo: MongoTestServer;
  let stores: Stores;

  before(async () => {
    mongo = await startMongoServer();
    stores = await openMongoStores({ url: mongo.url, dbName: 'fnhost_nsq_' + randomUUID().slice(0, 8), retry: { log: () => {} } });
  });
  after(async () => {
    await stores?.close();
    await mongo?.stop();
  });

  it('KV: two functions of a namespace share its total; a write past it is refused naming the namespace; another namespace is unaffected', async () => {
    const settings = kvSettingsFrom({ FNHOST_NAMESPACE_KV_MAX_BYTES: '10000', FNHOST_NAMESPACE_KV_QUOTAS: '{"big": 100000}', FNHOST_KV_WRITES_PER_SECOND: '0', FNHOST_KV_WRITE_BYTES_PER_SECOND: '0' });
    const metrics = new Metrics();
    const guard = new KvGuard({ kv: stores.kv, settings, cluster: true, metrics });
    const a = fnIn('team-a', 'one');
    const b = fnIn('team-a', 'two');
    const c = fnIn('big', 'three');
    const value = JSON.stringify('v'.repeat(2998)); // 3,000 bytes + the key
    const now = Date.now();
    await guard.set(a, 'k1', value, null, now);
    await guard.set(a, 'k2', value, null, now);
    await guard.set(b, 'k1', value, null, now); // 9,006 bytes in team-a
    const refused = await guard.set(b, 'k2', value, null, now).then(() => null, (e: unknown) => e);
    expect(refused).to.be.instanceOf(KvQuotaError);
    expect((refused as KvQuotaError).message).to.equal('KV quota exceeded: namespace team-a stores 9006 of 10000 bytes (namespace_kv_bytes)');
    expect((refused as KvQuotaError).status).to.equal(413);
    expect(metrics.refusedCount('namespace_kv_bytes')).to.equal(1);
    for (let i = 0; i < 5; i++) await guard.set(c, `k${i}`, value, null, now);
    expect((await stores.kv.groupUsage('team-a', now)).bytes).to.equal(9006);
    // A delete gives the room back.
    await guard.delete(a, 'k1', now);
    await guard.set(b, 'k2', value, null, now);
  });

  it('recorded requests: past the namespace\'s total an exchange is stored without its bodies, the call unaffected; another namespace keeps them', async () => {
    const settings = kvSettingsFrom({ FNHOST_NAMESPACE_RECORDED_MAX_BYTES: '5000', FNHOST_NAMESPACE_RECORDED_QUOTAS: '{"big": 0}' });
    const metrics = new Metrics();
    const a = fnIn('rec-a', 'pay');
    const c = fnIn('big', 'pay');
    const all = [a, c];
    const quota = new RecordedQuota({
      exchanges: stores.exchanges, metrics, now: () => Date.now(),
      limitOf: (ns) => recordedLimitFor(ns, settings),
      functionsOf: (ns) => all.filter((f) => f.namespace === ns),
    });
    const exchange = (n: number): RecordedExchange => ({
      request: { method: 'POST', path: '/', query: '', headers: {}, body: { encoding: 'utf8', data: 'q'.repeat(n), size: n, truncated: false } },
      response: { status: 200, headers: {}, body: null },
    });
    // 4 KiB already stored for rec-a (another gateway wrote it).
    await stores.logs.insert([{ id: 'log_' + randomUUID().slice(0, 12), function_id: a.function_id, status_code: 200, execution_time_ms: 1, error_message: null, executed_at: new Date().toISOString(), trigger: 'http', expires_at: null, exchange: exchange(3072) }]);
    quota.admit(a, exchange(1)); // starts the first measure
    await quota.settled();
    expect(await stores.exchanges.recordedBytes([a.function_id], Date.now())).to.equal(4096);
    const cut = quota.admit(a, exchange(2000));
    expect(cut.request.body).to.deep.include({ data: '', size: 2000 });
    expect(cut.request.body!.omitted).to.match(/^namespace rec-a stores \d+ of 5000 bytes of recorded requests \(namespace_recorded_bytes\)/);
    expect(metrics.refusedCount('namespace_recorded_bytes')).to.equal(1);
    expect(quota.admit(c, exchange(2000)).request.body!.data).to.have.length(2000);
  });
});
