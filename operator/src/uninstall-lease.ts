import { KubeConfig } from '@kubernetes/client-node';
import type { Clock } from '@fnhost/core/clock.ts';
import { KubeClient, paths } from './kube.ts';
import { jsonLogger, type Logger } from './log.ts';

// node operator/src/uninstall-lease.ts: the chart's post-delete hook. The
// operator's leader-election Lease is written by the operator itself, not by
// helm, so `helm uninstall` left it behind (issue 28). It cannot go in the
// pre-delete hook: the operator still runs then and would take it again at its
// next renewal. So, after helm has deleted the release's objects: wait until no
// operator pod is left (their Deployment is gone, the pods may still be
// stopping, and a stopping leader may still write its Lease), then delete it.

export class LeaseRemovalError extends Error {
  override name = 'LeaseRemovalError';
}

export interface LeaseRemovalOptions {
  namespace: string;
  leaseName: string;
  /** Label selector of the operator's pods. */
  operatorPods: string;
  timeoutMs: number;
  pollMs: number;
  clock: Clock;
  log: Logger;
}

/** Deletes the operator's Lease once no operator pod is left; true when there was one to delete. */
export async function removeOperatorLease(client: Pick<KubeClient, 'request' | 'delete'>, o: LeaseRemovalOptions): Promise<boolean> {
  const deadline = o.clock.now() + o.timeoutMs;
  for (;;) {
    const pods = (await client.request<{ items: Array<{ metadata: { name: string } }> }>('GET', paths.pods(o.namespace), { query: { labelSelector: o.operatorPods } })).items;
    if (pods.length === 0) break;
    if (o.clock.now() >= deadline) {
      throw new LeaseRemovalError(`operator pods still there after ${Math.round(o.timeoutMs / 1000)} s (${pods.map((p) => p.metadata.name).join(', ')}): Lease ${o.namespace}/${o.leaseName} left in place (kubectl delete lease ${o.leaseName} -n ${o.namespace})`);
    }
    await new Promise((r) => o.clock.setTimeout(() => r(undefined), o.pollMs));
  }
  // KubeClient.delete answers false for a Lease already gone (never elected, or removed by hand).
  const deleted = await client.delete(paths.lease(o.namespace, o.leaseName));
  o.log.info(deleted ? 'uninstall: the operator\'s Lease is deleted' : 'uninstall: no operator Lease to delete', { namespace: o.namespace, lease: o.leaseName });
  return deleted;
}

if (import.meta.main) {
  const log = jsonLogger('info', { component: 'fnhost-uninstall-lease' });
  const kc = new KubeConfig();
  kc.loadFromDefault();
  const need = (name: string): string => {
    const v = process.env[name]?.trim();
    if (!v) {
      log.error(`${name} is required`);
      process.exit(2);
    }
    return v;
  };
  removeOperatorLease(new KubeClient(kc, { maxInFlight: 2 }), {
    namespace: need('FNHOST_LEASE_NAMESPACE'),
    leaseName: need('FNHOST_LEASE_NAME'),
    operatorPods: need('FNHOST_OPERATOR_POD_SELECTOR'),
    timeoutMs: 120_000,
    pollMs: 1_000,
    // Timers that keep the process alive while it waits.
    clock: { now: () => Date.now(), setTimeout: (fn, ms) => setTimeout(fn, ms), clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout) },
    log,
  }).then(
    () => process.exit(0),
    (err: unknown) => {
      log.error('uninstall: the operator\'s Lease could not be removed', { error: (err as Error).message });
      process.exit(1);
    },
  );
}
