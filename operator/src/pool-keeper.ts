import type { Clock } from '@fnhost/core/clock.ts';
import { LABEL_POOL_FUNCTION, POOL_NAME } from '@fnhost/core/cluster-pool.ts';
import type { FunctionResource } from '@fnhost/core/function-resource.ts';
import { paths, type KubeClient } from './kube.ts';
import type { Logger } from './log.ts';
import { FIELD_MANAGER, ownerReference } from './names.ts';
import { poolDeploymentFor, poolReplicas, poolSecretFor, specializedPodVerdict, type SpecializedPodView } from './pool.ts';
import type { KubeObject, Settings } from './types.ts';

// The I/O of the pool (pool.ts has the pure parts): per namespace with Functions, its pool key
// Secret and Deployment, owned by every Function there; and the pods specialized for one function,
// deleted once its Deployment has a ready pod, it idles, or its spec changed.

/** While a function has a specialized pod, the reconcile looks again this often (its Deployment's readiness also requeues it). */
export const SPECIALIZED_RECHECK_MS = 10_000;

export class PoolKeeper {
  readonly #client: KubeClient;
  readonly #settings: Settings;
  readonly #log: Logger;
  readonly #clock: Clock;
  /** Namespaces given a pool, in the order first seen (the budget, poolReplicas). Per operator process. */
  readonly #given: string[] = [];

  constructor(deps: { client: KubeClient; settings: Settings; log: Logger; clock: Clock }) {
    this.#client = deps.client;
    this.#settings = deps.settings;
    this.#log = deps.log;
    this.#clock = deps.clock;
  }

  get enabled(): boolean {
    return (this.#settings.pool?.size ?? 0) > 0;
  }

  /** The namespace's pool key and pool Deployment, this Function among their owners. */
  async ensure(fn: FunctionResource): Promise<void> {
    const pool = this.#settings.pool;
    if (pool === undefined || pool.size === 0) return;
    const ns = fn.metadata.namespace!;
    const replicas = poolReplicas(pool, ns, this.#given);
    if (replicas === 0) {
      if (!this.#given.includes(ns)) this.#log.warn('no pool for this namespace: the pool budget is spent', { namespace: ns, maxPods: pool.maxPods, size: pool.size });
      return;
    }
    if (!this.#given.includes(ns)) this.#given.push(ns);
    // The Secret first: a pool pod cannot start without its key.
    await this.#ownedApply(fn, poolSecretFor(ns, this.#settings.tokenKey));
    await this.#ownedApply(fn, poolDeploymentFor(ns, this.#settings, pool, replicas));
  }

  /** Applies `obj` and adds this Function to its owners (strategic merge by uid keeps the others'). */
  async #ownedApply(fn: FunctionResource, obj: KubeObject): Promise<void> {
    const path = paths.object(obj.apiVersion, obj.kind, obj.metadata.namespace!, obj.metadata.name);
    const applied = await this.#client.apply<KubeObject>(path, obj, FIELD_MANAGER);
    if ((applied?.metadata?.ownerReferences ?? []).some((r: { uid?: string }) => r.uid === fn.metadata.uid)) return;
    const { apiVersion, kind, name, uid } = ownerReference(fn);
    await this.#client.strategicMergePatch(path, { metadata: { ownerReferences: [{ apiVersion, kind, name, uid }] } });
  }

  /**
   * Deletes the pods specialized for this function that have served their turn; returns whether
   * any is left (the caller looks again in SPECIALIZED_RECHECK_MS).
   */
  async sweep(fn: FunctionResource, deployment: { spec?: { replicas?: number }; status?: { readyReplicas?: number } } | undefined): Promise<boolean> {
    const ns = fn.metadata.namespace!;
    const pods = await this.#client.request<{ items?: SpecializedPodView[] }>('GET', paths.pods(ns), { query: { labelSelector: `${LABEL_POOL_FUNCTION}=${fn.metadata.name}` } });
    let left = false;
    for (const pod of pods.items ?? []) {
      const why = specializedPodVerdict(
        pod,
        { generation: fn.metadata.generation ?? 0, active: fn.spec.active ?? true, wantedReplicas: deployment?.spec?.replicas ?? 0, readyReplicas: deployment?.status?.readyReplicas ?? 0 },
        this.#clock.now(),
      );
      if (why === undefined) {
        if (pod.metadata.deletionTimestamp === undefined) left = true;
        continue;
      }
      await this.#client.delete(`${paths.pods(ns)}/${pod.metadata.name}`, pod.metadata.uid);
      this.#log.info('specialized pool pod deleted', { function: `${ns}/${fn.metadata.name}`, pod: pod.metadata.name, reason: why, pool: POOL_NAME });
    }
    return left;
  }
}
