import { expect } from 'chai';
import { ConflictError, FnhostError, KubernetesQuotaError, NotFoundError, ValidationError } from '@fnhost/core';
import { EndpointIndex, readyOrigins, startingOrigins, type EndpointSlice } from '../../../gateway/src/cluster/endpoints.ts';
import { ClusterExecutor, FunctionUnavailableError, holdBoundMs, oomKilledRecently } from '../../../gateway/src/cluster/executor.ts';
import { FunctionCache, apiErrorFor, olderVersion } from '../../../gateway/src/cluster/functions.ts';
import { KubeApiError } from '../../../gateway/src/cluster/kube.ts';
import { API_VERSION, KIND, type FunctionResource } from '@fnhost/core/function-resource.ts';
import { derivedFunctionId, deriveToken, recordFromResource } from '../../../gateway/src/cluster/resource.ts';
import { isClusterMode, loadClusterSettings } from '../../../gateway/src/cluster/settings.ts';
import { DerivedTokens } from '../../../gateway/src/cluster/tokens.ts';
import { FakeClock, settle } from './fakes.ts';
import type { FunctionIdHome } from '@fnhost/core/function-id-home.ts';

async function waitUntil(ok: () => boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`not true within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

function fnRes(name: string, rv: string, extra: Partial<FunctionResource['metadata']> = {}, code = 'x'): FunctionResource {
  return { apiVersion: API_VERSION, kind: KIND, metadata: { name, namespace: 'ns', uid: `uid-${name}`, resourceVersion: rv, creationTimestamp: '2026-11-23T10:00:00Z', ...extra }, spec: { code } };
}

function slice(name: string, service: string, endpoints: EndpointSlice['endpoints'], ports: EndpointSlice['ports'] = [{ name: 'http', port: 8080 }]): EndpointSlice {
  return { metadata: { name, namespace: 'ns', labels: { 'kubernetes.io/service-name': service } }, addressType: 'IPv4', ports, endpoints };
}

describe('cluster mode: function cache', () => {
  it('issue 28: a Function of another namespace naming an id is served as nothing while the id\'s home (the store\'s) is elsewhere, also while the home\'s Function is absent', async () => {
    const stored = new Map<string, FunctionIdHome>();
    let reads = 0;
    const cache = new FunctionCache({ homes: { get: async (id) => { reads++; return stored.get(id) ?? null; } } });
    const id = derivedFunctionId('ns', 'pay');
    const owner = fnRes('pay', '10', { creationTimestamp: '2026-11-26T10:00:00Z' });
    const taker: FunctionResource = { ...fnRes('taker', '11', { namespace: 'other', creationTimestamp: '2026-11-25T10:00:00Z' }, 'y'), spec: { code: 'y', functionId: id } };
    // Seen first by the watch, older, and the home not read yet: the taker still does not get the id.
    cache.put(taker);
    expect(cache.get(id)).to.equal(undefined);
    await cache.homesRead();
    expect(cache.get(id)).to.equal(undefined);
    stored.set(id, { function_id: id, namespace: 'ns', name: 'pay', how: 'derived', at: 1 });
    cache.put(owner);
    expect(cache.get(id)?.name).to.equal('pay');
    await cache.homesRead();
    expect(cache.get(id)?.name).to.equal('pay');
    expect(cache.getByName('other', 'taker')).to.equal(undefined);
    expect(cache.all().map((f) => f.name)).to.deep.equal(['pay']);
    expect(cache.all('other')).to.deep.equal([]);
    // The owner deleted (a redeploy): the id is nobody's, not the other namespace's.
    cache.apply({ key: 'ns/pay', object: undefined, resourceVersion: '12' });
    await cache.homesRead();
    expect(cache.get(id)).to.equal(undefined);
    expect(cache.getByName('other', 'taker')).to.equal(undefined);
    // Re-applied: the owner's again.
    cache.put(fnRes('pay', '13', { uid: 'uid-pay-2', creationTimestamp: '2026-11-27T10:00:00Z' }));
    await cache.homesRead();
    expect(cache.get(id)?.name).to.equal('pay');
    // A granted move (the operator moved the home): the next change of a claimant reads it, and the mover serves.
    stored.set(id, { function_id: id, namespace: 'other', name: 'taker', how: 'moved', at: 2 });
    cache.put({ ...taker, metadata: { ...taker.metadata, resourceVersion: '14' } });
    await cache.homesRead();
    expect(cache.get(id)?.name).to.equal('taker');
    expect(cache.getByName('ns', 'pay')).to.equal(undefined);
    expect(reads).to.be.greaterThan(3);
  });

  it('a failed home read keeps the last known home and is read again later; an id never read serves only its derived owner', async () => {
    let fail = true;
    const errors: string[] = [];
    const imported = '3f2b8c1e-9d4a-4b6f-8e2d-1a2b3c4d5e6f';
    const cache = new FunctionCache({
      homes: { get: async (id) => { if (fail) throw new Error('store down'); return { function_id: id, namespace: 'ns', name: 'imp', how: 'claimed', at: 1 }; } },
      onHomeError: (fid) => errors.push(fid),
      retryMs: 20,
    });
    const imp: FunctionResource = { ...fnRes('imp', '10'), spec: { code: 'x', functionId: imported } };
    cache.put(imp);
    cache.put(fnRes('pay', '11'));
    await cache.homesRead();
    expect(errors).to.include(imported);
    expect(cache.get(derivedFunctionId('ns', 'pay'))?.name).to.equal('pay');
    expect(cache.get(imported)).to.equal(undefined);
    fail = false;
    await waitUntil(() => cache.get(imported) !== undefined, 2_000);
    expect(cache.get(imported)?.name).to.equal('imp');
  });

  it('orders resourceVersions numerically and ignores other shapes', () => {
    expect(olderVersion('9', '10')).to.equal(true);
    expect(olderVersion('10', '9')).to.equal(false);
    expect(olderVersion('10', '10')).to.equal(false);
    expect(olderVersion('abc', '10')).to.equal(false);
    expect(olderVersion(undefined, '10')).to.equal(false);
  });

  it('finds functions by id and by namespace/name, and never lets an older event roll back a newer write', () => {
    const cache = new FunctionCache();
    cache.put(fnRes('a', '10', {}, 'v1'));
    const id = derivedFunctionId('ns', 'a');
    expect(cache.get(id)!.code).to.equal('v1');
    expect(cache.getByName('ns', 'a')!.function_id).to.equal(id);
    // The gateway's own write answered with rv 20; the watch then delivers an older event (rv 15).
    cache.put(fnRes('a', '20', {}, 'v3'));
    cache.apply({ key: 'ns/a', object: fnRes('a', '15', {}, 'v2') });
    expect(cache.get(id)!.code).to.equal('v3');
    cache.apply({ key: 'ns/a', object: fnRes('a', '20', {}, 'v3') });
    cache.apply({ key: 'ns/a', object: fnRes('a', '21', {}, 'v4') });
    expect(cache.get(id)!.code).to.equal('v4');
    expect(cache.all().map((f) => f.name)).to.deep.equal(['a']);
    expect(cache.all('other')).to.deep.equal([]);
  });

  it('keeps a Function being deleted as a tombstone (not invocable), and drops it on its deletion', () => {
    const cache = new FunctionCache();
    cache.put(fnRes('a', '10'));
    const id = derivedFunctionId('ns', 'a');
    cache.put(fnRes('a', '11', { deletionTimestamp: '2026-11-23T10:01:00Z' }));
    expect(cache.get(id)).to.equal(undefined);
    cache.apply({ key: 'ns/a', object: fnRes('a', '10') });
    expect(cache.get(id), 'an older event does not revive it').to.equal(undefined);
    cache.apply({ key: 'ns/a', object: undefined, resourceVersion: '12' });
    expect(cache.resource(id)).to.equal(undefined);
    // Created again under the same name by this gateway (rv 30): a late deletion seen at rv 25 does not remove it.
    cache.put(fnRes('a', '30'));
    cache.apply({ key: 'ns/a', object: undefined, resourceVersion: '25' });
    expect(cache.get(id)).to.not.equal(undefined);
    const before = cache.version;
    cache.apply({ key: 'ns/a', object: undefined, resourceVersion: '31' });
    expect(cache.get(id)).to.equal(undefined);
    expect(cache.version).to.be.greaterThan(before);
  });

  it('maps API server refusals to the management API errors', () => {
    expect(apiErrorFor(new KubeApiError(409, 'AlreadyExists', 'POST /x: 409 exists'), 'function "a"')).to.be.instanceOf(ConflictError);
    expect(apiErrorFor(new KubeApiError(409, 'Conflict', 'PATCH /x: 409 changed'), 'function "a"')).to.be.instanceOf(ConflictError);
    const invalid = apiErrorFor(new KubeApiError(422, 'Invalid', 'POST /x: 422 spec.schedule.cron: bad minute'), 'function "a"') as Error;
    expect(invalid).to.be.instanceOf(ValidationError);
    expect(invalid.message).to.contain('spec.schedule.cron: bad minute');
    expect(apiErrorFor(new KubeApiError(404, 'NotFound', 'POST /x: 404 namespaces "nope" not found'), 'f')).to.be.instanceOf(NotFoundError);
    const forbidden = apiErrorFor(new KubeApiError(403, 'Forbidden', 'POST /x: 403 no'), 'f') as FnhostError;
    expect(forbidden.status).to.equal(403);
    // A ResourceQuota's refusal names the quota (issue 28), not RBAC.
    const quota = apiErrorFor(
      new KubeApiError(403, 'Forbidden', 'POST /apis/fnhost.dev/v1alpha1/namespaces/t/functions: 403 functions.fnhost.dev "c" is forbidden: exceeded quota: fns, requested: count/functions.fnhost.dev=1, used: count/functions.fnhost.dev=2, limited: count/functions.fnhost.dev=2'),
      'function "c" in namespace "t"',
    ) as FnhostError;
    expect(quota).to.be.instanceOf(KubernetesQuotaError);
    expect([quota.status, quota.code, quota.expose]).to.deep.equal([403, 'quota_exceeded', true]);
    expect(quota.message).to.equal('the Kubernetes API server refused function "c" in namespace "t": functions.fnhost.dev "c" is forbidden: exceeded quota: fns, requested: count/functions.fnhost.dev=1, used: count/functions.fnhost.dev=2, limited: count/functions.fnhost.dev=2');
    const other = new Error('x');
    expect(apiErrorFor(other, 'f')).to.equal(other);
  });
});

describe('cluster mode: EndpointSlices', () => {
  it('takes only ready, non-terminating endpoints on the http port (unset ready counts as ready)', () => {
    const s = slice('s1', 'fn-a', [
      { addresses: ['10.0.0.1'], conditions: { ready: true } },
      { addresses: ['10.0.0.2'], conditions: { ready: false } },
      { addresses: ['10.0.0.3'], conditions: { ready: true, terminating: true } },
      { addresses: ['10.0.0.4'], conditions: {} },
    ], [{ name: 'metrics', port: 9090 }, { name: 'http', port: 8080 }]);
    expect(readyOrigins(s)).to.deep.equal(['http://10.0.0.1:8080', 'http://10.0.0.4:8080']);
    expect(readyOrigins({ ...s, addressType: 'IPv6', endpoints: [{ addresses: ['fd00::5'] }] })).to.deep.equal(['http://[fd00::5]:8080']);
    expect(readyOrigins({ ...s, addressType: 'FQDN' })).to.deep.equal([]);
    expect(readyOrigins({ ...s, ports: null })).to.deep.equal([]);
  });

  it('takes as starting the endpoints with an address, ready: false and not terminating', () => {
    const s = slice('s1', 'fn-a', [
      { addresses: ['10.0.0.1'], conditions: { ready: true } },
      { addresses: ['10.0.0.2'], conditions: { ready: false } },
      { addresses: ['10.0.0.3'], conditions: { ready: false, terminating: true } },
      { addresses: ['10.0.0.4'], conditions: {} },
      { addresses: [], conditions: { ready: false } },
      { addresses: ['10.0.0.6'], conditions: { ready: false, serving: false, terminating: false } },
    ]);
    expect(startingOrigins(s)).to.deep.equal(['http://10.0.0.2:8080', 'http://10.0.0.6:8080']);
    expect(startingOrigins({ ...s, addressType: 'IPv6', endpoints: [{ addresses: ['fd00::5'], conditions: { ready: false } }] })).to.deep.equal(['http://[fd00::5]:8080']);
    expect(startingOrigins({ ...s, addressType: 'FQDN' })).to.deep.equal([]);
    expect(startingOrigins({ ...s, ports: [] })).to.deep.equal([]);
  });

  it('keeps the starting origins per Service and tells subscribers of every change', () => {
    const idx = new EndpointIndex();
    const changes: string[] = [];
    const stop = idx.subscribe((service) => changes.push(service));
    idx.apply({ key: 'ns/s1', object: slice('s1', 'fn-a', [{ addresses: ['10.0.0.1'], conditions: { ready: false } }]) });
    idx.apply({ key: 'ns/s2', object: slice('s2', 'fn-a', [{ addresses: ['10.0.0.2'], conditions: { ready: false } }]) });
    expect(idx.starting('ns/fn-a')).to.deep.equal(['http://10.0.0.1:8080', 'http://10.0.0.2:8080']);
    expect(idx.origins('ns/fn-a')).to.deep.equal([]);
    // Ready in one slice wins over starting in another (a pod listed twice while slices are rewritten).
    idx.apply({ key: 'ns/s3', object: slice('s3', 'fn-a', [{ addresses: ['10.0.0.1'], conditions: { ready: true } }]) });
    expect(idx.starting('ns/fn-a')).to.deep.equal(['http://10.0.0.2:8080']);
    expect(idx.origins('ns/fn-a')).to.deep.equal(['http://10.0.0.1:8080']);
    idx.apply({ key: 'ns/s2', object: slice('s2', 'fn-a', [{ addresses: ['10.0.0.2'], conditions: { ready: false, terminating: true } }]) });
    expect(idx.starting('ns/fn-a')).to.deep.equal([]);
    idx.apply({ key: 'ns/s9', object: slice('s9', 'fn-b', [{ addresses: ['10.0.0.9'], conditions: { ready: false } }]) });
    expect(changes).to.deep.equal(['ns/fn-a', 'ns/fn-a', 'ns/fn-a', 'ns/fn-a', 'ns/fn-b']);
    stop();
    idx.apply({ key: 'ns/s9', object: undefined });
    expect(changes, 'a stopped subscriber hears nothing').to.have.length(5);
    expect(idx.starting('ns/fn-b')).to.deep.equal([]);
  });

  it('merges the slices of a Service, balances round robin, follows updates and deletions, and wakes waiters', () => {
    const idx = new EndpointIndex();
    let woken = 0;
    idx.whenReady('ns/fn-a', () => woken++);
    idx.apply({ key: 'ns/s1', object: slice('s1', 'fn-a', [{ addresses: ['10.0.0.1'] }]) });
    expect(woken).to.equal(1);
    idx.apply({ key: 'ns/s2', object: slice('s2', 'fn-a', [{ addresses: ['10.0.0.2'] }]) });
    expect([idx.pick('ns/fn-a'), idx.pick('ns/fn-a'), idx.pick('ns/fn-a')]).to.deep.equal(['http://10.0.0.1:8080', 'http://10.0.0.2:8080', 'http://10.0.0.1:8080']);
    // A pod stops being ready: it leaves the rotation.
    idx.apply({ key: 'ns/s1', object: slice('s1', 'fn-a', [{ addresses: ['10.0.0.1'], conditions: { ready: false } }]) });
    expect(idx.origins('ns/fn-a')).to.deep.equal(['http://10.0.0.2:8080']);
    idx.apply({ key: 'ns/s2', object: undefined });
    expect(idx.pick('ns/fn-a')).to.equal(undefined);
    const stop = idx.whenReady('ns/fn-a', () => woken++);
    stop();
    idx.apply({ key: 'ns/s2', object: slice('s2', 'fn-a', [{ addresses: ['10.0.0.9'] }]) });
    expect(woken, 'a cancelled waiter is not called').to.equal(1);
    expect(idx.pick('ns/fn-b')).to.equal(undefined);
  });
});

describe('cluster mode: executor (pods as upstreams, hold queue)', () => {
  const fn = recordFromResource({ apiVersion: API_VERSION, kind: KIND, metadata: { name: 'a', namespace: 'ns' }, spec: { code: 'x', timeoutSeconds: 5 } })!;

  it('answers at once with a ready pod', async () => {
    const idx = new EndpointIndex();
    idx.apply({ key: 'ns/s', object: slice('s', 'fn-a', [{ addresses: ['10.0.0.1'] }]) });
    const woken: string[] = [];
    const ex = new ClusterExecutor({ endpoints: idx, clock: new FakeClock(), wake: (f) => woken.push(f.name) });
    expect(await ex.acquire(fn)).to.deep.equal({ origin: 'http://10.0.0.1:8080' });
    expect(woken).to.deep.equal([]);
  });

  it('holds a call while the function has no ready pod, wakes it, and sends it on as soon as one is ready', async () => {
    const idx = new EndpointIndex();
    const clock = new FakeClock();
    const woken: string[] = [];
    const ex = new ClusterExecutor({ endpoints: idx, clock, wake: (f) => woken.push(f.name), holdMs: 30_000 });
    const pending = ex.acquire(fn);
    await settle();
    expect(woken).to.deep.equal(['a']);
    expect(ex.held).to.equal(1);
    await clock.advance(1500);
    idx.apply({ key: 'ns/s', object: slice('s', 'fn-a', [{ addresses: ['10.0.0.7'] }]) });
    expect(await pending).to.deep.equal({ origin: 'http://10.0.0.7:8080', coldStart: true });
    expect(ex.held).to.equal(0);
    expect(clock.timers, 'its timer is cleared').to.deep.equal([]);
  });

  it('gives up after the bound (never past the function\'s own time limit) with a clear 503', async () => {
    expect(holdBoundMs(30_000, 5)).to.equal(5000);
    expect(holdBoundMs(2_000, 30)).to.equal(2000);
    const clock = new FakeClock();
    const ex = new ClusterExecutor({ endpoints: new EndpointIndex(), clock, wake: () => undefined, holdMs: 30_000 });
    const pending = ex.acquire(fn).then(() => null, (e: unknown) => e);
    await clock.advance(4999);
    expect(ex.held).to.equal(1);
    await clock.advance(1);
    const err = (await pending) as FunctionUnavailableError;
    expect(err).to.be.instanceOf(FunctionUnavailableError);
    expect(err.status).to.equal(503);
    expect(err.code).to.equal('function_unavailable');
    expect(err.message).to.match(/has no ready pod after 5 s/);
    expect(ex.holdTimeouts).to.equal(1);
  });

  it('refuses calls beyond the bounded queue (per function and in all)', async () => {
    const clock = new FakeClock();
    const ex = new ClusterExecutor({ endpoints: new EndpointIndex(), clock, wake: () => undefined, maxHeld: 3, maxHeldPerFunction: 2 });
    const a1 = ex.acquire(fn).catch((e: unknown) => e);
    const a2 = ex.acquire(fn).catch((e: unknown) => e);
    const refused = await ex.acquire(fn).then(() => null, (e: unknown) => e as Error);
    expect(refused).to.be.instanceOf(FunctionUnavailableError);
    expect(refused!.message).to.match(/2 calls of it already wait/);
    const other = { ...fn, function_id: 'other', name: 'b' };
    const b1 = ex.acquire(other).catch((e: unknown) => e);
    const refusedAll = await ex.acquire({ ...other, function_id: 'third', name: 'c' }).then(() => null, (e: unknown) => e as Error);
    expect(refusedAll!.message).to.match(/3 calls already wait/);
    expect(ex.holdRejections).to.equal(2);
    await clock.advance(30_000);
    await Promise.all([a1, a2, b1]);
    expect(ex.held).to.equal(0);
  });
});

describe('cluster mode: telling an OOM-killed container from a crash', () => {
  const now = Date.parse('2026-11-23T12:00:10Z');
  const pod = (state: 'state' | 'lastState', reason: string, finishedAt: string) => ({ status: { containerStatuses: [{ [state]: { terminated: { reason, finishedAt } } }] } });

  it('recognises a recent OOMKilled (current or last state), not an old one or another reason', () => {
    expect(oomKilledRecently([pod('lastState', 'OOMKilled', '2026-11-23T12:00:08Z')], now)).to.equal(true);
    expect(oomKilledRecently([pod('state', 'OOMKilled', '2026-11-23T12:00:09Z')], now)).to.equal(true);
    expect(oomKilledRecently([pod('lastState', 'OOMKilled', '2026-11-23T11:50:00Z')], now)).to.equal(false);
    expect(oomKilledRecently([pod('lastState', 'Error', '2026-11-23T12:00:09Z')], now)).to.equal(false);
    expect(oomKilledRecently([{}, { status: {} }], now)).to.equal(false);
  });

  it('diagnose() waits for the kubelet to report the kill, and gives up after its bound', async () => {
    const clock = new FakeClock();
    clock.t = now;
    let reads = 0;
    const fnRec = recordFromResource({ apiVersion: API_VERSION, kind: KIND, metadata: { name: 'a', namespace: 'ns' }, spec: { code: 'x' } })!;
    const ex = new ClusterExecutor({
      endpoints: new EndpointIndex(),
      clock,
      wake: () => undefined,
      lookup: () => fnRec,
      runtimePods: async () => (++reads < 3 ? [] : [pod('lastState', 'OOMKilled', new Date(clock.now()).toISOString())]),
    });
    const verdict = ex.diagnose(fnRec.function_id, 300);
    await clock.advance(1000);
    expect(await verdict).to.equal('out_of_memory');
    const never = new ClusterExecutor({ endpoints: new EndpointIndex(), clock, wake: () => undefined, lookup: () => fnRec, runtimePods: async () => [] });
    const none = never.diagnose(fnRec.function_id, 300);
    await clock.advance(5000);
    expect(await none).to.equal(undefined);
  });
});

describe('cluster mode: derived tokens', () => {
  const key = 'k'.repeat(40);
  it('maps a runtime token to its function, refuses others, and checks the scheduled-trigger token', () => {
    const cache = new FunctionCache();
    cache.put(fnRes('a', '1'));
    const tokens = new DerivedTokens(key, cache);
    const id = derivedFunctionId('ns', 'a');
    expect(tokens.verify(deriveToken(key, 'runtime', id))).to.equal(id);
    expect(tokens.verify(deriveToken(key, 'schedule', id)), 'the schedule token is not a runtime token').to.equal(undefined);
    expect(tokens.verify(deriveToken('x'.repeat(40), 'runtime', id))).to.equal(undefined);
    expect(tokens.verify(undefined)).to.equal(undefined);
    // A function created later is found (the index is rebuilt when the cache changed).
    cache.put(fnRes('b', '2'));
    const idB = derivedFunctionId('ns', 'b');
    expect(tokens.verify(deriveToken(key, 'runtime', idB))).to.equal(idB);
    expect(tokens.verifySchedule(id, deriveToken(key, 'schedule', id))).to.equal(true);
    expect(tokens.verifySchedule(id, deriveToken(key, 'schedule', idB))).to.equal(false);
    expect(tokens.verifySchedule(id, deriveToken(key, 'runtime', id))).to.equal(false);
  });
});

describe('cluster mode: settings', () => {
  const base = { FNHOST_MODE: 'cluster', FNHOST_TOKEN_KEY: 'k'.repeat(32), MONGODB_URL: 'mongodb://db:27017/fnhost', FNHOST_TOKEN: 't'.repeat(24), FNHOST_PLATFORM_NAMESPACE: 'fnhost-system' };
  it('reads defaults and names the bad variable', () => {
    expect(isClusterMode({})).to.equal(false);
    expect(isClusterMode(base)).to.equal(true);
    expect(() => isClusterMode({ FNHOST_MODE: 'k8s' })).to.throw(/FNHOST_MODE="k8s" must be local or cluster/);
    expect(loadClusterSettings({ ...base, FNHOST_POD_NAME: 'fnhost-gateway-7d9-x2' })).to.deep.equal({
      tokenKey: 'k'.repeat(32), defaultNamespace: 'default', watchNamespace: '', holdMs: 30_000, maxHeld: 1000, maxHeldPerFunction: 200, statusIntervalMs: 10_000, maxInFlight: 10, gatewayId: 'fnhost-gateway-7d9-x2',
      functionNamespaces: { names: [], selector: undefined, selectorText: '', never: ['kube-system', 'fnhost-system'] },
      kubeTokens: true,
      codeCacheDir: '/tmp/fnhost-code-cache', codeCacheMaxBytes: 768 * 1024 * 1024,
      // The pool of generic pods is off unless the chart turns it on (pool.size > 0).
      pool: false,
    });
    expect(loadClusterSettings({ ...base, FNHOST_POOL: 'true' }).pool).to.equal(true);
    expect(() => loadClusterSettings({ ...base, FNHOST_CODE_CACHE_MAX_BYTES: '1000' })).to.throw(/FNHOST_CODE_CACHE_MAX_BYTES="1000" must be an integer from 67108864/);
    expect(loadClusterSettings(base).gatewayId, 'the host name: the pod name').to.be.a('string').and.not.equal('');
    expect(() => loadClusterSettings({ ...base, FNHOST_POD_NAME: 'a b' })).to.throw(/FNHOST_POD_NAME="a b" is not a pod name/);
    expect(loadClusterSettings({ ...base, FNHOST_KUBE_TOKENS: 'false' }).kubeTokens).to.equal(false);
    expect(() => loadClusterSettings({ ...base, FNHOST_KUBE_TOKENS: 'maybe' })).to.throw(/FNHOST_KUBE_TOKENS="maybe" must be true or false/);
    expect(loadClusterSettings({ ...base, FNHOST_FUNCTION_NAMESPACES: 'team-a, team-b' }).functionNamespaces.names).to.deep.equal(['team-a', 'team-b']);
    expect(() => loadClusterSettings({ ...base, FNHOST_FUNCTION_NAMESPACES: 'Team_A' })).to.throw(/FNHOST_FUNCTION_NAMESPACES: "Team_A" is not a namespace name/);
    expect(loadClusterSettings({ ...base, FNHOST_WATCH_NAMESPACE: 'team-a' }).defaultNamespace).to.equal('team-a');
    expect(() => loadClusterSettings({ ...base, FNHOST_TOKEN_KEY: 'short' })).to.throw(/FNHOST_TOKEN_KEY must be set to a secret of at least 32 bytes/);
    expect(() => loadClusterSettings({ ...base, FNHOST_TOKEN_KEY: 'short' })).to.not.throw(/short/);
    expect(() => loadClusterSettings({ ...base, MONGODB_URL: '' })).to.throw(/MONGODB_URL is required in cluster mode/);
    expect(() => loadClusterSettings({ ...base, FNHOST_TOKEN: '' })).to.throw(/FNHOST_TOKEN is required in cluster mode/);
    expect(() => loadClusterSettings({ ...base, FNHOST_DEFAULT_NAMESPACE: 'Team_A' })).to.throw(/FNHOST_DEFAULT_NAMESPACE="Team_A" is not a namespace name/);
    expect(() => loadClusterSettings({ ...base, FNHOST_STATUS_INTERVAL_SECONDS: '0' })).to.throw(/FNHOST_STATUS_INTERVAL_SECONDS="0" must be an integer from 1 to 3600/);
    expect(() => loadClusterSettings({ ...base, FNHOST_WATCH_NAMESPACE: 'a', FNHOST_DEFAULT_NAMESPACE: 'b' })).to.throw(/differs from FNHOST_WATCH_NAMESPACE/);
  });
});
