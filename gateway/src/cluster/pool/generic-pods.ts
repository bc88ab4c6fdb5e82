import { POOL_APP_NAME, ROLE_POOL } from '@fnhost/core/cluster-pool.ts';
import type { Change } from '../reflector.ts';
import { claimable, type PoolPod } from './claim.ts';

// The generic pool pods the gateway knows of, kept by a watch (start.ts) so that a cold call does
// not list them from the API server first: that list was a quarter of a start from the pool on
// the loaded test cluster (bench/RESULTS.md, P5b pool phases). The index may lag the API server by
// the watch's delay; the claim's conditional patch is what decides, and a claim that loses every
// pod the index offered lists afresh (claimer.ts).

/** The label selector of generic pool pods (the pool Deployment's pods not yet claimed). */
export const GENERIC_POD_SELECTOR = `app.kubernetes.io/name=${POOL_APP_NAME},fnhost.dev/role=${ROLE_POOL}`;

export class GenericPodIndex {
  readonly #byNamespace = new Map<string, Map<string, PoolPod>>();
  #synced = false;

  /** Set once the watch's first list is in: before that the index knows nothing, and the claimer lists. */
  markSynced(): void {
    this.#synced = true;
  }

  apply(change: Change<PoolPod>): void {
    const [ns, name] = splitKey(change.key);
    let pods = this.#byNamespace.get(ns);
    if (change.object === undefined || change.object.metadata.labels?.['fnhost.dev/role'] !== ROLE_POOL) {
      pods?.delete(name);
      if (pods?.size === 0) this.#byNamespace.delete(ns);
      return;
    }
    if (pods === undefined) this.#byNamespace.set(ns, (pods = new Map()));
    pods.set(name, change.object);
  }

  /** The namespace's generic pods that can take a claim now, or undefined before the first sync. */
  claimable(namespace: string): PoolPod[] | undefined {
    if (!this.#synced) return undefined;
    return [...(this.#byNamespace.get(namespace)?.values() ?? [])].filter(claimable);
  }

  /** Take a pod this gateway has just claimed out at once (its watch event follows). */
  forget(namespace: string, name: string): void {
    this.#byNamespace.get(namespace)?.delete(name);
  }
}

function splitKey(key: string): [string, string] {
  const slash = key.indexOf('/');
  return [key.slice(0, slash), key.slice(slash + 1)];
}
