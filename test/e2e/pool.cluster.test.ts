import { expect } from 'chai';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { poolKeyOf } from '../../core/src/cluster-pool.ts';
import type { FunctionResource } from '../../core/src/function-resource.ts';
import { derivedFunctionId } from '../../gateway/src/cluster/resource.ts';
import { KubeClient } from '../../gateway/src/cluster/kube.ts';
import { PoolClaimer } from '../../gateway/src/cluster/pool/claimer.ts';
import { systemClock } from '../../gateway/src/scheduler/local.ts';
import { getCluster, makeKubectl, uniqueName, type ClusterAccess } from '../operator/harness.ts';
import { PLATFORM_IMAGE, RUNTIME_IMAGE, E2E_TAG, buildPlatformImage, buildRuntimeImage, installPlatform, waitFor, type InstalledPlatform } from './helpers.ts';

// Issue 32 on the test cluster: the chart installed with pool.size 1. A function scaled to zero
// is served from a generic pool pod the gateway claims and specializes; the pool refills; the
// specialized pod serves no other function, refuses a second specialization and never returns
// to the pool; the operator ends it once the function's own pod is ready. A size the pool does
// not hold, env from a Secret and code that fails to load take the Deployment path, with the
// reason in the metrics and an Event. Two claimers racing for the last pool pod: one wins.
// helm uninstall leaves no pool pod.

// The pod's host name is its name: the test tells which pod served a call.
const HELLO = (name: string) => `import { hostname } from 'node:os';\nexport default (req, res) => res.json({ fn: '${name}', pod: hostname() });\n`;
const POOL_PODS = 'app.kubernetes.io/name=fnhost-pool,fnhost.dev/role=pool';

describe('fnhost on Kubernetes: cold calls from a pool of generic pods (issue 32)', function () {
  this.timeout(900_000);
  let cluster: ClusterAccess;
  let kubectl: ReturnType<typeof makeKubectl>;
  let platform: InstalledPlatform | undefined;
  let ns: string;
  let relNs: string;
  let tmp: string;
  let gatewayUrl: string;
  let metricsToken: string;
  const release = 'e2e-pool';

  const getJson = async (args: string[]) => {
    const r = await kubectl([...args, '-o', 'json']);
    if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
    return JSON.parse(r.stdout);
  };
  const apply = (name: string, spec: Record<string, unknown>) =>
    kubectl(['apply', '--server-side', '-f', '-'], JSON.stringify({ apiVersion: 'fnhost.dev/v1alpha1', kind: 'Function', metadata: { name, namespace: ns }, spec }));
  const invoke = (name: string) => fetch(`${gatewayUrl}/invoke/${derivedFunctionId(ns, name)}`, { signal: AbortSignal.timeout(60_000) });
  const podsOf = async (selector: string) => ((await getJson(['get', 'pods', '-n', ns, '-l', selector])).items as any[]).filter((p) => p.metadata.deletionTimestamp === undefined);
  const readyGeneric = async () => (await podsOf(POOL_PODS)).filter((p) => (p.status?.conditions ?? []).some((c: any) => c.type === 'Ready' && c.status === 'True'));
  const metrics = async () => {
    // Every gateway replica's own counters: one replica here.
    const r = await fetch(`${gatewayUrl}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } });
    return r.text();
  };
  const counter = (text: string, series: string) => Number(text.split('\n').find((l) => l.startsWith(`${series} `))?.split(' ')[1] ?? 0);
  // At zero means no pod of the function at all, a terminating one included: a stopping pod keeps
  // serving through its preStop pause (runtimeStopDelaySeconds), and until its slice says it is
  // terminating the gateway still sends it calls, so a call made then is served by that pod, not
  // the pool. The likeliest cause of this test's one failure on record (CI of df6f867: the call
  // was not served by the pool pod); the message now shows the gateway's pool counters.
  const idleAtZero = (name: string) => async () => {
    const fn = await getJson(['get', 'fn', name, '-n', ns]);
    const ready = (fn.status?.conditions ?? []).find((c: any) => c.type === 'Ready');
    if (ready?.reason !== 'Idle') return null;
    const pods = await getJson(['get', 'pods', '-n', ns, '-l', `fnhost.dev/function=${name},fnhost.dev/role=runtime`]);
    return (pods.items as unknown[]).length === 0 ? true : null;
  };
  /** The pool's lines of the gateway's metrics (cold starts by path, fallbacks by reason, phase times): what a failure shows. */
  const poolLines = (text: string) => text.split('\n').filter((l) => /^fnhost_cluster_(cold_starts|pool_)/.test(l)).join('; ');
  const events = async (name: string) =>
    ((await getJson(['get', 'events', '-n', ns, '--field-selector', `involvedObject.name=${name}`])).items as any[]).map((e) => `${e.reason}: ${e.message ?? e.note}`);

  before(async function () {
    this.timeout(1_800_000);
    cluster = await getCluster();
    kubectl = makeKubectl(cluster);
    tmp = await mkdtemp(join(tmpdir(), 'fnhost-e2e-pool-'));
    const suffix = uniqueName('x').slice(2);
    ns = `e2e-pool-${suffix}`;
    relNs = `fnhost-e2e-pool-${suffix}`;
    await Promise.all([buildPlatformImage(PLATFORM_IMAGE), buildRuntimeImage(RUNTIME_IMAGE)]);
    platform = await installPlatform({ cluster, kubectl, release, relNs, ns, tag: E2E_TAG, dbName: `fnhost_e2e_pool_${Date.now()}`, tmp, values: { pool: { size: 1 } } });
    ({ gatewayUrl } = platform);
    const secret = await getJson(['get', 'secret', `${release}-fnhost-metrics`, '-n', relNs]);
    metricsToken = Buffer.from(secret.data.token, 'base64').toString('utf8');
    // Every function of the suite at once: they fall idle together (30 s, the CRD's least).
    const idle = { timeoutSeconds: 30, scaleToZero: { idleSeconds: 30 } };
    await kubectl(['create', 'secret', 'generic', 'app-secret', '-n', ns, '--from-literal=word=secret-word']);
    for (const [name, spec] of Object.entries({
      hello: { code: HELLO('hello'), ...idle },
      other: { code: HELLO('other'), ...idle },
      bigger: { code: HELLO('bigger'), memoryMiB: 160, ...idle },
      withsecret: { code: HELLO('withsecret'), env: [{ name: 'WORD', valueFrom: { secretKeyRef: { name: 'app-secret', key: 'word' } } }], ...idle },
      // Good code until it is at zero; then code that fails to load, which no pod has tried yet.
      broken: { code: HELLO('broken'), ...idle },
    })) {
      const applied = await apply(name, spec);
      expect(applied.code, applied.stderr).to.equal(0);
    }
  });

  after(async function () {
    this.timeout(300_000);
    await platform?.remove();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  it('keeps a pool of generic pods in the namespace: non-root, read-only, the pool key from a Secret that is the HMAC of the platform key and the namespace', async () => {
    const pods = await waitFor('a ready generic pool pod', async () => ((await readyGeneric()).length === 1 ? readyGeneric() : null), 240_000, 1000);
    const pod = pods[0];
    expect(pod.spec.securityContext.runAsNonRoot).to.equal(true);
    expect(pod.spec.containers[0].securityContext).to.deep.include({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false });
    expect(pod.spec.automountServiceAccountToken).to.equal(false);
    expect(pod.metadata.labels['fnhost.dev/function']).to.equal(undefined);
    const keySecret = await getJson(['get', 'secret', 'fnhost-pool-key', '-n', ns]);
    const tokenKey = Buffer.from((await getJson(['get', 'secret', `${release}-fnhost-token-key`, '-n', relNs])).data['token-key'], 'base64').toString('utf8');
    expect(Buffer.from(keySecret.data['specialize-token'], 'base64').toString('utf8')).to.equal(poolKeyOf(tokenKey, ns));
  });

  it('serves a function at zero from the pool; the pool refills; the specialized pod serves no other function, refuses a second specialization, never returns to the pool, and ends once the function has its own pod', async () => {
    await waitFor('hello and other idle at zero pods', async () => ((await idleAtZero('hello')()) && (await idleAtZero('other')()) ? true : null), 300_000, 1000);
    const [generic] = await readyGeneric();
    const before = await metrics();
    const started = Date.now();
    const answer = await invoke('hello');
    const ms = Date.now() - started;
    expect(answer.status, await answer.clone().text()).to.equal(200);
    const body = (await answer.json()) as { fn: string; pod: string };
    expect(body.fn).to.equal('hello');
    expect(body.pod, `served by the pool pod ${generic.metadata.name} in ${ms} ms (gateway: ${poolLines(await metrics())})`).to.equal(generic.metadata.name);
    // At once (the operator ends the pod a few seconds later): a second specialization of the claimed pod, with the right key, from inside it: 409.
    const key = Buffer.from((await getJson(['get', 'secret', 'fnhost-pool-key', '-n', ns])).data['specialize-token'], 'base64').toString('utf8');
    const script = `fetch('http://127.0.0.1:8080/_fnhost/specialize',{method:'POST',headers:{'x-fnhost-specialize-token':process.argv[1],'content-type':'application/json'},body:JSON.stringify({env:{FNHOST_FUNCTION_ID:'x',FNHOST_RUNTIME_TOKEN:'t'},code:'export default (q,s)=>s.send(1)'})}).then(async r=>console.log(r.status, await r.text()))`;
    const again = await kubectl(['exec', '-n', ns, body.pod, '-c', 'runtime', '--', 'node', '-e', script, key]);
    expect(again.code, again.stderr).to.equal(0);
    expect(again.stdout).to.match(/^409 .*already_specialized/);

    const after = await metrics();
    expect(counter(after, 'fnhost_cluster_cold_starts_total{path="pool"}') - counter(before, 'fnhost_cluster_cold_starts_total{path="pool"}')).to.equal(1);

    // The claimed pod: out of the pool, the function's for good, owned by its Function.
    const claimed = await getJson(['get', 'pod', body.pod, '-n', ns]);
    expect(claimed.metadata.labels).to.include({ 'fnhost.dev/role': 'specialized', 'fnhost.dev/pool-function': 'hello' });
    expect(claimed.metadata.labels['fnhost.dev/function']).to.equal(undefined);
    const fn = await getJson(['get', 'fn', 'hello', '-n', ns]);
    expect(claimed.metadata.ownerReferences).to.deep.equal([{ apiVersion: 'fnhost.dev/v1alpha1', kind: 'Function', name: 'hello', uid: fn.metadata.uid, controller: true, blockOwnerDeletion: false }]);
    await waitFor('a ColdStartPool Event on hello', async () => ((await events('hello')).some((e) => e.startsWith('ColdStartPool:') && e.includes(body.pod)) ? true : null), 30_000, 500);

    // The pool refills with a new pod.
    const refilled = await waitFor('the pool refilled', async () => {
      const ready = await readyGeneric();
      return ready.length === 1 && ready[0].metadata.name !== body.pod ? ready[0] : null;
    }, 120_000, 500);

    // other, at zero too, gets the refilled pod, never hello's.
    const otherAnswer = await invoke('other');
    expect(otherAnswer.status).to.equal(200);
    const otherBody = (await otherAnswer.json()) as { fn: string; pod: string };
    expect(otherBody).to.deep.equal({ fn: 'other', pod: refilled.metadata.name });
    expect((await invoke('hello')).status).to.equal(200);

    // hello's own pod gets ready: the operator ends the specialized one (it never returns to the pool).
    await waitFor('hello\'s specialized pod deleted once its own pod is ready', async () => {
      const left = await kubectl(['get', 'pod', body.pod, '-n', ns, '-o', 'json']);
      if (left.code !== 0) return true;
      const pod = JSON.parse(left.stdout);
      expect(pod.metadata.labels['fnhost.dev/role'], 'never back in the pool').to.equal('specialized');
      return pod.metadata.deletionTimestamp !== undefined ? true : null;
    }, 120_000, 1000);
    const served = (await (await invoke('hello')).json()) as { pod: string };
    expect(served.pod).to.not.equal(body.pod);
  });

  it('takes the Deployment path, visibly, for a size the pool does not hold, env from a Secret, and code that fails to load', async () => {
    await waitFor('bigger, withsecret and broken idle at zero pods', async () => ((await idleAtZero('bigger')()) && (await idleAtZero('withsecret')()) ? true : null), 300_000, 1000);
    await waitFor('a ready generic pool pod', async () => ((await readyGeneric()).length === 1 ? true : null), 120_000, 500);
    const before = await metrics();
    const bigger = await invoke('bigger');
    expect(bigger.status).to.equal(200);
    expect(((await bigger.json()) as { pod: string }).pod).to.match(/^fn-bigger-/);
    const secretAnswer = await invoke('withsecret');
    expect(secretAnswer.status).to.equal(200);
    expect(((await secretAnswer.json()) as { pod: string }).pod).to.match(/^fn-withsecret-/);
    const after = await metrics();
    const grew = (series: string) => counter(after, series) - counter(before, series);
    expect(grew('fnhost_cluster_pool_fallbacks_total{reason="size"}')).to.equal(1);
    expect(grew('fnhost_cluster_pool_fallbacks_total{reason="env_from"}')).to.equal(1);
    expect(grew('fnhost_cluster_cold_starts_total{path="deployment"}')).to.equal(2);
    await waitFor('ColdStartDeployment Events naming the reasons', async () => {
      const [b, s] = [await events('bigger'), await events('withsecret')];
      return b.some((e) => e.startsWith('ColdStartDeployment:') && e.includes('size')) && s.some((e) => e.startsWith('ColdStartDeployment:') && e.includes('env_from')) ? true : null;
    }, 30_000, 500);

    // Code that fails to load: the pool pod is specialized, fails to load, is not used; the call gets today's answer.
    const loadBefore = counter(await metrics(), 'fnhost_cluster_pool_fallbacks_total{reason="load_failed"}');
    await waitFor('broken idle at zero pods', idleAtZero('broken'), 300_000, 1000);
    const updated = await apply('broken', { code: "throw new Error('broken at load');\nexport default (req, res) => res.send('never');\n", timeoutSeconds: 30, scaleToZero: { idleSeconds: 30 } });
    expect(updated.code, updated.stderr).to.equal(0);
    await waitFor('the operator to have seen the new code', async () => {
      const fn = await getJson(['get', 'fn', 'broken', '-n', ns]);
      return fn.status?.observedGeneration === fn.metadata.generation ? true : null;
    }, 60_000, 500);
    await waitFor('a ready generic pool pod', async () => ((await readyGeneric()).length === 1 ? true : null), 120_000, 500);
    const broken = await invoke('broken');
    expect(broken.status).to.equal(503);
    expect(await broken.text()).to.match(/failed to load|broken at load/);
    expect(counter(await metrics(), 'fnhost_cluster_pool_fallbacks_total{reason="load_failed"}') - loadBefore).to.equal(1);
  });

  it('two claimers racing for the last pool pod: exactly one claims it', async () => {
    const ready = await waitFor('one ready generic pool pod', async () => {
      const r = await readyGeneric();
      return r.length === 1 ? r : null;
    }, 120_000, 500);
    const kc = new KubeConfig();
    kc.loadFromFile(cluster.kubeconfig);
    const claimer = () => new PoolClaimer({ client: new KubeClient(kc), tokenKey: 'k'.repeat(32), runtimeToken: () => 't', clock: systemClock });
    const [a, b] = [claimer(), claimer()];
    const fnA = (await getJson(['get', 'fn', 'hello', '-n', ns])) as FunctionResource;
    const fnB = (await getJson(['get', 'fn', 'other', '-n', ns])) as FunctionResource;
    const outcomes = await Promise.all([a.claimPod(fnA), b.claimPod(fnB)]);
    const won = outcomes.filter((o) => 'pod' in o);
    expect(won, JSON.stringify(outcomes.map((o) => ('pod' in o ? o.pod.metadata.name : o.fallback)))).to.have.length(1);
    const lost = outcomes.find((o) => 'fallback' in o) as { fallback: string };
    expect(lost.fallback).to.equal('claim_lost');
    const pod = await getJson(['get', 'pod', ready[0].metadata.name, '-n', ns]);
    const winner = outcomes[0] === won[0] ? 'hello' : 'other';
    expect(pod.metadata.labels['fnhost.dev/pool-function']).to.equal(winner);
    expect(pod.metadata.ownerReferences).to.have.length(1);
  });

  it('helm uninstall leaves no pool pod', async () => {
    const r = await platform!.helm(['uninstall', release, '-n', relNs, '--wait', '--timeout', '4m']);
    expect(r.code, r.stderr).to.equal(0);
    await waitFor('no pool pod left', async () => ((await podsOf('app.kubernetes.io/name=fnhost-pool')).length === 0 ? true : null), 180_000, 1000);
    expect((await kubectl(['get', 'deploy', 'fnhost-pool', '-n', ns])).code).to.not.equal(0);
  });
});
