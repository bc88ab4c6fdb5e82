import { expect } from 'chai';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { derivedFunctionId } from '../../gateway/src/cluster/resource.ts';
import { startMongoServer, type MongoTestServer } from '../helpers/mongo-server.ts';
import { getCluster, makeKubectl, uniqueName, type ClusterAccess } from '../operator/harness.ts';
import { NODE, ROOT, PLATFORM_IMAGE, RUNTIME_IMAGE, buildPlatformImage, buildRuntimeImage, installTestRelease, run, startRelay, waitFor, type Run } from './helpers.ts';

// Issue 28, points 3 and 4 and the Functions-count quota of point 2, on the test cluster with one
// chart install: every Function the operator will not run answers at once (503 naming the reason;
// a FunctionIdTaken claimant called by name says why); a function pod's child processes find no
// runtime token in any environ; a function pod is refused the gateway's /metrics while the
// documented scrape (the metrics Secret's token) works; function:scale --replicas on an autoscaled
// function is refused (409 naming spec.scaling); a ResourceQuota on count/functions.fnhost.dev
// refuses a create as kubectl, the API and the CLI show it; after helm uninstall no Lease is left.

const OK = 'export default (req, res) => res.json({ ok: true })';
/** Well under the gateway's hold (gateway.holdTimeoutSeconds, 30 s): an answer this fast was not held. */
const FAST_MS = 5_000;

/** A handler that looks for the runtime token wherever a child process or the handler could read it, and fetches a URL from a child process (outside the runtime's egress routing). */
const SNOOP = `
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
const CREDENTIAL = /FNHOST_(RUNTIME|SPECIALIZE)_TOKEN=[^\\0\\n]+/;
const run = (file, args) => { try { return execFileSync(file, args, { encoding: 'latin1', timeout: 10000 }); } catch (e) { return 'failed: ' + String(e.stderr || e.message).slice(0, 200); } };
export default async (req, res) => {
  if (req.query.metrics) {
    const script = "fetch(process.argv[1]).then((r) => console.log(r.status), (e) => console.log('unreachable ' + (e.cause?.code ?? e.message)))";
    return res.json({ metrics: run(process.execPath, ['-e', script, req.query.metrics]).trim() });
  }
  const sources = {
    'fs /proc/self/environ': (() => { try { return readFileSync('/proc/self/environ', 'latin1'); } catch (e) { return 'failed: ' + e.code; } })(),
    'fs /proc/1/environ': (() => { try { return readFileSync('/proc/1/environ', 'latin1'); } catch (e) { return 'failed: ' + e.code; } })(),
    'child /proc/self/environ': run('cat', ['/proc/self/environ']),
    'child /proc/$PPID/environ': run('/bin/sh', ['-c', 'cat /proc/$PPID/environ']),
    'child /proc/1/environ': run('cat', ['/proc/1/environ']),
    'child env': run('env', []),
  };
  const found = Object.entries(sources).filter(([, text]) => CREDENTIAL.test(text)).map(([where, text]) => where + ': ' + text.match(CREDENTIAL)[0].slice(0, 30));
  await kv.set('k', 'v');
  res.json({ found, pid1Read: /PATH=/.test(sources['child /proc/1/environ']), kv: await kv.get('k') });
};`;

describe('fnhost on Kubernetes: functions that will not run answer at once; the small leaks closed (issue 28)', function () {
  this.timeout(600_000);
  let cluster: ClusterAccess;
  let kubectl: ReturnType<typeof makeKubectl>;
  let helm: string;
  let mongo: MongoTestServer;
  let relay: { port: number; close(): Promise<void> };
  let relNs = '';
  let ns = '';
  let other = '';
  let tmp = '';
  let gatewayUrl: string;
  let adminToken: string;
  let uninstalled = false;
  const release = 'e2e-leaks';
  const dbName = `fnhost_e2e_leaks_${Date.now()}`;

  const helmRun = (args: string[], timeoutMs = 600_000) => run(helm, args, { env: { KUBECONFIG: cluster.kubeconfig }, timeoutMs });
  const cli = (args: string[]): Promise<Run> =>
    run(NODE, [`${ROOT}cli/bin/fnhost.js`, ...args, '--url', gatewayUrl, '--token', adminToken, '--namespace', ns], {
      env: { HOME: tmp, XDG_CONFIG_HOME: join(tmp, 'config'), KUBECONFIG: join(tmp, 'none'), FNHOST_URL: undefined, FNHOST_TOKEN: undefined, FNHOST_NAMESPACE: undefined, NO_COLOR: '1' },
      timeoutMs: 300_000,
    });
  const api = async (method: string, path: string, body?: unknown) => {
    const r = await fetch(`${gatewayUrl}/api/v1${path}`, { method, headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(120_000) });
    const text = await r.text();
    return { status: r.status, body: text === '' ? undefined : JSON.parse(text) };
  };
  const apply = (namespace: string, name: string, spec: Record<string, unknown>) =>
    kubectl(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'fnhost.dev/v1alpha1', kind: 'Function', metadata: { name, namespace }, spec }));
  const ready = async (namespace: string, name: string) => {
    const got = await kubectl(['get', 'fn', name, '-n', namespace, '-o', 'json']);
    if (got.code !== 0) return undefined;
    return (JSON.parse(got.stdout).status?.conditions ?? []).find((c: { type: string }) => c.type === 'Ready') as { status: string; reason: string } | undefined;
  };
  const invoke = (namespace: string, name: string, query = '') => fetch(`${gatewayUrl}/invoke/${derivedFunctionId(namespace, name)}/${query}`, { signal: AbortSignal.timeout(60_000) });

  before(async function () {
    this.timeout(1_800_000);
    cluster = await getCluster();
    kubectl = makeKubectl(cluster);
    helm = (JSON.parse((await run(`${ROOT}test/cluster/env.sh`, ['--json'])).stdout) as { helm: string }).helm;
    tmp = await mkdtemp(join(tmpdir(), 'fnhost-e2e-leaks-'));
    const suffix = uniqueName('x').slice(2);
    relNs = `fnhost-e2e-leaks-${suffix}`;
    ns = `e2e-leaks-${suffix}`;
    other = `e2e-leaks-other-${suffix}`;
    await Promise.all([buildPlatformImage(PLATFORM_IMAGE), buildRuntimeImage(RUNTIME_IMAGE)]);
    mongo = await startMongoServer({ useEnv: false });
    const hostIp = cluster.hostIp ?? '10.244.0.1';
    relay = await startRelay(hostIp, mongo.port!);
    for (const name of [ns, other]) expect((await kubectl(['create', 'namespace', name])).code).to.equal(0);
    ({ gatewayUrl, adminToken } = await installTestRelease({
      helm: helmRun,
      kubectl,
      release,
      namespace: relNs,
      hostIp,
      mongoUrl: `mongodb://${hostIp}:${relay.port}/${dbName}`,
      mongoPort: relay.port,
      valuesFile: join(tmp, 'values.json'),
      // metrics.auth is left at the chart's default: what is checked is that default.
      values: {
        gateway: { replicas: 1, defaultNamespace: ns, resources: { requests: { cpu: '50m', memory: '128Mi' }, limits: { memory: '512Mi' } } },
        functions: { namespaces: [ns] },
        // Low enough that a Function can ask more than the platform allows past the CRD's own bound (900).
        platform: { maxTimeoutSeconds: 60 },
      },
    }));
  });

  after(async function () {
    this.timeout(300_000);
    if (kubectl !== undefined) {
      await kubectl(['delete', 'resourcequota', 'functions', '-n', ns, '--ignore-not-found']);
      for (const name of [ns, other]) if (name) await kubectl(['delete', 'fn', '--all', '-n', name, '--wait=true', '--timeout=120s']);
      if (helm !== undefined && relNs && !uninstalled) await helmRun(['uninstall', release, '-n', relNs, '--wait', '--timeout', '3m']);
      for (const name of [ns, other]) {
        if (!name) continue;
        const list = await kubectl(['get', 'fn', '-n', name, '-o', 'name']);
        for (const fn of list.stdout.split('\n').filter(Boolean)) await kubectl(['patch', fn, '-n', name, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
      }
      for (const name of [ns, other, relNs]) if (name) await kubectl(['delete', 'namespace', name, '--wait=false']);
    }
    await relay?.close();
    await mongo?.stop();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  it('every Function the operator will not run answers 503 naming the reason at once, not after the 30 s hold', async () => {
    const cases: Array<{ namespace: string; name: string; spec: Record<string, unknown>; reason: string }> = [
      // kube-system itself is the example; a namespace outside functions.namespaces is the same rule, and leaves nothing behind in kube-system.
      { namespace: other, name: 'stray', spec: { code: OK }, reason: 'NamespaceNotAllowed' },
      // (Reasons the CRD's own schema refuses at admission, such as InvalidEnv, never reach the operator.)
      { namespace: ns, name: 'cpu-hog', spec: { code: OK, cpu: { limit: '4' } }, reason: 'CpuAboveMaximum' },
      { namespace: ns, name: 'too-long', spec: { code: OK, timeoutSeconds: 120 }, reason: 'TimeoutAboveMaximum' },
      { namespace: ns, name: 'bad-scaling', spec: { code: OK, scaling: { minReplicas: 1, maxReplicas: 2 }, scaleToZero: { idleSeconds: 60 } }, reason: 'InvalidScaling' },
      { namespace: ns, name: 'broken', spec: { code: 'export default (req, res) => {' }, reason: 'CodeDoesNotParse' },
    ];
    for (const c of cases) {
      const applied = await apply(c.namespace, c.name, c.spec);
      expect(applied.code, `${c.name}: ${applied.stderr}`).to.equal(0);
    }
    for (const c of cases) {
      await waitFor(`${c.name}: Ready=False ${c.reason}`, async () => ((await ready(c.namespace, c.name))?.reason === c.reason ? true : null), 120_000, 1000);
      const started = Date.now();
      const r = await invoke(c.namespace, c.name);
      const ms = Date.now() - started;
      const body = (await r.json()) as { error: string; message: string };
      expect(r.status, `${c.name}: ${JSON.stringify(body)}`).to.equal(503);
      expect(body.error).to.equal('function_unavailable');
      expect(body.message).to.equal(`function ${c.name} (namespace ${c.namespace}) cannot run: ${c.reason} (kubectl describe function ${c.name} -n ${c.namespace})`);
      expect(ms, `${c.name} answered in ${ms} ms`).to.be.below(FAST_MS);
    }
    expect((await kubectl(['get', 'deployment', 'fn-stray', '-n', other])).code, 'nothing made for the stray').not.to.equal(0);
  });

  it('a FunctionIdTaken claimant called by name (function:test, the API) says the reason', async () => {
    const created = await api('POST', `/functions?namespace=${ns}`, { name: 'owner', code: OK });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    // The owner serving first: creationTimestamp counts seconds, and the oldest claimant owns an id.
    await waitFor('owner answering', async () => ((await invoke(ns, 'owner').catch(() => null))?.status === 200 ? true : null), 240_000, 1000);
    const ownerCreated = Date.parse(JSON.parse((await kubectl(['get', 'fn', 'owner', '-n', ns, '-o', 'json'])).stdout).metadata.creationTimestamp);
    await waitFor('a later second than the owner\'s creation', async () => (Date.now() >= ownerCreated + 2000 ? true : null), 10_000, 100);
    expect((await apply(ns, 'claimant', { code: OK, functionId: derivedFunctionId(ns, 'owner') })).code).to.equal(0);
    await waitFor('claimant: Ready=False FunctionIdTaken', async () => ((await ready(ns, 'claimant'))?.reason === 'FunctionIdTaken' ? true : null), 120_000, 1000);
    const started = Date.now();
    const tested = await api('POST', `/functions/claimant/test?namespace=${ns}`, {});
    expect(Date.now() - started).to.be.below(FAST_MS);
    expect(tested.status, JSON.stringify(tested.body)).to.equal(409);
    expect(tested.body.error).to.equal('function_refused');
    expect(tested.body.message).to.contain(`function claimant (namespace ${ns}) is refused: FunctionIdTaken`);
    const viaCli = await cli(['function:test', 'claimant']);
    expect(viaCli.code, viaCli.stderr).not.to.equal(0);
    expect(viaCli.stderr).to.contain('is refused: FunctionIdTaken');
  });

  it('a function pod: no runtime token in any environ its children read; the gateway\'s /metrics refused to it, the documented scrape works', async () => {
    const created = await api('POST', `/functions?namespace=${ns}`, { name: 'snoop', code: SNOOP, timeout_seconds: 60 });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    const first = await waitFor('snoop answering', async () => {
      const r = await invoke(ns, 'snoop').catch(() => null);
      return r?.status === 200 ? await r.text() : null;
    }, 240_000, 1000);
    const seen = JSON.parse(first);
    expect(seen.kv, 'the runtime kept its token for KV').to.equal('v');
    expect(seen.pid1Read, `the attack read PID 1 (the runtime): ${first}`).to.equal(true);
    expect(seen.found, first).to.deep.equal([]);

    // From the pod, outside the runtime's egress routing (a child process): the gateway's main port, as the NetworkPolicy admits it.
    const internal = JSON.parse((await kubectl(['get', 'svc', `${release}-fnhost-gateway-internal`, '-n', relNs, '-o', 'json'])).stdout);
    const metricsUrl = `http://${internal.spec.clusterIP}:8080/metrics`;
    const fromPod = await invoke(ns, 'snoop', `?metrics=${encodeURIComponent(metricsUrl)}`);
    const said = (await fromPod.json()) as { metrics: string };
    expect(said.metrics, 'a function pod reads /metrics without credentials').to.match(/^(401|unreachable)/);
    // The documented scrape path (docs/install.md, Metrics): the token of the metrics Secret.
    const secret = JSON.parse((await kubectl(['get', 'secret', `${release}-fnhost-metrics`, '-n', relNs, '-o', 'json'])).stdout);
    const token = Buffer.from(secret.data.token, 'base64').toString('utf8');
    const scraped = await fetch(`${gatewayUrl}/metrics`, { headers: { authorization: `Bearer ${token}` } });
    expect(scraped.status).to.equal(200);
    expect(await scraped.text()).to.contain('fnhost_');
    expect((await fetch(`${gatewayUrl}/metrics`)).status).to.equal(401);
  });

  it('function:scale --replicas on an autoscaled function is refused (API 409 naming spec.scaling, CLI exit 2), and nothing changes', async () => {
    const auto = await api('PUT', `/functions/owner/scaling?namespace=${ns}`, { autoscale: { min_replicas: 1, max_replicas: 3 } });
    expect(auto.status, JSON.stringify(auto.body)).to.equal(200);
    const refused = await api('PUT', `/functions/owner/scaling?namespace=${ns}`, { replicas: 2 });
    expect(refused.status, JSON.stringify(refused.body)).to.equal(409);
    expect(refused.body.message).to.contain('replicas 2 would be ignored: the function autoscales (spec.scaling, 1-3 pods)');
    const viaCli = await cli(['function:scale', 'owner', '--replicas', '2']);
    expect(viaCli.code).to.equal(2);
    expect(viaCli.stderr).to.contain('--replicas 2 would be ignored: owner autoscales (spec.scaling)');
    const fn = JSON.parse((await kubectl(['get', 'fn', 'owner', '-n', ns, '-o', 'json'])).stdout);
    expect(fn.spec.replicas).not.to.equal(2);
    expect(fn.spec.scaling).to.include({ minReplicas: 1, maxReplicas: 3 });
  });

  it('a ResourceQuota on count/functions.fnhost.dev refuses a create, naming the quota, in kubectl, the API and the CLI', async () => {
    const used = JSON.parse((await kubectl(['get', 'fn', '-n', ns, '-o', 'json'])).stdout).items.length as number;
    const quota = { apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: 'functions', namespace: ns }, spec: { hard: { 'count/functions.fnhost.dev': String(used) } } };
    expect((await kubectl(['apply', '-f', '-'], JSON.stringify(quota))).code).to.equal(0);
    // The quota controller fills status.used shortly after; until then a create may pass it.
    await waitFor('the quota counted', async () => {
      const q = JSON.parse((await kubectl(['get', 'resourcequota', 'functions', '-n', ns, '-o', 'json'])).stdout);
      return q.status?.used?.['count/functions.fnhost.dev'] === String(used) ? true : null;
    }, 60_000, 1000);
    const viaKubectl = await apply(ns, 'one-too-many', { code: OK });
    expect(viaKubectl.code).not.to.equal(0);
    expect(viaKubectl.stderr).to.contain('exceeded quota: functions');
    const viaApi = await api('POST', `/functions?namespace=${ns}`, { name: 'one-too-many', code: OK });
    expect(viaApi.status, JSON.stringify(viaApi.body)).to.equal(403);
    expect(viaApi.body.error).to.equal('quota_exceeded');
    expect(viaApi.body.message).to.contain('exceeded quota: functions').and.to.contain('count/functions.fnhost.dev');
    const path = join(tmp, 'ok.mjs');
    await writeFile(path, OK);
    const viaCli = await cli(['function:create', 'one-too-many', '--file', path]);
    expect(viaCli.code).not.to.equal(0);
    expect(viaCli.stderr).to.contain('exceeded quota: functions');
    expect(viaCli.stderr).to.contain('kubectl describe resourcequota');
    expect((await kubectl(['get', 'fn', 'one-too-many', '-n', ns])).code).not.to.equal(0);
    await kubectl(['delete', 'resourcequota', 'functions', '-n', ns]);
  });

  it('helm uninstall --wait leaves no operator Lease', async () => {
    const lease = `${release}-fnhost-operator`;
    expect((await kubectl(['get', 'lease', lease, '-n', relNs])).code, 'the operator holds its Lease while installed').to.equal(0);
    for (const name of [ns, other]) await kubectl(['delete', 'fn', '--all', '-n', name, '--wait=true', '--timeout=120s']);
    const un = await helmRun(['uninstall', release, '-n', relNs, '--wait', '--timeout', '5m']);
    uninstalled = un.code === 0;
    expect(un.code, un.stderr + un.stdout).to.equal(0);
    const got = await kubectl(['get', 'lease', lease, '-n', relNs]);
    expect(got.code, got.stdout).not.to.equal(0);
    expect(got.stderr).to.contain('NotFound');
    expect((await kubectl(['get', 'pods', '-n', relNs, '-l', 'app.kubernetes.io/component=operator', '-o', 'name'])).stdout.trim()).to.equal('');
  });
});
