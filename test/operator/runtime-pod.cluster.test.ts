import { expect } from 'chai';
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { derivedFunctionId } from '../../operator/src/names.ts';
import { getCluster, makeKubectl, ROOT, startOperator, uniqueName, waitFor } from './harness.ts';
import type { ClusterAccess, OperatorProcess } from './harness.ts';

// The operator's objects running on the node: the runtime pod answers over
// its Service, an env edit reaches the running pod, and the CronJob's job pod
// calls the gateway's invocation path with the schedule token. Needs a Ready
// node with the runtime image (localhost/fnhost-runtime:dev) imported, which
// the cluster harness provides. Pods reach this test's stand-in gateway on the
// host at the CNI bridge's address (the harness's dnsServer, or FNHOST_TEST_HOST_IP).

const TOKEN_KEY = 'runtime-pod-test-token-key-0123456789abcdef';
/** The harness imports the runtime image under this name; another Node image serves for the CronJob test alone. */
const RUNTIME_IMAGE = process.env.FNHOST_TEST_RUNTIME_IMAGE ?? 'localhost/fnhost-runtime:dev';
const CODE = 'export default async function (req, res) { res.json({ greeting: process.env.GREETING, path: req.path }) }\n';

describe('Function pods on the node (real cluster)', function () {
  this.timeout(300_000);
  let cluster: ClusterAccess;
  let kubectl: ReturnType<typeof makeKubectl>;
  let ns: string;
  let op: OperatorProcess;
  let gateway: Server;
  const invocations: Array<{ method: string; url: string; headers: IncomingHttpHeaders }> = [];

  const getJson = async (args: string[]) => {
    const r = await kubectl([...args, '-n', ns, '-o', 'json']);
    if (r.code !== 0) throw new Error(r.stderr);
    return JSON.parse(r.stdout);
  };
  const readyOf = (fn: any) => (fn?.status?.conditions ?? []).find((c: any) => c.type === 'Ready');

  before(async () => {
    cluster = await getCluster();
    kubectl = makeKubectl(cluster);
    const nodes = JSON.parse((await kubectl(['get', 'nodes', '-o', 'json'])).stdout || '{"items":[]}');
    const ready = nodes.items.filter((n: any) => n.status.conditions.some((c: any) => c.type === 'Ready' && c.status === 'True'));
    if (ready.length === 0) throw new Error('these tests need a Ready node running the runtime image; the cluster has none (see test/cluster/README.md)');
    expect((await kubectl(['apply', '--server-side', '--force-conflicts', '-f', `${ROOT}crds/fnhost.dev_functions.yaml`])).code).to.equal(0);
    await waitFor('the CRD', async () => (await kubectl(['wait', '--for=condition=Established', '--timeout=30s', 'crd/functions.fnhost.dev'])).code === 0, 60_000);
    ns = uniqueName('fnpod');
    expect((await kubectl(['create', 'namespace', ns])).code).to.equal(0);
    gateway = createServer((req, res) => {
      invocations.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
      req.resume();
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
    await new Promise<void>((resolve) => gateway.listen(0, '0.0.0.0', resolve));
    op = startOperator(cluster, {
      FNHOST_TOKEN_KEY: TOKEN_KEY,
      FNHOST_WATCH_NAMESPACE: ns,
      FNHOST_LEASE_NAMESPACE: ns,
      FNHOST_GATEWAY_URL: `http://${cluster.hostIp ?? '10.244.0.1'}:${(gateway.address() as AddressInfo).port}`,
      FNHOST_IMAGE_PULL_POLICY: 'Never',
      FNHOST_RUNTIME_IMAGE: RUNTIME_IMAGE,
    });
    await op.port;
  });

  after(async () => {
    // Functions first, while the operator still runs their finalizer.
    if (kubectl && ns) await kubectl(['delete', 'fn', '--all', '-n', ns, '--timeout=60s']);
    await op?.stop();
    gateway?.close();
    if (kubectl && ns) await kubectl(['delete', 'namespace', ns, '--wait=false']);
  });

  it('a scheduled function\'s CronJob fires a job pod that calls the gateway with the schedule token', async () => {
    const manifest = {
      apiVersion: 'fnhost.dev/v1alpha1',
      kind: 'Function',
      metadata: { name: 'ticker', namespace: ns },
      spec: { code: CODE, timeoutSeconds: 5, memoryMiB: 64, replicas: 0, schedule: { cron: '* * * * *' } },
    };
    expect((await kubectl(['apply', '-f', '-'], JSON.stringify(manifest))).code).to.equal(0);
    const secret = await waitFor('the token Secret', async () => (await kubectl(['get', 'secret', 'fn-ticker-tokens', '-n', ns, '-o', 'json'])).stdout || null);
    const scheduleToken = Buffer.from(JSON.parse(secret).data['schedule-token'], 'base64').toString();
    // The next minute boundary plus the job pod's start.
    const hit = await waitFor('the CronJob job to call the gateway', async () => invocations.find((i) => i.url === `/invoke/${derivedFunctionId(ns, 'ticker')}`), 150_000, 1000);
    expect(hit.headers['x-fnhost-schedule-token']).to.equal(scheduleToken);
    expect(hit.method).to.equal('POST');
    await waitFor('the Job to succeed', async () => {
      const jobs = await getJson(['get', 'jobs', '-l', 'fnhost.dev/function=ticker']);
      return jobs.items.some((j: any) => (j.status.succeeded ?? 0) >= 1);
    }, 60_000, 1000);
    await kubectl(['patch', 'fn', 'ticker', '-n', ns, '--type=merge', '-p', '{"spec":{"schedule":{"cron":"* * * * *","suspend":true}}}']);
  });

  it('runs the runtime image, answers over its Service and follows an env edit', async () => {
    const manifest = {
      apiVersion: 'fnhost.dev/v1alpha1',
      kind: 'Function',
      metadata: { name: 'greeter', namespace: ns },
      spec: { code: CODE, env: [{ name: 'GREETING', value: 'hello' }], timeoutSeconds: 5, memoryMiB: 64 },
    };
    expect((await kubectl(['apply', '-f', '-'], JSON.stringify(manifest))).code).to.equal(0);
    const fn = await waitFor('Ready=True', async () => {
      const f = await getJson(['get', 'fn', 'greeter']);
      return readyOf(f)?.status === 'True' ? f : null;
    }, 180_000, 1000).catch(async (err) => {
      const f = await getJson(['get', 'fn', 'greeter']);
      throw new Error(`${(err as Error).message}; Ready is ${JSON.stringify(readyOf(f))}`);
    });
    expect(readyOf(fn).reason).to.equal('Available');

    const pods = await getJson(['get', 'pods', '-l', 'fnhost.dev/function=greeter']);
    const pod = pods.items.find((p: any) => p.status.phase === 'Running');
    expect(pod.spec.containers[0].image).to.equal(RUNTIME_IMAGE);
    expect(pod.status.containerStatuses[0].ready).to.equal(true);

    const svc = await getJson(['get', 'service', 'fn-greeter']);
    const call = async () => {
      const res = await fetch(`http://${svc.spec.clusterIP}:80/hi`, { signal: AbortSignal.timeout(5000) });
      return { status: res.status, body: await res.json() };
    };
    const first = await waitFor('an answer over the Service', call, 60_000, 500);
    expect(first.status).to.equal(200);
    expect(first.body.greeting).to.equal('hello');

    expect((await kubectl(['patch', 'fn', 'greeter', '-n', ns, '--type=merge', '-p', '{"spec":{"env":[{"name":"GREETING","value":"bonjour"}]}}'])).code).to.equal(0);
    await waitFor('the rolled pod to answer with the new env', async () => {
      const r = await call().catch(() => null);
      return r?.body.greeting === 'bonjour';
    }, 180_000, 1000);
  });
});
