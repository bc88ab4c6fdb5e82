import { expect } from 'chai';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startMongoServer, type MongoTestServer } from '../helpers/mongo-server.ts';
import { getCluster, makeKubectl, uniqueName, type ClusterAccess } from '../operator/harness.ts';
import { ROOT, PLATFORM_IMAGE, RUNTIME_IMAGE, E2E_TAG, buildPlatformImage, buildRuntimeImage, run, startRelay, testClusterPlatformNetworkPolicy, waitFor } from './helpers.ts';

// Issue 21 (items 1 and 2) in cluster mode, on the test cluster: a pod's execution carries its
// console output (handed over by the runtime in the pod to the gateway's internal API, not read
// from the pod's log), deferred output included; the first call, held for the new pod, is a
// cold start; latency comes from the MongoDB histogram.


describe('fnhost on Kubernetes: console output, cold starts and latency (issue 21)', function () {
  this.timeout(600_000);
  let cluster: ClusterAccess;
  let kubectl: ReturnType<typeof makeKubectl>;
  let helm: string;
  let mongo: MongoTestServer;
  let relay: { port: number; close(): Promise<void> };
  let relNs: string;
  let ns: string;
  let tmp: string;
  let gatewayUrl: string;
  let token: string;
  const release = 'e2e-insight';
  const dbName = `fnhost_e2e_insight_${Date.now()}`;

  const helmRun = (args: string[], timeoutMs = 600_000) => run(helm, args, { env: { KUBECONFIG: cluster.kubeconfig }, timeoutMs });
  const api = async (method: string, path: string, body?: unknown) => {
    const r = await fetch(`${gatewayUrl}${path}${path.includes('?') ? '&' : '?'}namespace=${ns}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(60_000),
    });
    const text = await r.text();
    return { status: r.status, body: text === '' ? undefined : JSON.parse(text) };
  };

  before(async function () {
    this.timeout(1_800_000);
    cluster = await getCluster();
    kubectl = makeKubectl(cluster);
    helm = (JSON.parse((await run(`${ROOT}test/cluster/env.sh`, ['--json'])).stdout) as { helm: string }).helm;
    tmp = await mkdtemp(join(tmpdir(), 'fnhost-e2e-insight-'));
    const suffix = uniqueName('x').slice(2);
    relNs = `fnhost-e2e-insight-${suffix}`;
    ns = `e2e-insight-${suffix}`;
    await Promise.all([buildPlatformImage(PLATFORM_IMAGE), buildRuntimeImage(RUNTIME_IMAGE)]);
    mongo = await startMongoServer({ useEnv: false });
    relay = await startRelay(cluster.hostIp ?? '10.244.0.1', mongo.port!);
    expect((await kubectl(['create', 'namespace', ns])).code).to.equal(0);
    const valuesFile = join(tmp, 'values.json');
    await writeFile(
      valuesFile,
      JSON.stringify({
        image: { repository: 'localhost/fnhost-platform', tag: E2E_TAG, pullPolicy: 'Never' },
        runtimeImage: { repository: 'localhost/fnhost-runtime', tag: E2E_TAG, pullPolicy: 'Never' },
        mongodb: { url: `mongodb://${cluster.hostIp ?? '10.244.0.1'}:${relay.port}/${dbName}` },
        gateway: { replicas: 1, defaultNamespace: ns, resources: { requests: { cpu: '50m', memory: '128Mi' }, limits: { memory: '512Mi' } } },
        operator: { resources: { requests: { cpu: '20m', memory: '96Mi' }, limits: { memory: '512Mi' } }, functionCpuRequest: '10m' },
        networkPolicy: { platformCIDRs: ['10.244.0.0/24', '10.96.0.0/16'] },
        platformNetworkPolicy: testClusterPlatformNetworkPolicy(cluster.hostIp ?? '10.244.0.1', relay.port),
      }),
    );
    const installed = await helmRun(['install', release, `${ROOT}charts/fnhost`, '-n', relNs, '--create-namespace', '-f', valuesFile, '--wait', '--timeout', '8m']);
    expect(installed.code, installed.stderr + installed.stdout).to.equal(0);
    const svc = JSON.parse((await kubectl(['get', 'svc', `${release}-fnhost-gateway`, '-n', relNs, '-o', 'json'])).stdout);
    gatewayUrl = `http://${svc.spec.clusterIP}:8080`;
    const secret = JSON.parse((await kubectl(['get', 'secret', `${release}-fnhost-admin`, '-n', relNs, '-o', 'json'])).stdout);
    token = Buffer.from(secret.data.token, 'base64').toString('utf8');
  });

  after(async function () {
    this.timeout(300_000);
    if (kubectl !== undefined) {
      if (helm !== undefined && relNs) await helmRun(['uninstall', release, '-n', relNs, '--wait', '--timeout', '2m']);
      if (ns) {
        const list = await kubectl(['get', 'fn', '-n', ns, '-o', 'name']);
        for (const name of list.stdout.split('\n').filter(Boolean)) await kubectl(['patch', name, '-n', ns, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
      }
      for (const name of [ns, relNs]) if (name) await kubectl(['delete', 'namespace', name, '--wait=false']);
    }
    await relay?.close();
    await mongo?.stop();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  it('the first call waits for the new pod (cold start); its record carries what the pod\'s handler wrote, deferred output included', async () => {
    const created = await api('POST', '/api/v1/functions', {
      name: 'talker',
      code: "export default (req, res) => { console.log('from the pod', req.query.n); console.error('pod warns'); setTimeout(() => console.log('after the answer'), 50); res.json({ n: req.query.n }); }",
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    // The call is held until the pod is ready (bounded hold): it may take a few tries on a loaded node.
    await waitFor('the first call to answer', async () => {
      const r = await fetch(`${gatewayUrl}/invoke/${created.body.function_id}?n=1`, { signal: AbortSignal.timeout(60_000) }).catch(() => undefined);
      return r?.status === 200 ? true : null;
    }, 300_000, 2000);
    await (await fetch(`${gatewayUrl}/invoke/${created.body.function_id}?n=2`)).arrayBuffer();
    const logs = await waitFor('both records', async () => {
      const l = await api('GET', '/api/v1/functions/talker/logs');
      return l.body.logs.filter((x: { status_code: number }) => x.status_code === 200).length >= 2 ? l.body.logs : null;
    }, 60_000, 1000);
    const [second, first] = logs as Array<{ id: string; cold_start: boolean; wait_ms: number }>;
    expect(first!.cold_start).to.equal(true);
    expect(first!.wait_ms).to.be.a('number');
    expect(second!.cold_start).to.equal(false);
    const detail = await waitFor('the console output of the second call', async () => {
      const d = await api('GET', `/api/v1/functions/talker/logs/${second!.id}`);
      return d.status === 200 && d.body.console !== null ? d.body : null;
    }, 60_000, 1000);
    expect(detail.console.lines.map((l: { stream: string; text: string }) => [l.stream, l.text])).to.deep.equal([
      ['stdout', 'from the pod 2'],
      ['stderr', 'pod warns'],
      ['stdout', 'after the answer'],
    ]);
    const latency = await api('GET', '/api/v1/functions/talker/latency');
    expect(latency.body.last_hour.count).to.be.at.least(2);
    expect(latency.body.last_hour.cold_starts).to.be.at.least(1);
    const unknown = await api('GET', '/api/v1/functions/talker/logs/log_nosuchrecord00000000');
    expect(unknown.status).to.equal(404);
    expect(unknown.body.error).to.equal('log_not_found');
  });
});
