import { expect } from 'chai';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { derivedFunctionId } from '../../gateway/src/cluster/resource.ts';
import { getCluster, makeKubectl, uniqueName, type ClusterAccess } from '../operator/harness.ts';
import { NODE, ROOT, PLATFORM_IMAGE, RUNTIME_IMAGE, E2E_TAG, buildPlatformImage, buildRuntimeImage, installPlatform, run, waitFor, type InstalledPlatform } from './helpers.ts';

// Issue 22 (autoscaling, Events, functions that cannot run) on the test cluster, the way a user
// runs it: the chart installed with helm, functions created and scaled with the CLI, Functions
// applied with kubectl. A load step (1 → 10 calls in flight of a handler that takes 200 ms,
// targetConcurrency 2) scales the Deployment up and, once the load is gone, back down; the
// operator's Events show in `kubectl describe fn`; CPU set per function lands on the pod; code
// that does not parse, or fails to load in its pod, answers 503 with the reason instead of a
// held call's timeout; an unknown time zone keeps HTTP serving and withholds only the CronJob.

const SLOW_HANDLER = 'export default async (req, res) => { await new Promise((r) => setTimeout(r, 200)); res.json({ ok: true }); };\n';

describe('fnhost on Kubernetes: autoscaling, Events, functions that cannot run (issue 22)', function () {
  this.timeout(900_000);
  let cluster: ClusterAccess;
  let kubectl: ReturnType<typeof makeKubectl>;
  let platform: InstalledPlatform | undefined;
  let ns: string;
  let tmp: string;
  let gatewayUrl: string;
  let token: string;

  const cli = (args: string[]) =>
    run(NODE, [`${ROOT}cli/bin/fnhost.js`, ...args, '--url', gatewayUrl, '--token', token, '--namespace', ns], {
      env: { HOME: tmp, XDG_CONFIG_HOME: join(tmp, 'config'), FNHOST_URL: undefined, FNHOST_TOKEN: undefined, FNHOST_NAMESPACE: undefined, NO_COLOR: '1' },
      timeoutMs: 120_000,
      cwd: tmp,
    });
  const apply = (name: string, spec: Record<string, unknown>) =>
    kubectl(['apply', '--server-side', '-f', '-'], JSON.stringify({ apiVersion: 'fnhost.dev/v1alpha1', kind: 'Function', metadata: { name, namespace: ns }, spec }));
  const invoke = (name: string) => fetch(`${gatewayUrl}/invoke/${derivedFunctionId(ns, name)}`, { signal: AbortSignal.timeout(60_000) });
  const deploymentReplicas = async (name: string): Promise<number> => JSON.parse((await kubectl(['get', 'deploy', `fn-${name}`, '-n', ns, '-o', 'json'])).stdout).spec.replicas;
  const readyCondition = async (name: string) => {
    const fn = JSON.parse((await kubectl(['get', 'fn', name, '-n', ns, '-o', 'json'])).stdout);
    return { fn, ready: (fn.status?.conditions ?? []).find((c: { type: string }) => c.type === 'Ready') };
  };

  before(async function () {
    this.timeout(1_800_000);
    cluster = await getCluster();
    kubectl = makeKubectl(cluster);
    tmp = await mkdtemp(join(tmpdir(), 'fnhost-e2e-scale-'));
    const suffix = uniqueName('x').slice(2);
    ns = `e2e-scale-${suffix}`;
    await Promise.all([buildPlatformImage(PLATFORM_IMAGE), buildRuntimeImage(RUNTIME_IMAGE)]);
    platform = await installPlatform({ cluster, kubectl, release: 'e2e-scale', relNs: `fnhost-e2e-scale-${suffix}`, ns, tag: E2E_TAG, dbName: `fnhost_e2e_scale_${Date.now()}`, tmp });
    ({ gatewayUrl, token } = platform);
  });

  after(async function () {
    this.timeout(300_000);
    await platform?.remove();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  it('function:scale sets autoscaling and CPU; the CPU lands on the pod', async () => {
    await writeFile(join(tmp, 'slow.mjs'), SLOW_HANDLER);
    const created = await cli(['function:create', 'slow', '--file', 'slow.mjs']);
    expect(created.code, created.stderr).to.equal(0);
    // The operator has acted on the create before the scale changes the spec: the Updated event of
    // the load-step test is the scale's (one reconcile of both would tell only Created).
    await waitFor('the operator to have reconciled the create', async () => ((await readyCondition('slow')).fn.status?.observedGeneration >= 1 ? true : null), 120_000, 500);
    const scaled = await cli(['function:scale', 'slow', '--min', '1', '--max', '5', '--target', '2', '--cpu-request', '20m', '--cpu-limit', '500m']);
    expect(scaled.code, scaled.stderr).to.equal(0);
    expect(scaled.stdout).to.contain('autoscale 1-5 pods at 2 calls in flight each, cpu 20m/500m (request/limit)');
    const fn = JSON.parse((await kubectl(['get', 'fn', 'slow', '-n', ns, '-o', 'json'])).stdout);
    expect(fn.spec).to.deep.include({ scaling: { minReplicas: 1, maxReplicas: 5, targetConcurrency: 2 }, cpu: { request: '20m', limit: '500m' } });
    const resources = await waitFor('a runtime pod of slow with the CPU of its spec', async () => {
      const pods = JSON.parse((await kubectl(['get', 'pods', '-n', ns, '-l', 'fnhost.dev/function=slow,fnhost.dev/role=runtime', '-o', 'json'])).stdout).items as any[];
      const pod = pods.find((p) => p.metadata.deletionTimestamp === undefined && p.spec.containers[0].resources.limits.cpu === '500m');
      return pod?.spec.containers[0].resources ?? null;
    }, 180_000, 1000);
    expect(resources.requests.cpu).to.equal('20m');
    await waitFor('slow answering 200', async () => ((await invoke('slow')).status === 200 ? true : null), 180_000, 1000);
    const get = await cli(['function:get', 'slow']);
    expect(get.stdout).to.match(/Scaling:\s+autoscale 1-5 pods/);
  });

  it('a load step (1 → 10 calls in flight, target 2) scales up, and back down once the load is gone; Events say so', async () => {
    let concurrency = 1;
    let stop = false;
    let failures = 0;
    let calls = 0;
    const worker = async (i: number) => {
      while (!stop) {
        if (i >= concurrency) {
          await new Promise((r) => setTimeout(r, 50));
          continue;
        }
        const r = await invoke('slow').catch(() => null);
        calls++;
        if (r === null || r.status !== 200) failures++;
        await r?.arrayBuffer().catch(() => undefined);
      }
    };
    const workers = Array.from({ length: 10 }, (_, i) => worker(i));
    try {
      // One call in flight is within one pod's target: the autoscaler reports and keeps 1.
      await waitFor('a concurrency report of the gateway', async () => {
        const { fn } = await readyCondition('slow');
        return fn.status?.autoscaler?.observed !== undefined && Object.keys(fn.status?.concurrency ?? {}).length > 0 ? true : null;
      }, 120_000, 1000);
      expect(await deploymentReplicas('slow')).to.equal(1);
      concurrency = 10;
      const up = await waitFor('the Deployment scaled up', async () => {
        const n = await deploymentReplicas('slow');
        return n >= 3 ? n : null;
      }, 180_000, 500);
      expect(up).to.be.at.most(5);
      const { fn } = await readyCondition('slow');
      expect(fn.status.autoscaler.replicas).to.equal(up);
    } finally {
      stop = true;
      await Promise.all(workers);
    }
    expect(calls).to.be.greaterThan(20);
    expect(failures, 'every call of the load step answered 200').to.equal(0);
    await waitFor('the Deployment scaled back down to minReplicas', async () => ((await deploymentReplicas('slow')) === 1 ? true : null), 420_000, 2000);
    const described = await waitFor('Scaled events in kubectl describe fn', async () => {
      const d = await kubectl(['describe', 'fn', 'slow', '-n', ns]);
      return /Scaled\s.*scaled from 1 to \d/.test(d.stdout) && /Scaled\s.*scaled from \d to 1 /.test(d.stdout) ? d.stdout : null;
    }, 60_000, 2000);
    expect(described).to.match(/Created\s/);
    // The same through the events API.
    const events = (JSON.parse((await kubectl(['get', 'events.events.k8s.io', '-n', ns, '-o', 'json'])).stdout).items as any[]).filter((e) => e.regarding?.kind === 'Function' && e.regarding?.name === 'slow');
    expect(events.map((e) => e.reason)).to.include.members(['Created', 'Updated', 'Scaled']);
    expect(events.every((e) => e.reportingController === 'fnhost.dev/operator')).to.equal(true);
  });

  it('code that does not parse answers 503 with the reason, not a held call\'s timeout; an Invalid event says why', async () => {
    expect((await apply('broken', { code: 'export default (req, res) => {', timeoutSeconds: 60 })).code).to.equal(0);
    await waitFor('Ready=False CodeDoesNotParse', async () => ((await readyCondition('broken')).ready?.reason === 'CodeDoesNotParse' ? true : null), 120_000, 1000);
    const r = await invoke('broken');
    expect(r.status).to.equal(503);
    const body = (await r.json()) as { error: string; message: string };
    expect(body.error).to.equal('function_unavailable');
    expect(body.message).to.equal(`function broken (namespace ${ns}) cannot run: CodeDoesNotParse (kubectl describe function broken -n ${ns})`);
    const described = await kubectl(['describe', 'fn', 'broken', '-n', ns]);
    expect(described.stdout).to.match(/Warning\s+Invalid\s.*CodeDoesNotParse/);
  });

  it('code that parses but fails to load in its pod answers 503 as soon as its pods say so', async () => {
    expect((await apply('loadfail', { code: 'throw new Error("no config at load");\nexport default (req, res) => res.end();\n', timeoutSeconds: 60 })).code).to.equal(0);
    await waitFor('a runtime pod of loadfail running', async () => {
      const pods = JSON.parse((await kubectl(['get', 'pods', '-n', ns, '-l', 'fnhost.dev/function=loadfail,fnhost.dev/role=runtime', '-o', 'json'])).stdout).items as any[];
      return pods.some((p) => p.status?.podIP && p.status?.containerStatuses?.[0]?.state?.running) ? true : null;
    }, 180_000, 1000);
    const r = await invoke('loadfail');
    expect(r.status).to.equal(503);
    // Two paths say it, whichever is first: the held call's own probe of the starting pods, or the
    // Function's Ready=False LoadFailed (the gateway's load watch, then the operator); neither carries the error text.
    const message = ((await r.json()) as { message: string }).message;
    const byProbe = `function loadfail (namespace ${ns}) cannot run: its code failed to load in its pods (kubectl logs deployment/fn-loadfail -n ${ns})`;
    const byCondition = `function loadfail (namespace ${ns}) cannot run: LoadFailed (kubectl describe function loadfail -n ${ns})`;
    expect([byProbe, byCondition]).to.include(message);
  });

  it('an unknown time zone withholds only the CronJob: HTTP is served, Scheduled=False InvalidSchedule', async () => {
    expect((await apply('mars', { code: 'export default (req, res) => res.json({ served: true })', schedule: { cron: '0 * * * *', timezone: 'Mars/Olympus' } })).code).to.equal(0);
    const body = await waitFor('mars answering 200', async () => {
      const r = await invoke('mars');
      return r.status === 200 ? await r.json() : null;
    }, 180_000, 1000);
    expect(body).to.deep.equal({ served: true });
    const { fn } = await readyCondition('mars');
    const scheduled = fn.status.conditions.find((c: { type: string }) => c.type === 'Scheduled');
    expect(scheduled).to.include({ status: 'False', reason: 'InvalidSchedule' });
    expect((await kubectl(['get', 'cronjob', 'fn-mars-cron', '-n', ns])).code).to.not.equal(0);
  });
});
