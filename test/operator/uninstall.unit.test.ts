import { expect } from 'chai';
import type { KubeClient } from '../../operator/src/kube.ts';
import { KubeApiError } from '../../operator/src/kube.ts';
import { uninstallFunctions, UninstallError } from '../../operator/src/uninstall.ts';
import { jsonLogger } from '../../operator/src/log.ts';

// The pre-delete hook's order, against a fake API server that plays the
// operator: Functions made inactive first; deleted only once no function pod
// is left (so the NetworkPolicy, which goes with the last Function, outlives
// every pod); a step that does not finish fails naming what is left.

interface Fn { metadata: { name: string; namespace: string }; spec: { active?: boolean } }

function fakeCluster(options: { operatorRuns: boolean }) {
  const calls: string[] = [];
  const fns: Fn[] = [
    { metadata: { name: 'a', namespace: 'team-a' }, spec: {} },
    { metadata: { name: 'b', namespace: 'team-b' }, spec: { active: false } },
    { metadata: { name: 'c', namespace: 'team-a' }, spec: {} },
  ];
  let pods = [{ metadata: { name: 'a-pod', namespace: 'team-a' } }, { metadata: { name: 'c-pod', namespace: 'team-a' } }];
  let jobs = [{ metadata: { name: 'c-sched-1', namespace: 'team-a' } }];
  const podsListed = { count: 0 };
  const client = {
    async request(method: string, path: string, opts: { query?: Record<string, string> } = {}) {
      calls.push(`${method} ${path}${opts.query?.labelSelector ? `?${opts.query.labelSelector}` : ''}`);
      if (method === 'GET' && path === '/apis/fnhost.dev/v1alpha1/functions') return { items: fns.map((f) => structuredClone(f)) };
      const inNs = /^\/apis\/fnhost\.dev\/v1alpha1\/namespaces\/([^/]+)\/functions$/.exec(path);
      if (method === 'GET' && inNs) return { items: fns.filter((f) => f.metadata.namespace === inNs[1]).map((f) => structuredClone(f)) };
      const ns = /namespaces\/([^/]+)\//.exec(path)?.[1];
      if (method === 'GET' && path.endsWith('/pods')) {
        // The operator scales an inactive function's Deployment to zero: its pod goes a poll later.
        if (podsListed.count++ > 0 && options.operatorRuns) pods = pods.filter((p) => fns.find((f) => `${f.metadata.name}-pod` === p.metadata.name)?.spec.active !== false);
        return { items: pods.filter((p) => p.metadata.namespace === ns) };
      }
      if (method === 'GET' && path.endsWith('/jobs')) return { items: jobs.filter((j) => j.metadata.namespace === ns) };
      if (method === 'DELETE' && path.includes('/jobs/')) {
        jobs = jobs.filter((j) => !path.endsWith(`/${j.metadata.name}`));
        return {};
      }
      throw new KubeApiError(404, 'NotFound', `no ${path}`, {});
    },
    async mergePatch(path: string, patch: { spec: { active: boolean } }) {
      calls.push(`PATCH ${path} ${JSON.stringify(patch)}`);
      const fn = fns.find((f) => path.endsWith(`/namespaces/${f.metadata.namespace}/functions/${f.metadata.name}`))!;
      fn.spec.active = patch.spec.active;
      return fn;
    },
    async delete(path: string) {
      calls.push(`DELETE ${path}`);
      // The operator's finalizer releases a deleted Function.
      if (options.operatorRuns) fns.splice(fns.findIndex((f) => path.endsWith(`/${f.metadata.name}`)), 1);
      return true;
    },
  };
  return { client: client as unknown as KubeClient, calls, state: () => ({ fns, pods, jobs }) };
}

function fakeClock() {
  let now = 0;
  return { now: () => now, setTimeout: (fn: () => void, ms: number) => { now += ms; queueMicrotask(fn); return 0; }, clearTimeout() {} };
}

const silent = jsonLogger('error', {}, () => {});

describe('operator: the uninstall hook (Functions before the platform)', () => {
  it('makes every active Function inactive, deletes running schedule Jobs, waits for the pods to go, and only then deletes the Functions', async () => {
    const cluster = fakeCluster({ operatorRuns: true });
    await uninstallFunctions(cluster.client, { watchNamespace: '', timeoutMs: 60_000, pollMs: 1000, clock: fakeClock(), log: silent });
    const calls = cluster.calls;
    const patches = calls.filter((c) => c.startsWith('PATCH'));
    expect(patches).to.deep.equal([
      'PATCH /apis/fnhost.dev/v1alpha1/namespaces/team-a/functions/a {"spec":{"active":false}}',
      'PATCH /apis/fnhost.dev/v1alpha1/namespaces/team-a/functions/c {"spec":{"active":false}}',
    ]);
    expect(calls).to.include('DELETE /apis/batch/v1/namespaces/team-a/jobs/c-sched-1');
    const firstFunctionDelete = calls.findIndex((c) => c.startsWith('DELETE /apis/fnhost.dev'));
    const lastPodList = calls.map((c, i) => [c, i] as const).filter(([c]) => c.includes('/pods?')).pop()![1];
    expect(firstFunctionDelete).to.be.greaterThan(lastPodList);
    expect(calls.indexOf(patches.at(-1)!)).to.be.lessThan(firstFunctionDelete);
    expect(cluster.state()).to.deep.equal({ fns: [], pods: [], jobs: [] });
  });

  it('fails naming the pods left when the operator does not scale them down, and deletes no Function', async () => {
    const cluster = fakeCluster({ operatorRuns: false });
    const err = await uninstallFunctions(cluster.client, { watchNamespace: '', timeoutMs: 10_000, pollMs: 1000, clock: fakeClock(), log: silent }).then(() => null, (e: unknown) => e as Error);
    expect(err).to.be.instanceOf(UninstallError);
    expect(err!.message).to.contain('function pods').and.to.contain('team-a/a-pod, team-a/c-pod').and.to.contain('Is the operator running?');
    expect(cluster.calls.some((c) => c.startsWith('DELETE /apis/fnhost.dev'))).to.equal(false);
  });

  it('lists only the watched namespace when the chart watches one', async () => {
    const cluster = fakeCluster({ operatorRuns: true });
    await uninstallFunctions(cluster.client, { watchNamespace: 'team-z', timeoutMs: 1000, pollMs: 1000, clock: fakeClock(), log: silent });
    expect(cluster.calls).to.deep.equal(['GET /apis/fnhost.dev/v1alpha1/namespaces/team-z/functions']);
  });
});
