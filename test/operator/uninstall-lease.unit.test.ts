import { expect } from 'chai';
import type { KubeClient } from '../../operator/src/kube.ts';
import { LeaseRemovalError, removeOperatorLease } from '../../operator/src/uninstall-lease.ts';
import { jsonLogger } from '../../operator/src/log.ts';

// The post-delete hook removes the operator's Lease only once no operator pod
// is left (a stopping leader would write it again), against a fake API server.

function fakeCluster(podPolls: number, lease: boolean) {
  const calls: string[] = [];
  let polls = 0;
  const client = {
    async request(method: string, path: string, opts: { query?: Record<string, string> } = {}) {
      calls.push(`${method} ${path}?${opts.query?.labelSelector ?? ''}`);
      // The operator's pods stop after `podPolls` looks.
      return { items: polls++ < podPolls ? [{ metadata: { name: 'rel-fnhost-operator-abc' } }] : [] };
    },
    async delete(path: string) {
      calls.push(`DELETE ${path}`);
      return lease;
    },
  };
  return { client: client as unknown as Pick<KubeClient, 'request' | 'delete'>, calls };
}

function fakeClock() {
  let now = 0;
  return { now: () => now, setTimeout: (fn: () => void, ms: number) => { now += ms; queueMicrotask(fn); return 0; }, clearTimeout() {} };
}

const options = { namespace: 'fnhost', leaseName: 'rel-fnhost-operator', operatorPods: 'app.kubernetes.io/instance=rel,app.kubernetes.io/component=operator', timeoutMs: 10_000, pollMs: 1000, log: jsonLogger('error', {}, () => {}) };

describe('operator: the uninstall hook removes the operator\'s Lease', () => {
  it('waits for the operator pods to be gone, then deletes the Lease', async () => {
    const cluster = fakeCluster(3, true);
    expect(await removeOperatorLease(cluster.client, { ...options, clock: fakeClock() })).to.equal(true);
    expect(cluster.calls.filter((c) => c.startsWith('GET'))).to.have.length(4);
    expect(cluster.calls.at(-1)).to.equal('DELETE /apis/coordination.k8s.io/v1/namespaces/fnhost/leases/rel-fnhost-operator');
    expect(cluster.calls[0]).to.equal('GET /api/v1/namespaces/fnhost/pods?app.kubernetes.io/instance=rel,app.kubernetes.io/component=operator');
  });

  it('a Lease already gone is fine; operator pods that never stop fail the hook naming them, and the Lease stays', async () => {
    expect(await removeOperatorLease(fakeCluster(0, false).client, { ...options, clock: fakeClock() })).to.equal(false);
    const stuck = fakeCluster(1000, true);
    const err = await removeOperatorLease(stuck.client, { ...options, clock: fakeClock() }).then(() => null, (e: unknown) => e as Error);
    expect(err).to.be.instanceOf(LeaseRemovalError);
    expect(err!.message).to.contain('rel-fnhost-operator-abc').and.to.contain('kubectl delete lease rel-fnhost-operator -n fnhost');
    expect(stuck.calls.some((c) => c.startsWith('DELETE'))).to.equal(false);
  });
});
