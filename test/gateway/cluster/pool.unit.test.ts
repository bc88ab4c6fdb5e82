import { expect } from 'chai';
import { API_VERSION, KIND, type FunctionResource } from '@fnhost/core/function-resource.ts';
import { EndpointIndex, type EndpointSlice } from '../../../gateway/src/cluster/endpoints.ts';
import { ClusterExecutor, POOL_WAKE_DELAY_MS, type PoolAnswer } from '../../../gateway/src/cluster/executor.ts';
import { claimOrder, claimPatch, claimable, fallbackReason, podOrigin, specializationBody, type PoolPod } from '../../../gateway/src/cluster/pool/claim.ts';
import { ColdStartEventLimiter, EVENT_INTERVAL_MS, coldStartNote } from '../../../gateway/src/cluster/pool/events.ts';
import { recordFromResource } from '../../../gateway/src/cluster/resource.ts';
import { KubeApiError, type KubeClient } from '../../../gateway/src/cluster/kube.ts';
import { PoolClaimer, loadOutcomeOf, poolPhaseMetrics, type PodRequest } from '../../../gateway/src/cluster/pool/claimer.ts';
import { GenericPodIndex } from '../../../gateway/src/cluster/pool/generic-pods.ts';
import { FakeClock, settle } from './fakes.ts';

// The gateway's side of the pool (issue 32): which pool pod can serve which function, the claim
// patch, the specialization body, and the executor sending held calls to a specialized pod.

const fn = (spec: Partial<FunctionResource['spec']> = {}): FunctionResource => ({
  apiVersion: API_VERSION,
  kind: KIND,
  metadata: { name: 'hello', namespace: 'ns', uid: 'u-1', generation: 3 },
  spec: { code: 'export default 1', timeoutSeconds: 5, ...spec },
});
const pod = (over: Partial<PoolPod['metadata']> = {}, status: PoolPod['status'] = { podIP: '10.0.0.9', phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] }): PoolPod => ({
  metadata: { name: 'fnhost-pool-a', resourceVersion: '42', annotations: { 'fnhost.dev/pool-memory-mib': '128', 'fnhost.dev/pool-cpu': '50m/1', 'fnhost.dev/pool-code-bytes': String(50 * 1024 * 1024) }, ...over },
  status,
});

describe('gateway cluster pool: pure parts', () => {
  it('claims only running, ready pods with an address that are not going', () => {
    expect(claimable(pod())).to.equal(true);
    expect(claimable(pod({ deletionTimestamp: 'now' }))).to.equal(false);
    expect(claimable(pod({}, { podIP: '10.0.0.9', phase: 'Pending', conditions: [] }))).to.equal(false);
    expect(claimable(pod({}, { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] }))).to.equal(false);
    expect(claimable(pod({}, { podIP: '10.0.0.9', phase: 'Running', conditions: [{ type: 'Ready', status: 'False' }] }))).to.equal(false);
  });

  it('falls back for a size the pool does not hold, env from Secrets or ConfigMaps, and code larger than its /tmp', () => {
    expect(fallbackReason(fn(), pod())).to.equal(undefined);
    expect(fallbackReason(fn({ memoryMiB: 128 }), pod())).to.equal(undefined);
    expect(fallbackReason(fn({ memoryMiB: 256 }), pod())).to.equal('size');
    expect(fallbackReason(fn({ cpu: { limit: '1' } }), pod())).to.equal(undefined);
    expect(fallbackReason(fn({ cpu: { limit: '500m' } }), pod())).to.equal('size');
    expect(fallbackReason(fn({ env: [{ name: 'A', value: 'x' }] }), pod())).to.equal(undefined);
    expect(fallbackReason(fn({ env: [{ name: 'A', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } }] }), pod())).to.equal('env_from');
    const big = { code: undefined, codeRef: { digest: `sha256:${'a'.repeat(64)}`, size: 50 * 1024 * 1024 + 1 } };
    expect(fallbackReason(fn(big), pod())).to.equal('code_size');
  });

  it('the claim patch is conditional, leaves the pool selector, never carries the function Deployment\'s selector label, and makes the Function its controller', () => {
    const patch = claimPatch(pod(), fn(), 1234) as { metadata: Record<string, any> };
    expect(patch.metadata.resourceVersion).to.equal('42');
    expect(patch.metadata.labels['fnhost.dev/role']).to.equal('specialized');
    expect(patch.metadata.labels['fnhost.dev/pool-function']).to.equal('hello');
    expect(patch.metadata.labels).to.not.have.property('fnhost.dev/function');
    expect(patch.metadata.annotations).to.deep.equal({ 'fnhost.dev/claimed-at': '1234', 'fnhost.dev/specialized-generation': '3' });
    expect(patch.metadata.ownerReferences).to.deep.equal([{ apiVersion: API_VERSION, kind: KIND, name: 'hello', uid: 'u-1', controller: true, blockOwnerDeletion: false }]);
  });

  it('the specialization body: the function\'s variables and token, inline code or a digest, never the pod\'s own variables', () => {
    const inline = specializationBody(fn({ env: [{ name: 'GREETING', value: 'hi' }], routes: ['/a/:id'] }), 'tok');
    expect(inline.code).to.equal('export default 1');
    expect(inline.env).to.include({ FNHOST_FUNCTION_NAME: 'hello', FNHOST_ROUTES: '["/a/:id"]', FNHOST_TIMEOUT_MS: '5000', FNHOST_MEMORY_MIB: '128', FNHOST_RUNTIME_TOKEN: 'tok', GREETING: 'hi' });
    for (const own of ['PORT', 'HOST', 'FNHOST_FUNCTION_FILE', 'FNHOST_GATEWAY_URL', 'FNHOST_EGRESS_PROXY']) expect(inline.env).to.not.have.property(own);
    const ref = specializationBody(fn({ code: undefined, codeRef: { digest: `sha256:${'b'.repeat(64)}`, size: 7 } }), 'tok');
    expect(ref.code).to.equal(undefined);
    expect(ref.env).to.include({ FNHOST_CODE_DIGEST: `sha256:${'b'.repeat(64)}`, FNHOST_CODE_SIZE: '7' });
  });

  it('tries pods in a random order; origins bracket IPv6', () => {
    expect(claimOrder([1, 2, 3], () => 0)).to.deep.equal([2, 3, 1]);
    expect(claimOrder([1, 2, 3], () => 0.99)).to.deep.equal([1, 2, 3]);
    expect(podOrigin('10.1.2.3', 8080)).to.equal('http://10.1.2.3:8080');
    expect(podOrigin('fd00::5', 8080)).to.equal('http://[fd00::5]:8080');
  });

  it('one cold start Event per function per interval; the note says the path and the reason', () => {
    const limiter = new ColdStartEventLimiter();
    expect(limiter.allow('f', 0)).to.equal(true);
    expect(limiter.allow('f', EVENT_INTERVAL_MS - 1)).to.equal(false);
    expect(limiter.allow('g', 1)).to.equal(true);
    expect(limiter.allow('f', EVENT_INTERVAL_MS)).to.equal(true);
    expect(coldStartNote('pool', undefined, 'fnhost-pool-a')).to.contain('pod fnhost-pool-a');
    expect(coldStartNote('deployment', 'size', undefined)).to.equal('served by the function\'s Deployment: size');
  });
});

describe('gateway cluster pool: the executor', () => {
  const record = recordFromResource(fn())!;
  const readySlice = (ip: string): EndpointSlice => ({
    metadata: { name: 's', namespace: 'ns', labels: { 'kubernetes.io/service-name': 'fn-hello' } },
    addressType: 'IPv4',
    ports: [{ name: 'http', port: 8080 }],
    endpoints: [{ addresses: [ip], conditions: { ready: true } }],
  });
  const setup = (pool: (f: typeof record) => Promise<PoolAnswer>) => {
    const idx = new EndpointIndex();
    const clock = new FakeClock();
    const cold: string[] = [];
    const woken: string[] = [];
    const ex = new ClusterExecutor({ endpoints: idx, clock, wake: (f) => woken.push(f.name), holdMs: 5000, pool, coldStart: (_f, path, reason) => cold.push(`${path}:${reason ?? ''}`) });
    return { idx, clock, ex, cold, woken };
  };

  it('the wake waits for the pool\'s answer (served or not), so the function\'s own pod does not compete with the claim; then every held call wakes as before', async () => {
    for (const outcome of [{ origin: 'http://10.0.0.9:8080', pod: 'p' }, { fallback: 'claim_lost' as const }]) {
      let answer!: (a: PoolAnswer) => void;
      const { idx, ex, woken } = setup(() => new Promise((r) => (answer = r)));
      const first = ex.acquire(record);
      const second = ex.acquire(record);
      await settle();
      expect(woken, 'while the claim is under way').to.deep.equal([]);
      answer(outcome);
      await settle();
      expect(woken).to.deep.equal(['hello']);
      if ('fallback' in outcome) idx.apply({ key: 'ns/s', object: readySlice('10.0.0.7') });
      await Promise.all([first, second]);
      await ex.close();
    }
  });

  it('a claim still running after POOL_WAKE_DELAY_MS wakes the function anyway, once', async () => {
    const { clock, idx, ex, woken } = setup(() => new Promise(() => undefined));
    const call = ex.acquire(record);
    await clock.advance(POOL_WAKE_DELAY_MS - 1);
    expect(woken).to.deep.equal([]);
    await clock.advance(1);
    expect(woken).to.deep.equal(['hello']);
    void ex.acquire(record).catch(() => undefined);
    await settle();
    expect(woken, 'a held call after the delay wakes as before').to.deep.equal(['hello', 'hello']);
    idx.apply({ key: 'ns/s', object: readySlice('10.0.0.7') });
    await call;
    await ex.close();
  });

  it('without a pool a held call wakes its function at once', async () => {
    const idx = new EndpointIndex();
    const woken: string[] = [];
    const ex = new ClusterExecutor({ endpoints: idx, clock: new FakeClock(), wake: (f) => woken.push(f.name), holdMs: 5000 });
    const call = ex.acquire(record);
    await settle();
    expect(woken).to.deep.equal(['hello']);
    idx.apply({ key: 'ns/s', object: readySlice('10.0.0.7') });
    await call;
    await ex.close();
  });

  it('held calls go to the specialized pod; one claim per function; dropped once the function has a ready pod of its own', async () => {
    let claims = 0;
    let answer!: (a: PoolAnswer) => void;
    const { idx, ex, cold } = setup(() => {
      claims++;
      return new Promise((r) => (answer = r));
    });
    const first = ex.acquire(record);
    const second = ex.acquire(record);
    await settle();
    expect(claims).to.equal(1);
    answer({ origin: 'http://10.0.0.9:8080', pod: 'fnhost-pool-a' });
    expect((await first).origin).to.equal('http://10.0.0.9:8080');
    expect((await second).origin).to.equal('http://10.0.0.9:8080');
    expect(ex.coldStarts).to.deep.equal({ pool: 1, deployment: 0 });
    expect(ex.releasedByPool).to.equal(2);
    expect(cold).to.deep.equal(['pool:']);
    // New calls too, until the slice has a ready pod of the function.
    expect((await ex.acquire(record)).origin).to.equal('http://10.0.0.9:8080');
    idx.apply({ key: 'ns/s', object: readySlice('10.0.0.7') });
    expect((await ex.acquire(record)).origin).to.equal('http://10.0.0.7:8080');
    await ex.close();
  });

  it('a pool that cannot serve: the call waits for the Deployment path, the reason counted', async () => {
    const { idx, ex, cold } = setup(async () => ({ fallback: 'size' }));
    const call = ex.acquire(record);
    await settle();
    expect(ex.poolFallbacks.get('size')).to.equal(1);
    expect(cold).to.deep.equal(['deployment:size']);
    idx.apply({ key: 'ns/s', object: readySlice('10.0.0.7') });
    expect((await call).origin).to.equal('http://10.0.0.7:8080');
    await ex.close();
  });

  it('a specialized pod that refuses connections is dropped (the operator ended it): the next cold call claims another', async () => {
    const origins = ['http://10.0.0.9:8080', 'http://10.0.0.10:8080'];
    const { ex } = setup(async () => ({ origin: origins.shift()!, pod: 'p' }));
    expect((await ex.acquire(record)).origin).to.equal('http://10.0.0.9:8080');
    ex.unreachable(record, 'http://10.0.0.9:8080');
    expect((await ex.acquire(record)).origin).to.equal('http://10.0.0.10:8080');
    expect(ex.coldStarts.pool).to.equal(2);
    await ex.close();
  });
});

describe('gateway cluster pool: the claimer times each phase of a start', () => {
  // A fake API server and pod, each answer taking a fixed time on the fake clock.
  const setup = (conflictsFirst: number) => {
    const clock = new FakeClock();
    let conflicts = conflictsFirst;
    const client = {
      async request(method: string): Promise<unknown> {
        if (method === 'GET') {
          clock.t += 30;
          return { items: [pod({ name: 'fnhost-pool-a' }), pod({ name: 'fnhost-pool-b' })] };
        }
        clock.t += 20;
        if (conflicts-- > 0) throw new KubeApiError(409, 'Conflict', 'the object has been modified');
        return pod({ name: 'fnhost-pool-b' });
      },
    } as unknown as KubeClient;
    const send: PodRequest = async (_origin, path) => {
      clock.t += path === '/_fnhost/specialize' ? 15 : 70;
      return { status: 200, body: '' };
    };
    return new PoolClaimer({ client, tokenKey: 'k'.repeat(32), runtimeToken: () => 't', clock, send, random: () => 0 });
  };

  it('lists, claims, specializes and waits for the load, each phase summed in seconds and counted', async () => {
    const claimer = setup(0);
    expect(await claimer.serve(fn())).to.deep.equal({ origin: 'http://10.0.0.9:8080', pod: 'fnhost-pool-b' });
    expect(Object.fromEntries(claimer.phases.seconds)).to.deep.equal({ list: 0.03, claim: 0.02, specialize: 0.015, load: 0.07 });
    const text = poolPhaseMetrics(claimer.phases);
    expect(text).to.include('# TYPE fnhost_cluster_pool_start_seconds summary');
    expect(text).to.include('fnhost_cluster_pool_start_seconds_sum{phase="load"} 0.070000\n');
    expect(text).to.include('fnhost_cluster_pool_start_seconds_count{phase="claim"} 1\n');
  });

  it('a runtime that answers the specialization once loaded: one exchange, its load time reported; a load error falls back', async () => {
    for (const [load, outcome] of [
      [{ status: 'ok', ms: 40 }, { origin: 'http://10.0.0.9:8080', pod: 'fnhost-pool-b' }],
      [{ status: 'error', ms: 10, kind: 'failed', message: 'broken at load' }, { fallback: 'load_failed' }],
    ] as const) {
      const clock = new FakeClock();
      const paths: string[] = [];
      const client = { request: async (method: string) => (method === 'GET' ? { items: [pod({ name: 'fnhost-pool-b' })] } : pod({ name: 'fnhost-pool-b' })) } as unknown as KubeClient;
      const send: PodRequest = async (_origin, path, init) => {
        paths.push(`${path} ${init.headers['x-fnhost-wait-load'] ?? ''}`);
        clock.t += 55;
        return { status: 200, body: JSON.stringify({ status: 'specialized', load }) };
      };
      const claimer = new PoolClaimer({ client, tokenKey: 'k'.repeat(32), runtimeToken: () => 't', clock, send });
      const got = await claimer.serve(fn());
      expect('fallback' in got ? { fallback: got.fallback } : got).to.deep.equal(outcome);
      expect(paths).to.deep.equal(['/_fnhost/specialize 1']);
      expect(claimer.phases.seconds.get('load')).to.equal(load.ms / 1000);
      expect(claimer.phases.seconds.get('specialize')).to.be.closeTo((55 - load.ms) / 1000, 1e-9);
    }
    expect(loadOutcomeOf('{"status":"specialized"}')).to.equal(undefined);
    expect(loadOutcomeOf('not json')).to.equal(undefined);
    expect(loadOutcomeOf('{"load":{"status":"ok","ms":-1}}')).to.equal(undefined);
  });

  it('a claim lost to another replica (409) is not timed as a claim; the one won is', async () => {
    const claimer = setup(1);
    await claimer.serve(fn());
    expect(claimer.conflicts).to.equal(1);
    expect(claimer.phases.count.get('claim')).to.equal(1);
    expect(claimer.phases.seconds.get('claim')).to.equal(0.02);
  });
});

describe('gateway cluster pool: the watched generic pods', () => {
  const generic = (name: string, rv = '1', role = 'pool'): PoolPod => ({ ...pod({ name, resourceVersion: rv, labels: { 'fnhost.dev/role': role } }) });
  const change = (p: PoolPod | undefined, key: string) => ({ key, object: p });

  it('knows nothing before its first list; then the claimable pods of each namespace; a claimed or deleted pod leaves it', () => {
    const index = new GenericPodIndex();
    index.apply(change(generic('a'), 'ns/a'));
    expect(index.claimable('ns')).to.equal(undefined);
    index.markSynced();
    index.apply(change(generic('b'), 'ns/b'));
    index.apply(change(generic('c'), 'other/c'));
    index.apply(change({ ...generic('d'), status: { phase: 'Pending' } }, 'ns/d'));
    expect(index.claimable('ns')!.map((p) => p.metadata.name)).to.deep.equal(['a', 'b']);
    index.apply(change(generic('a', '2', 'specialized'), 'ns/a'));
    index.apply(change(undefined, 'ns/b'));
    expect(index.claimable('ns')).to.deep.equal([]);
    index.forget('other', 'c');
    expect(index.claimable('other')).to.deep.equal([]);
  });

  // A fake API server counting its lists, whose patches lose (409) for the pods named in `taken`.
  const setup = (taken: string[], listed: string[]) => {
    const clock = new FakeClock();
    const calls = { lists: 0, patched: [] as string[] };
    const client = {
      async request(method: string, path: string): Promise<unknown> {
        if (method === 'GET') {
          calls.lists++;
          return { items: listed.map((n) => generic(n)) };
        }
        const name = path.slice(path.lastIndexOf('/') + 1);
        calls.patched.push(name);
        if (taken.includes(name)) throw new KubeApiError(409, 'Conflict', 'the object has been modified');
        return generic(name, '9', 'specialized');
      },
    } as unknown as KubeClient;
    const index = new GenericPodIndex();
    index.markSynced();
    const claimer = new PoolClaimer({ client, tokenKey: 'k'.repeat(32), runtimeToken: () => 't', clock, index, random: () => 0.99 });
    return { index, claimer, calls };
  };

  it('claims a pod the watch knows without listing, and takes it out of the index', async () => {
    const { index, claimer, calls } = setup([], []);
    index.apply(change(generic('a'), 'ns/a'));
    const won = await claimer.claimPod(fn());
    expect('pod' in won && won.pod.metadata.name).to.equal('a');
    expect(calls.lists).to.equal(0);
    expect(index.claimable('ns')).to.deep.equal([]);
  });

  it('a stale index (every pod it offered lost) lists afresh and claims a pod it had not offered', async () => {
    const { index, claimer, calls } = setup(['a'], ['a', 'b']);
    index.apply(change(generic('a'), 'ns/a'));
    const won = await claimer.claimPod(fn());
    expect('pod' in won && won.pod.metadata.name).to.equal('b');
    expect(calls).to.deep.equal({ lists: 1, patched: ['a', 'b'] });
    expect(claimer.conflicts).to.equal(1);
  });

  it('an empty index lists; nothing listed either is pool_empty, everything lost is claim_lost', async () => {
    const empty = setup([], []);
    expect(await empty.claimer.claimPod(fn())).to.deep.equal({ fallback: 'pool_empty' });
    expect(empty.calls.lists).to.equal(1);
    const lost = setup(['a'], ['a']);
    lost.index.apply(change(generic('a'), 'ns/a'));
    expect(await lost.claimer.claimPod(fn())).to.deep.equal({ fallback: 'claim_lost' });
  });

  it('a function the pool cannot hold falls back at once, from the index', async () => {
    const { index, claimer, calls } = setup([], []);
    index.apply(change(generic('a'), 'ns/a'));
    expect(await claimer.claimPod(fn({ memoryMiB: 512 }))).to.deep.equal({ fallback: 'size' });
    expect(calls).to.deep.equal({ lists: 0, patched: [] });
  });
});
