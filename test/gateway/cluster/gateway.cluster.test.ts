import { expect } from 'chai';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConcurrentChangeError, type Executor, type Stores } from '@fnhost/core';
import type { FunctionResource } from '@fnhost/core/function-resource.ts';
import { openMongoStores } from '@fnhost/core/store/mongo/index.ts';
import { digest } from '../../../gateway/src/auth.ts';
import { startPlatform, type Platform } from '../../../gateway/src/app.ts';
import { loadConfig } from '../../../gateway/src/config.ts';
import { silentLogger, stdoutLogger } from '../../../gateway/src/log.ts';
import { derivedFunctionId, deriveToken } from '../../../gateway/src/cluster/resource.ts';
import { FunctionCache, KubeFunctionStore } from '../../../gateway/src/cluster/functions.ts';
import { KubeClient } from '../../../gateway/src/cluster/kube.ts';
import { loadClusterSettings } from '../../../gateway/src/cluster/settings.ts';
import { FunctionService } from '../../../gateway/src/functions/service.ts';
import { startCluster, type StartedCluster } from '../../../gateway/src/cluster/start.ts';
import { startMongoServer, type MongoTestServer } from '../../helpers/mongo-server.ts';
import { getCluster, makeKubectl, ROOT, uniqueName, waitFor, waitForNoReleaseOperator, type ClusterAccess } from '../../operator/harness.ts';
import { kubeconfigText } from '../../cli/helpers/kubeconfig.ts';
import { isolatedHome, runCli } from '../../cli/helpers/run.ts';

// The cluster-mode gateway in this process against the test cluster's real API
// server: the management API writes Function resources, kubectl edits reach
// the gateway through its watch, calls go to the addresses of EndpointSlices
// (here a stand-in runtime on the host's bridge address, behind a slice the
// test writes, so that no operator or pod is involved), a call for a function
// without a ready endpoint is held (and sent on early when the gateway's own
// /healthz probe finds a starting endpoint answering 200), and the status
// feedback reaches the Function. The whole platform on the cluster is test/e2e/.

const TOKEN = 'cluster-gateway-admin-token-0123';
const TOKEN_KEY = 'cluster-gateway-token-key-0123456789abcdef';
const CODE = 'export default (req, res) => res.json({ ok: true })';

describe('cluster-mode gateway (real API server)', function () {
  this.timeout(120_000);
  let cluster: ClusterAccess;
  let kubectl: ReturnType<typeof makeKubectl>;
  let nsA: string;
  let nsB: string;
  let mongo: MongoTestServer;
  let parts: StartedCluster;
  let platform: Platform<Executor>;
  let dataDir: string;
  let stub: Server;
  let stubPort: number;
  const seen: Array<{ url: string; headers: IncomingMessage['headers'] }> = [];
  /** What the stand-in answers to GET /healthz (a runtime answers 503 until its function module is loaded). */
  let stubHealth = 503;
  let healthProbes = 0;

  const api = async (method: string, path: string, body?: unknown) => {
    const r = await fetch(platform.url + path, {
      method,
      headers: { authorization: `Bearer ${TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await r.text();
    return { status: r.status, body: text === '' ? undefined : JSON.parse(text) };
  };
  const getFn = async (ns: string, name: string) => {
    const r = await kubectl(['get', 'fn', name, '-n', ns, '-o', 'json']);
    return r.code === 0 ? JSON.parse(r.stdout) : null;
  };
  const slice = (ns: string, fnName: string, ready: boolean, terminating = false) => ({
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: `fn-${fnName}-test`, namespace: ns, labels: { 'kubernetes.io/service-name': `fn-${fnName}`, 'app.kubernetes.io/managed-by': 'fnhost-operator' } },
    addressType: 'IPv4',
    ports: [{ name: 'http', port: stubPort, protocol: 'TCP' }],
    endpoints: [{ addresses: [cluster.hostIp ?? '10.244.0.1'], conditions: terminating ? { ready, terminating } : { ready } }],
  });
  const applySlice = async (ns: string, fnName: string, ready: boolean, terminating = false) => {
    const r = await kubectl(['apply', '--server-side', '--field-manager=test', '-f', '-'], JSON.stringify(slice(ns, fnName, ready, terminating)));
    expect(r.code, r.stderr).to.equal(0);
  };

  before(async () => {
    cluster = await getCluster();
    kubectl = makeKubectl(cluster);
    const crd = await kubectl(['apply', '--server-side', '--force-conflicts', '-f', `${ROOT}crds/fnhost.dev_functions.yaml`]);
    expect(crd.code, crd.stderr).to.equal(0);
    await waitFor('the CRD', async () => (await kubectl(['wait', '--for=condition=Established', '--timeout=30s', 'crd/functions.fnhost.dev'])).code === 0, 60_000);
    // An operator of a Helm release still going away (the e2e file's) would
    // give these Functions real Deployments and EndpointSlices beside the
    // test's stand-in ones; this file needs no operator at all.
    await waitForNoReleaseOperator(kubectl);
    nsA = uniqueName('gwc');
    nsB = `${nsA}-b`;
    for (const ns of [nsA, nsB]) expect((await kubectl(['create', 'namespace', ns])).code).to.equal(0);

    // A stand-in runtime on the bridge address (what a pod's address would be).
    stub = createServer((req, res) => {
      if (req.url === '/healthz') {
        // The gateway's own probe of a starting pod (not a call: not in `seen`).
        healthProbes++;
        res.writeHead(stubHealth, { 'content-type': 'application/json' }).end(JSON.stringify({ status: stubHealth === 200 ? 'ok' : 'starting' }));
        return;
      }
      seen.push({ url: req.url!, headers: req.headers });
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json', 'x-fnhost-internal': 'hidden' });
        res.end(JSON.stringify({ from: 'stub', path: req.url }));
      });
    });
    await new Promise<void>((resolve) => stub.listen(0, cluster.hostIp ?? '10.244.0.1', resolve));
    stubPort = (stub.address() as AddressInfo).port;

    mongo = await startMongoServer();
    dataDir = await mkdtemp(join(tmpdir(), 'fnhost-gwc-'));
    const { KubeConfig } = await import('@kubernetes/client-node');
    const kc = new KubeConfig();
    kc.loadFromFile(cluster.kubeconfig);
    const env = { FNHOST_MODE: 'cluster', FNHOST_TOKEN: TOKEN, FNHOST_TOKEN_KEY: TOKEN_KEY, MONGODB_URL: mongo.url, FNHOST_DEFAULT_NAMESPACE: nsA, FNHOST_HOLD_TIMEOUT_SECONDS: '3', FNHOST_STATUS_INTERVAL_SECONDS: '2' };
    const logger = process.env.FNHOST_TEST_VERBOSE ? stdoutLogger : silentLogger;
    parts = await startCluster({ settings: loadClusterSettings(env), kubeConfig: kc, logger });
    const stores = await openMongoStores({ url: mongo.url, dbName: `fnhost_gwc_${nsA.replace(/-/g, '_')}` });
    platform = await startPlatform({
      config: loadConfig({ PORT: '0', FNHOST_DATA_DIR: dataDir, FNHOST_TOKEN: TOKEN, FNHOST_SHUTDOWN_GRACE_MS: '2000', FNHOST_PUBLIC_URL: 'https://fn.test.example' }),
      stores,
      adminToken: { digest: digest(TOKEN), source: 'FNHOST_TOKEN', file: join(dataDir, 'token') },
      logger,
      cluster: parts,
    });
  });

  after(async () => {
    await platform?.close();
    for (const ns of [nsA, nsB]) if (ns) await kubectl(['delete', 'namespace', ns, '--wait=false']);
    await mongo?.stop();
    if (stub) await new Promise<void>((resolve) => stub.close(() => resolve()));
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('creates Function resources through the management API, per namespace, with the derived functionId', async () => {
    const created = await api('POST', '/api/v1/functions', { name: 'hello', code: CODE, env: { GREETING: 'hi' }, retention: { type: 'count', count: 10 }, timeout_seconds: 5 });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    expect(created.body).to.include({ name: 'hello', namespace: nsA, function_id: derivedFunctionId(nsA, 'hello'), invocation_url: `https://fn.test.example/invoke/${derivedFunctionId(nsA, 'hello')}` });
    const res = await getFn(nsA, 'hello');
    expect(res.spec).to.deep.include({ code: CODE, env: [{ name: 'GREETING', value: 'hi' }], timeoutSeconds: 5, retention: { type: 'count', count: 10 } });
    expect(res.spec).to.not.have.property('functionId');
    // The same name in another namespace is another function.
    const other = await api('POST', `/api/v1/functions?namespace=${nsB}`, { name: 'hello', code: CODE });
    expect(other.status).to.equal(201);
    expect(other.body.function_id).to.equal(derivedFunctionId(nsB, 'hello'));
    expect((await api('GET', '/api/v1/functions/hello')).body.namespace).to.equal(nsA);
    expect((await api('GET', `/api/v1/functions/hello?namespace=${nsB}`)).body.function_id).to.equal(derivedFunctionId(nsB, 'hello'));
    expect((await api('GET', `/api/v1/functions?namespace=${nsB}`)).body.functions.map((f: { namespace: string }) => f.namespace)).to.deep.equal([nsB]);
    const dup = await api('POST', '/api/v1/functions', { name: 'hello', code: CODE });
    expect(dup.status).to.equal(409);
    // The API server's own validation reaches the caller as 400 (CEL: days only with type time).
    const gone = await api('GET', '/api/v1/functions/nope');
    expect(gone.status).to.equal(404);
    expect(gone.body.message).to.contain(`in namespace "${nsA}"`);
  });

  it("says it runs in cluster mode (GET /api/v1/info), so the CLI binary takes the current kube context's namespace", async () => {
    expect((await api('GET', '/api/v1/info')).body).to.deep.equal({ mode: 'cluster', default_namespace: nsA });
    const home = isolatedHome();
    try {
      const kubeconfig = join(home.home, 'kubeconfig');
      await writeFile(kubeconfig, kubeconfigText({ current: 'team', contexts: [{ name: 'team', namespace: nsB }] }));
      const env = { ...home.env, FNHOST_URL: platform.url, FNHOST_TOKEN: TOKEN, KUBECONFIG: kubeconfig };
      const fromKube = await runCli(['function:get', 'hello', '-o', 'json'], { env });
      expect(fromKube.code, fromKube.stderr).to.equal(0);
      expect(JSON.parse(fromKube.stdout)).to.include({ namespace: nsB, function_id: derivedFunctionId(nsB, 'hello') });
      const named = await runCli(['function:get', 'hello', '-o', 'json', '-n', nsA], { env });
      expect(named.code, named.stderr).to.equal(0);
      expect(JSON.parse(named.stdout)).to.include({ namespace: nsA });
    } finally {
      home.cleanup();
    }
  });

  it('follows kubectl edits through its watch, and a management edit changes only what it names', async () => {
    const patched = await kubectl(['patch', 'fn', 'hello', '-n', nsA, '--type=merge', '-p', JSON.stringify({ spec: { retention: { type: 'time', days: 3, count: null } } })]);
    expect(patched.code, patched.stderr).to.equal(0);
    await waitFor('the gateway to see the kubectl edit', async () => (await api('GET', '/api/v1/functions/hello')).body.retention.type === 'time', 20_000, 100);
    const updated = await api('PATCH', '/api/v1/functions/hello', { code: 'export default (req, res) => res.json({ v: 2 })' });
    expect(updated.status).to.equal(200);
    const res = await getFn(nsA, 'hello');
    expect(res.spec.code).to.contain('v: 2');
    expect(res.spec.retention, 'the kubectl edit survives').to.deep.equal({ type: 'time', days: 3 });
    expect(res.metadata.annotations['fnhost.dev/updated-at']).to.equal(updated.body.updated_at);
    // Retention, schedule, activation through the API land in the resource.
    expect((await api('PUT', '/api/v1/functions/hello/retention', { type: 'count', count: 7 })).status).to.equal(200);
    expect((await api('PUT', '/api/v1/functions/hello/schedule', { cron: '*/5 * * * *' })).status).to.equal(200);
    const withSchedule = await getFn(nsA, 'hello');
    expect(withSchedule.spec.retention).to.deep.equal({ type: 'count', count: 7 });
    expect(withSchedule.spec.schedule).to.deep.equal({ cron: '*/5 * * * *', timezone: 'UTC', suspend: false });
    const disabled = await api('DELETE', '/api/v1/functions/hello/schedule');
    expect(disabled.body.schedule).to.include({ enabled: false, next_run_at: null });
    expect((await getFn(nsA, 'hello')).spec.schedule.suspend).to.equal(true);
    const table = await kubectl(['get', 'fn', '-n', nsA, '-o', 'wide']);
    expect(table.stdout.split('\n')[0]).to.contain('LAST INVOCATION').and.to.contain('ERRORS');
  });

  it('a second gateway whose cache has not seen another writer\'s change reads afresh before a read or a write, and the API server refuses a patch made from a stale version', async () => {
    // The state of a second gateway behind the same Service whose watch has not delivered kubectl's edit yet.
    const created = await api('POST', '/api/v1/functions', { name: 'lagging', code: CODE });
    expect(created.status).to.equal(201);
    const before = (await getFn(nsA, 'lagging')) as FunctionResource;
    const laggingCache = () => {
      const cache = new FunctionCache();
      cache.put(structuredClone(before));
      return cache;
    };
    const patched = await kubectl(['patch', 'fn', 'lagging', '-n', nsA, '--type=merge', '-p', JSON.stringify({ spec: { active: false } })]);
    expect(patched.code, patched.stderr).to.equal(0);
    const { KubeConfig } = await import('@kubernetes/client-node');
    const kc = new KubeConfig();
    kc.loadFromFile(cluster.kubeconfig);
    const client = new KubeClient(kc);

    // The store alone, from the stale version: the real API server answers 409 to its precondition.
    const staleCache = laggingCache();
    const staleStore = new KubeFunctionStore(client, staleCache, Promise.resolve());
    const staleRecord = staleCache.getByName(nsA, 'lagging')!;
    const refused = await staleStore.update({ ...staleRecord, timeout_seconds: 7 }, staleRecord).then(() => null, (e: unknown) => e);
    expect(refused).to.be.instanceOf(ConcurrentChangeError);
    expect((await getFn(nsA, 'lagging')).spec).to.deep.include({ active: false, timeoutSeconds: before.spec.timeoutSeconds });

    // The service of that gateway: a read catches up (deactivated), and an activation is made (not a no-op on its cached active: true).
    const laggingService = () => {
      const cache = laggingCache();
      return new FunctionService({
        stores: { functions: new KubeFunctionStore(client, cache, Promise.resolve()) } as unknown as Stores,
        executor: { sync: async () => undefined } as unknown as Executor,
        scheduler: { sync: () => undefined } as never,
        pendingCount: () => 0,
        executionUrl: () => 'http://gw',
        maxTimeoutSeconds: 900,
        now: () => Date.now(),
        logger: silentLogger as never,
        index: cache,
        defaultNamespace: nsA,
        multiNamespace: true,
      });
    };
    const reader = laggingService();
    expect(reader.resolve('lagging').active, 'the second gateway\'s cache').to.equal(true);
    await reader.catchUp('lagging');
    expect(reader.resolve('lagging').active, 'after catching up').to.equal(false);
    const writer = laggingService();
    expect(writer.resolve('lagging').active, 'the second gateway\'s cache').to.equal(true);
    expect((await writer.setActive('lagging', true)).active).to.equal(true);
    expect((await getFn(nsA, 'lagging')).spec.active, 'stored').to.equal(true);
    expect((await api('DELETE', '/api/v1/functions/lagging')).status).to.equal(204);
  });

  it('holds a call while the function has no ready endpoint, wakes it (status write), and gives a clear 503 past the bound', async () => {
    const id = derivedFunctionId(nsA, 'hello');
    const started = Date.now();
    const r = await fetch(`${platform.url}/invoke/${id}/x`);
    expect(r.status).to.equal(503);
    expect(Date.now() - started).to.be.at.least(2500);
    const body = (await r.json()) as { error: string; message: string };
    expect(body.error).to.equal('function_unavailable');
    expect(body.message).to.match(/has no ready pod after 3 s/);
    const fn = await waitFor('the wake to reach the Function status', async () => {
      const f = await getFn(nsA, 'hello');
      return f?.status?.lastInvocationTime ? f : null;
    }, 20_000, 200);
    expect(Date.parse(fn.status.lastInvocationTime)).to.be.at.least(Math.floor(started / 1000) * 1000);
    const logs = await api('GET', '/api/v1/functions/hello/logs');
    expect(logs.body.logs[0]).to.include({ status_code: 503, trigger: 'http' });
  });

  it('sends calls to the ready endpoint of the EndpointSlice, releases a held call as soon as one is ready, and drops it when not ready', async () => {
    const id = derivedFunctionId(nsA, 'hello');
    const held = fetch(`${platform.url}/invoke/${id}/held?q=1`);
    await new Promise((r) => setTimeout(r, 300));
    await applySlice(nsA, 'hello', true);
    const answer = await held;
    expect(answer.status).to.equal(200);
    expect(await answer.json()).to.deep.equal({ from: 'stub', path: '/held?q=1' });
    expect(answer.headers.get('x-fnhost-internal')).to.equal(null);
    const direct = await fetch(`${platform.url}/invoke/${id}/again`, { headers: { authorization: 'Bearer user-token' } });
    expect(direct.status).to.equal(200);
    const last = seen[seen.length - 1]!;
    expect(last.headers).to.include({ authorization: 'Bearer user-token', 'x-fnhost-trigger': 'http' });
    expect(last.headers['x-fnhost-execution-id']).to.match(/^log_/);
    // Not ready any more: calls are held again (and end in 503 after the bound).
    await applySlice(nsA, 'hello', false);
    await waitFor('the endpoint to leave the rotation', async () => parts.endpoints.origins(`${nsA}/fn-hello`).length === 0, 20_000, 50);
    expect((await fetch(`${platform.url}/invoke/${id}`)).status).to.equal(503);
    await applySlice(nsA, 'hello', true);
    await waitFor('the endpoint back', async () => parts.endpoints.origins(`${nsA}/fn-hello`).length === 1, 20_000, 50);
  });

  it('sends a held call to a starting endpoint (ready: false) whose /healthz answers 200, while its slice still says not ready; never to a terminating one', async () => {
    const id = derivedFunctionId(nsA, 'hello');
    const service = `${nsA}/fn-hello`;
    await applySlice(nsA, 'hello', false);
    await waitFor('the endpoint to be starting, not ready', async () => parts.endpoints.origins(service).length === 0 && parts.endpoints.starting(service).length === 1, 20_000, 50);
    const byProbe = parts.executorImpl.releasedByProbe;
    const bySlice = parts.executorImpl.releasedBySlice;
    const probesBefore = healthProbes;
    stubHealth = 200;
    try {
      const answer = await fetch(`${platform.url}/invoke/${id}/probed`);
      expect(answer.status).to.equal(200);
      expect(await answer.json()).to.deep.equal({ from: 'stub', path: '/probed' });
      expect(healthProbes, 'the gateway probed /healthz itself').to.be.greaterThan(probesBefore);
      expect(parts.executorImpl.releasedByProbe).to.equal(byProbe + 1);
      expect(parts.executorImpl.releasedBySlice).to.equal(bySlice);
      // The slice still says not ready, in the gateway's index and on the API server.
      expect(parts.endpoints.origins(service)).to.deep.equal([]);
      const onServer = JSON.parse((await kubectl(['get', 'endpointslice', 'fn-hello-test', '-n', nsA, '-o', 'json'])).stdout);
      expect(onServer.endpoints[0].conditions.ready).to.equal(false);
      const metricsText = await (await fetch(`${platform.url}/metrics`)).text();
      expect(metricsText).to.match(/^fnhost_cluster_hold_releases_total\{by="probe"\} [1-9]/m);
      expect(metricsText).to.match(/^fnhost_cluster_pod_probes_total [1-9]/m);

      // Terminating: never probed or used, though its /healthz still answers 200.
      await applySlice(nsA, 'hello', false, true);
      await waitFor('the endpoint to be terminating', async () => parts.endpoints.starting(service).length === 0, 20_000, 50);
      const probesAtTerminating = healthProbes;
      const refused = await fetch(`${platform.url}/invoke/${id}/terminating`);
      expect(refused.status).to.equal(503);
      expect(((await refused.json()) as { error: string }).error).to.equal('function_unavailable');
      expect(healthProbes, 'a terminating endpoint is not probed').to.equal(probesAtTerminating);
      expect(seen.map((r) => r.url)).to.not.include('/terminating');
    } finally {
      stubHealth = 503;
    }
    await applySlice(nsA, 'hello', true);
    await waitFor('the endpoint back', async () => parts.endpoints.origins(service).length === 1, 20_000, 50);
  });

  it('logs a call with the scheduled-trigger token as trigger schedule, refuses a wrong one, and accepts the derived runtime token on the internal API', async () => {
    const id = derivedFunctionId(nsA, 'hello');
    const scheduled = await fetch(`${platform.url}/invoke/${id}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-fnhost-schedule-token': deriveToken(TOKEN_KEY, 'schedule', id) }, body: '{}' });
    expect(scheduled.status).to.equal(200);
    expect(seen[seen.length - 1]!.headers['x-fnhost-trigger']).to.equal('schedule');
    expect(seen[seen.length - 1]!.headers).to.not.have.property('x-fnhost-schedule-token');
    const wrong = await fetch(`${platform.url}/invoke/${id}`, { method: 'POST', headers: { 'x-fnhost-schedule-token': deriveToken(TOKEN_KEY, 'schedule', derivedFunctionId(nsB, 'hello')) }, body: '{}' });
    expect(wrong.status).to.equal(401);
    const logs = await api('GET', '/api/v1/functions/hello/logs?limit=5');
    expect(logs.body.logs[0]).to.include({ trigger: 'schedule', status_code: 200 });

    const kv = (token: string) => fetch(`${platform.url}/internal/v1/kv/k1`, { method: 'PUT', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ value: { n: 1 } }) });
    expect((await kv(deriveToken(TOKEN_KEY, 'runtime', id))).status).to.equal(204);
    expect((await kv(deriveToken(TOKEN_KEY, 'schedule', id))).status).to.equal(401);
    const read = await fetch(`${platform.url}/internal/v1/kv/k1`, { headers: { authorization: `Bearer ${deriveToken(TOKEN_KEY, 'runtime', id)}` } });
    expect(await read.json()).to.deep.equal({ value: { n: 1 } });
  });

  it('turns a burst of calls into at most one status write per interval, with the error rate', async () => {
    const id = derivedFunctionId(nsA, 'hello');
    // Write what earlier tests left pending first (the refused and held calls are errors): on a
    // loaded machine their write could otherwise be merged with the burst's, and the rate with it.
    await parts.feedback.flush(true);
    const before = parts.feedback.writes;
    const t0 = Date.now();
    const statuses = await Promise.all(Array.from({ length: 60 }, () => fetch(`${platform.url}/invoke/${id}`).then(async (r) => (await r.arrayBuffer(), r.status))));
    expect(statuses.filter((s) => s !== 200), 'every call of the burst reaches the stand-in runtime').to.deep.equal([]);
    const fn = await waitFor('the error rate on the Function', async () => {
      const f = await getFn(nsA, 'hello');
      return f?.status?.errorRate === '0%' ? f : null;
    }, 20_000, 200);
    expect(fn.status.errorRate).to.equal('0%');
    const elapsed = Date.now() - t0;
    // One write per 2 s interval at most (plus the first, which is allowed at once).
    expect(parts.feedback.writes - before).to.be.at.most(Math.ceil(elapsed / 2000) + 1);
  });

  it('sees a Function created with kubectl, and deletes through the API', async () => {
    const manifest = { apiVersion: 'fnhost.dev/v1alpha1', kind: 'Function', metadata: { name: 'from-kubectl', namespace: nsB }, spec: { code: CODE } };
    expect((await kubectl(['apply', '-f', '-'], JSON.stringify(manifest))).code).to.equal(0);
    const seenFn = await waitFor('the watch to bring it', async () => {
      const r = await api('GET', `/api/v1/functions/from-kubectl?namespace=${nsB}`);
      return r.status === 200 ? r.body : null;
    }, 20_000, 100);
    expect(seenFn).to.include({ function_id: derivedFunctionId(nsB, 'from-kubectl'), timeout_seconds: 30, memory_mib: 128, active: true });
    expect((await api('DELETE', `/api/v1/functions/from-kubectl?namespace=${nsB}`)).status).to.equal(204);
    expect((await api('GET', `/api/v1/functions/from-kubectl?namespace=${nsB}`)).status).to.equal(404);
    await waitFor('the resource to be gone', async () => (await getFn(nsB, 'from-kubectl')) === null, 20_000, 200);
  });
});
