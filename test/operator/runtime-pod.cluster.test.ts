import { expect } from 'chai';
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { derivedFunctionId } from '../../operator/src/names.ts';
import { getCluster, makeKubectl, waitForNoReleaseOperator, ROOT, startOperator, uniqueName, waitFor } from './harness.ts';
import type { ClusterAccess, OperatorProcess } from './harness.ts';

// The operator's objects running on the node: the runtime pod answers over
// its Service; a timeout or a heap exhaustion does not restart its container;
// a kernel OOM kill shows as OOMKilled in the pod status; edits of code, env
// and active reach the running pods; and the CronJob's job pod calls the
// gateway's invocation path with the schedule token. Needs a Ready node with
// the runtime image (localhost/fnhost-runtime:dev) imported, which the cluster
// harness provides. Pods reach this test's stand-in gateway on the host at
// the CNI bridge's address (the harness's dnsServer, or FNHOST_TEST_HOST_IP).
//
// The scheduled Function is created first, in before(): its CronJob fires at
// the next minute boundary while the other tests run, and the last test only
// checks what the job did (one CronJob wait for the whole file).

const TOKEN_KEY = 'runtime-pod-test-token-key-0123456789abcdef';
/** The harness imports the runtime image under this name. */
const RUNTIME_IMAGE = process.env.FNHOST_TEST_RUNTIME_IMAGE ?? 'localhost/fnhost-runtime:dev';
/** The bound: after a timeout or a heap exhaustion the pod serves again within a second. */
const SERVES_AGAIN_MS = 1000;

const codeOf = (version: number) => `
export default async function (req, res) {
  if (req.path === '/spin') { for (;;) {} }
  if (req.path === '/heap') { const keep = []; for (;;) keep.push(new Array(100000).fill(keep.length)); }
  if (req.path === '/rss') { const keep = []; for (;;) { keep.push(Buffer.alloc(8 << 20, 1)); await new Promise((r) => setTimeout(r, 5)); } }
  res.json({ version: ${version}, greeting: process.env.GREETING, path: req.path });
}
`;
const TICKER_CODE = 'export default async function (req, res) { res.json({ ok: true }) }\n';

describe('Function pods on the node (real cluster)', function () {
  this.timeout(300_000);
  let cluster: ClusterAccess;
  let kubectl: ReturnType<typeof makeKubectl>;
  let ns: string;
  let op: OperatorProcess;
  let gateway: Server;
  let scheduleToken = '';
  const invocations: Array<{ method: string; url: string; headers: IncomingHttpHeaders; at: number }> = [];

  const getJson = async (args: string[]) => {
    const r = await kubectl([...args, '-n', ns, '-o', 'json']);
    if (r.code !== 0) throw new Error(r.stderr);
    return JSON.parse(r.stdout);
  };
  const patchFn = async (name: string, spec: object) => {
    const r = await kubectl(['patch', 'fn', name, '-n', ns, '--type=merge', '-p', JSON.stringify({ spec })]);
    expect(r.code, r.stderr).to.equal(0);
  };
  const readyOf = (fn: any) => (fn?.status?.conditions ?? []).find((c: any) => c.type === 'Ready');
  let gatewayUrl = '';
  /**
   * Another fnhost operator that watches every namespace (a Helm release of
   * another test on a shared cluster) would fight this test's operator over
   * the same objects; its settings show in status.url. Fail with that cause.
   */
  const ownStatus = (f: any) => {
    const url: string | undefined = f?.status?.url;
    if (url && !url.startsWith(gatewayUrl)) {
      throw new Error(`another fnhost operator reconciles this test's Functions (status.url ${url}, expected ${gatewayUrl}/…): stop cluster-wide operators of other runs`);
    }
    return f;
  };
  const runningPods = async (fn: string) =>
    (await getJson(['get', 'pods', '-l', `fnhost.dev/function=${fn}`])).items.filter((p: any) => p.status.phase === 'Running' && !p.metadata.deletionTimestamp);
  const waitReady = async (name: string, timeoutMs = 180_000) =>
    waitFor(`${name} Ready=True at its generation`, async () => {
      const f = ownStatus(await getJson(['get', 'fn', name]));
      return readyOf(f)?.status === 'True' && f.status.observedGeneration === f.metadata.generation ? f : null;
    }, timeoutMs, 1000).catch(async (err) => {
      const f = await getJson(['get', 'fn', name]).catch(() => null);
      throw new Error(`${(err as Error).message}; Ready is ${JSON.stringify(readyOf(f))}`);
    });

  let clusterIp = '';
  const call = async (path: string, timeoutMs = 10_000) => {
    const res = await fetch(`http://${clusterIp}:80${path}`, { signal: AbortSignal.timeout(timeoutMs) });
    const text = await res.text();
    let body: any = text;
    try {
      body = JSON.parse(text);
    } catch {}
    const headers: Record<string, string> = {};
    res.headers.forEach((value, name) => (headers[name] = value));
    return { status: res.status, kind: res.headers.get('x-fnhost-error-kind'), body, headers };
  };
  type Answer = Awaited<ReturnType<typeof call>>;
  /** What the cluster says when the Service does not answer: its EndpointSlices, the pods, and each pod's own answer. */
  const whyNoAnswer = async (path: string): Promise<string> => {
    const slices = await getJson(['get', 'endpointslices', '-l', 'kubernetes.io/service-name=fn-greeter']).catch((e: Error) => ({ items: [], error: e.message }));
    const endpoints = (slices.items ?? []).flatMap((s: any) => (s.endpoints ?? []).map((e: any) => ({ addresses: e.addresses, conditions: e.conditions, ports: s.ports })));
    const pods = (await getJson(['get', 'pods', '-l', 'fnhost.dev/function=greeter']).catch(() => ({ items: [] }))).items;
    const direct = await Promise.all(pods.map(async (p: any) => {
      const ip = p.status?.podIP;
      const answer = ip ? await fetch(`http://${ip}:8080${path}`, { signal: AbortSignal.timeout(3000) }).then((r) => r.status, (e: Error) => e.message) : 'no IP';
      return { pod: p.metadata.name, ip, phase: p.status?.phase, ready: p.status?.containerStatuses?.[0]?.ready, answer };
    }));
    const service = await getJson(['get', 'service', 'fn-greeter']).catch(() => null);
    return `EndpointSlices: ${JSON.stringify(endpoints)}; pods (their own IP answering ${path}): ${JSON.stringify(direct)}; Service ports ${JSON.stringify(service?.spec?.ports)}, selector ${JSON.stringify(service?.spec?.selector)}`;
  };
  /**
   * The first 200 over the ClusterIP. Until kube-proxy has programmed a new
   * pod's endpoint the ClusterIP refuses. (Before the harness refused Service
   * traffic that kube-proxy had not DNATed, such a call could leave by the
   * default route and get the sandbox egress proxy's empty 404, on a
   * keep-alive connection that later calls reused: see test/cluster/up.sh.)
   * Answers other than 200 are kept for the failure message and printed, so a
   * wrong 200 still fails the test and shows what came before it.
   */
  const firstOk = async (path: string, what: string): Promise<Answer & { before: Answer[] }> => {
    const before: Answer[] = [];
    const ok = await waitFor(what, async () => {
      const res = await call(path, 5000).catch((err: Error): Answer => ({ status: 0, kind: null, body: err.message, headers: {} }));
      if (res.status === 200) return res;
      before.push(res);
      return null;
    }, 60_000, 500).catch(async (err: Error) => {
      throw new Error(`${err.message}; answers: ${JSON.stringify(before.slice(-3))}; ${await whyNoAnswer(path)}`);
    });
    const answered = before.filter((r) => r.status !== 0);
    if (answered.length > 0) console.log(`      answers other than 200 before ${what}: ${JSON.stringify(answered.slice(-5))}`);
    return { ...ok, before };
  };
  /** Calls /hi until it answers 200; returns how long that took. */
  const msUntilServing = async () => {
    const t0 = performance.now();
    await waitFor('an answer 200', async () => (await call('/hi', 5000).catch(() => null))?.status === 200, 30_000, 20);
    return performance.now() - t0;
  };

  before(async () => {
    cluster = await getCluster();
    kubectl = makeKubectl(cluster);
    const nodes = JSON.parse((await kubectl(['get', 'nodes', '-o', 'json'])).stdout || '{"items":[]}');
    const ready = nodes.items.filter((n: any) => n.status.conditions.some((c: any) => c.type === 'Ready' && c.status === 'True'));
    if (ready.length === 0) throw new Error('these tests need a Ready node running the runtime image; the cluster has none (see test/cluster/README.md)');
    expect((await kubectl(['apply', '--server-side', '--force-conflicts', '-f', `${ROOT}crds/fnhost.dev_functions.yaml`])).code).to.equal(0);
    await waitFor('the CRD', async () => (await kubectl(['wait', '--for=condition=Established', '--timeout=30s', 'crd/functions.fnhost.dev'])).code === 0, 60_000);
    await waitForNoReleaseOperator(kubectl);
    ns = uniqueName('fnpod');
    expect((await kubectl(['create', 'namespace', ns])).code).to.equal(0);
    gateway = createServer((req, res) => {
      invocations.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, at: Date.now() });
      req.resume();
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
    await new Promise<void>((resolve) => gateway.listen(0, '0.0.0.0', resolve));
    gatewayUrl = `http://${cluster.hostIp ?? '10.244.0.1'}:${(gateway.address() as AddressInfo).port}`;
    op = startOperator(cluster, {
      FNHOST_TOKEN_KEY: TOKEN_KEY,
      FNHOST_WATCH_NAMESPACE: ns,
      FNHOST_LEASE_NAMESPACE: ns,
      FNHOST_GATEWAY_URL: gatewayUrl,
      FNHOST_IMAGE_PULL_POLICY: 'Never',
      FNHOST_RUNTIME_IMAGE: RUNTIME_IMAGE,
    });
    await op.port;
    // The scheduled Function first: its CronJob fires during the other tests.
    const ticker = {
      apiVersion: 'fnhost.dev/v1alpha1',
      kind: 'Function',
      metadata: { name: 'ticker', namespace: ns },
      spec: { code: TICKER_CODE, timeoutSeconds: 5, memoryMiB: 64, replicas: 0, schedule: { cron: '* * * * *' } },
    };
    const applied = await kubectl(['apply', '-f', '-'], JSON.stringify(ticker));
    expect(applied.code, applied.stderr).to.equal(0);
  });

  after(async () => {
    // Functions first, while the operator still runs their finalizer.
    if (kubectl && ns) await kubectl(['delete', 'fn', '--all', '-n', ns, '--timeout=60s']);
    await op?.stop();
    gateway?.close();
    if (kubectl && ns) await kubectl(['delete', 'namespace', ns, '--wait=false']);
  });

  it('runs the runtime image non-root with a read-only root filesystem and answers over its Service', async () => {
    const manifest = {
      apiVersion: 'fnhost.dev/v1alpha1',
      kind: 'Function',
      metadata: { name: 'greeter', namespace: ns },
      spec: { code: codeOf(1), env: [{ name: 'GREETING', value: 'hello' }], timeoutSeconds: 2, memoryMiB: 64 },
    };
    const r = await kubectl(['apply', '-f', '-'], JSON.stringify(manifest));
    expect(r.code, r.stderr).to.equal(0);
    const fn = await waitReady('greeter');
    expect(readyOf(fn).reason).to.equal('Available');

    const [pod] = await runningPods('greeter');
    expect(pod.spec.containers[0].image).to.equal(RUNTIME_IMAGE);
    expect(pod.status.containerStatuses[0].ready).to.equal(true);
    expect(pod.spec.securityContext.runAsNonRoot).to.equal(true);
    expect(pod.spec.containers[0].securityContext.readOnlyRootFilesystem).to.equal(true);
    expect(pod.spec.containers[0].resources.limits.memory).to.equal('160Mi');

    clusterIp = (await getJson(['get', 'service', 'fn-greeter'])).spec.clusterIP;
    const first = await firstOk('/hi', 'an answer 200 over the Service');
    expect(first.body, `answers before it: ${JSON.stringify(first.before.slice(-5))}`).to.deep.equal({ version: 1, greeting: 'hello', path: '/hi' });
  });

  it('a timeout and a heap exhaustion do not restart the container: the pod stays Running and serves again within a second', async () => {
    const [before] = await runningPods('greeter');
    const restartsBefore = before.status.containerStatuses[0].restartCount;

    const spin = await call('/spin');
    expect(spin.status).to.equal(504);
    expect(spin.kind).to.equal('timeout');
    const afterTimeout = await msUntilServing();

    const heap = await call('/heap', 30_000);
    expect(heap.status).to.equal(502);
    expect(heap.kind).to.equal('out_of_memory');
    const afterOom = await msUntilServing();
    console.log(`      serving again ${Math.round(afterTimeout)} ms after a timeout, ${Math.round(afterOom)} ms after a heap exhaustion`);
    expect(afterTimeout).to.be.below(SERVES_AGAIN_MS);
    expect(afterOom).to.be.below(SERVES_AGAIN_MS);

    const [pod] = await runningPods('greeter');
    expect(pod.metadata.name).to.equal(before.metadata.name);
    const cs = pod.status.containerStatuses[0];
    expect(cs.restartCount, JSON.stringify(cs.lastState)).to.equal(restartsBefore);
    expect(cs.state.running).to.be.an('object');
    expect(cs.ready).to.equal(true);
    expect(readyOf(await getJson(['get', 'fn', 'greeter'])).status).to.equal('True');
  });

  it('memory outside the heap past the container limit is OOMKilled by the kernel, shown in the pod status, and the pod serves again', async () => {
    const [before] = await runningPods('greeter');
    const restartsBefore = before.status.containerStatuses[0].restartCount;
    // The connection drops when the kernel kills the container.
    const res = await call('/rss', 60_000).catch((err: Error) => err);
    expect(res instanceof Error || res.status >= 500, JSON.stringify(res)).to.equal(true);
    const killed = await waitFor('OOMKilled in the pod status', async () => {
      const p = (await getJson(['get', 'pod', before.metadata.name])).status.containerStatuses[0];
      return p.restartCount > restartsBefore && p.lastState?.terminated?.reason === 'OOMKilled' ? p : null;
    }, 60_000, 500);
    expect(killed.lastState.terminated.exitCode).to.equal(137);
    await waitFor('the restarted container to serve', async () => (await call('/hi', 5000).catch(() => null))?.status === 200, 120_000, 500);
    await waitReady('greeter', 120_000);
  });

  it('edits of code, env and active with kubectl reach the running pods', async () => {
    await patchFn('greeter', { code: codeOf(2) });
    await waitFor('the rolled pod to answer with the new code', async () => (await call('/hi', 5000).catch(() => null))?.body?.version === 2, 180_000, 1000);

    await patchFn('greeter', { env: [{ name: 'GREETING', value: 'bonjour' }] });
    await waitFor('the rolled pod to answer with the new env', async () => (await call('/hi', 5000).catch(() => null))?.body?.greeting === 'bonjour', 180_000, 1000);
    await waitReady('greeter');

    await patchFn('greeter', { active: false });
    await waitFor('no runtime pod left', async () => (await getJson(['get', 'pods', '-l', 'fnhost.dev/function=greeter'])).items.length === 0, 120_000, 1000);
    const inactive = await waitReady('greeter');
    expect(readyOf(inactive).reason).to.equal('Inactive');
    expect((await getJson(['get', 'deployment', 'fn-greeter'])).spec.replicas).to.equal(0);
    expect(await call('/hi', 2000).catch(() => null)).to.equal(null);

    await patchFn('greeter', { active: true });
    const active = await waitReady('greeter');
    expect(readyOf(active).reason).to.equal('Available');
    const back = await firstOk('/hi', 'an answer 200 after reactivation');
    expect(back.body, `answers before it: ${JSON.stringify(back.before.slice(-5))}`).to.deep.equal({ version: 2, greeting: 'bonjour', path: '/hi' });
  });

  it("a scheduled function's CronJob fires a job pod that calls the gateway with the schedule token", async () => {
    ownStatus(await getJson(['get', 'fn', 'ticker']));
    const secret = await getJson(['get', 'secret', 'fn-ticker-tokens']);
    scheduleToken = Buffer.from(secret.data['schedule-token'], 'base64').toString();
    // Created in before(): the next minute boundary has usually passed by now.
    const hit = await waitFor('the CronJob job to call the gateway', async () => invocations.find((i) => i.url === `/invoke/${derivedFunctionId(ns, 'ticker')}`), 150_000, 1000);
    expect(hit.headers['x-fnhost-schedule-token']).to.equal(scheduleToken);
    expect(hit.method).to.equal('POST');
    await waitFor('the Job to succeed', async () => {
      const jobs = await getJson(['get', 'jobs', '-l', 'fnhost.dev/function=ticker']);
      return jobs.items.some((j: any) => (j.status.succeeded ?? 0) >= 1);
    }, 60_000, 1000);
    const jobPods = await getJson(['get', 'pods', '-l', 'fnhost.dev/function=ticker']);
    const jobPod = jobPods.items.find((p: any) => p.status.phase === 'Succeeded');
    expect(jobPod, 'a Succeeded job pod').to.be.an('object');
    expect(jobPod.spec.securityContext.runAsNonRoot).to.equal(true);
    expect(jobPod.spec.automountServiceAccountToken).to.equal(false);
    // The Service never selects a job pod (it is Ready while it runs): only the runtime pods.
    const selector = (await getJson(['get', 'service', 'fn-ticker'])).spec.selector as Record<string, string>;
    const selected = await getJson(['get', 'pods', '-l', Object.entries(selector).map(([k, v]) => `${k}=${v}`).join(',')]);
    expect(selected.items.map((p: any) => p.metadata.name)).to.not.include(jobPod.metadata.name);
    // Suspending keeps the CronJob and stops the runs.
    await patchFn('ticker', { schedule: { cron: '* * * * *', suspend: true } });
    await waitFor('the CronJob suspended', async () => (await getJson(['get', 'cronjob', 'fn-ticker-cron'])).spec.suspend === true);
  });
});
