import { configMapFor, cronJobFor, deploymentFor, functionsNetworkPolicyFor, secretFor, serviceFor, serviceUrl } from './builders/index.ts';
import type { Clock } from '@fnhost/core/clock.ts';
import { KubeApiError, KubeClient, paths } from './kube.ts';
import type { LogCleaner } from './logcleaner.ts';
import type { Logger } from './log.ts';
import { FIELD_MANAGER, FINALIZER, LABEL_FUNCTION, LABEL_ROLE, ROLE_RUNTIME, functionIdOf, ownedNames, ownerReference, splitKey } from './names.ts';
import { desiredStatus, statusChanged } from './status.ts';
import type { ReadyInput, StatusInput } from './status.ts';
import { autoscaleDecision, autoscalerStatus, observedConcurrency, scalingOf, staleConcurrencyKeys } from './autoscale.ts';
import type { AutoscaleDecision, ObservedConcurrency } from './autoscale.ts';
import { transitionEvents } from './events.ts';
import type { EventSink } from './events.ts';
import type { FunctionResource } from '@fnhost/core/function-resource.ts';
import { LABEL_REPLAY_OF, isThrowaway } from '@fnhost/core/replay-throwaway.ts';
import { ANNOTATION_ID_HOME } from '@fnhost/core/function-id-home.ts';
import type { KubeObject, Settings } from './types.ts';
import { idleDecision, idleSecondsOf } from './idle.ts';
import type { IdleDecision } from './idle.ts';
import { checkSchedule, checkSpec, checkThrowaway } from './validate.ts';
import { namespaceProblem } from './namespaces.ts';
import { LOAD_FAILED, loadFailureOf } from './load-failure.ts';
import { codeLabel, codeMissing, codeMissingRecheckMs, type CodePresence } from './code-ref.ts';
import { configHash } from './builders/index.ts';
import type { FunctionIdHomes } from './identities.ts';
import type { CodeChecker, SpecProblem } from './validate.ts';
import { PoolKeeper, SPECIALIZED_RECHECK_MS } from './pool-keeper.ts';

// reconcile(namespace/name) reads the Function as it is now and converges the
// cluster on it: it never depends on what event caused the call, so calling
// it twice, or after a crash half-way, is always safe (level-triggered).

export interface ReconcileResult {
  /** Look again after this long (a rollout in progress); undefined: wait for an event. */
  requeueAfterMs?: number;
  /** What the reconcile concluded, for logs and tests. */
  outcome: string;
}

export interface ReconcilerDeps {
  client: KubeClient;
  settings: Settings;
  codeChecker: CodeChecker;
  logCleaner: LogCleaner;
  clock: Clock;
  log: Logger;
  /** Kubernetes Events on Functions (events.ts). */
  events: EventSink;
  /** Whether a namespace uploaded a digest (the code store; code-ref.ts); without it, every spec.codeRef is CodeMissing. */
  codePresence?: CodePresence;
  /** Who may hold each functionId: its stored home and the Functions watch (identities.ts); without it, every Function holds its id. */
  homes?: FunctionIdHomes;
}

/** How soon a Function refused for another's functionId looks again (the owner's deletion also requeues it). */
const ID_TAKEN_RECHECK_MS = 60_000;

/**
 * How soon to look again at a Function that is not ready. Deployment status
 * changes arrive as events anyway; this catches pod-level problems (an image
 * that cannot be pulled) and slows down for Functions stuck for long:
 * 10 s at first, a quarter of the time spent not ready later, at most 2 min.
 */
export function progressRecheckMs(notReadyForMs: number): number {
  return Math.min(120_000, Math.max(10_000, Math.floor(notReadyForMs / 4)));
}

/** A function falls idle at an exact instant; the recheck lands just after it. */
export const IDLE_RECHECK_SLACK_MS = 1_000;

export function invokeUrl(settings: Settings, functionId: string): string {
  return `${settings.publicUrl}/invoke/${functionId}`;
}

export class Reconciler {
  readonly #d: ReconcilerDeps;
  readonly #pool: PoolKeeper;
  constructor(deps: ReconcilerDeps) {
    this.#d = deps;
    this.#pool = new PoolKeeper({ client: deps.client, settings: deps.settings, log: deps.log, clock: deps.clock });
  }

  async reconcile(key: string): Promise<ReconcileResult> {
    const { namespace, name } = splitKey(key);
    const { client } = this.#d;
    let fn = await client.getOrNull<FunctionResource>(paths.function(namespace, name));
    if (!fn) return { outcome: 'gone' };

    if (fn.metadata.deletionTimestamp) return this.#finalize(fn);

    // Before anything is made for it (its finalizer included: a refused Function deletes at once).
    const refused = await namespaceProblem(this.#d.settings.functionNamespaces, namespace, async (ns) => {
      const found = await client.getOrNull<{ metadata?: { labels?: Record<string, string> } }>(paths.namespace(ns));
      return found === null ? undefined : (found.metadata?.labels ?? {});
    });
    if (refused) {
      await this.#writeStatus(fn, functionIdOf(fn), { ready: { status: 'False', reason: refused.reason, message: refused.message } }, true);
      return { outcome: `invalid:${refused.reason}` };
    }

    // Before the finalizer too: a Function refused for another's id must never clean that id's logs.
    const taken = await this.#idProblem(fn);
    if (taken) {
      // It may have held the id before (the id moved away by a grant): its pods and token go.
      await this.#disarm(fn);
      await this.#writeStatus(fn, functionIdOf(fn), { ready: { status: 'False', reason: taken.reason, message: taken.message } }, true);
      return { outcome: `invalid:${taken.reason}`, requeueAfterMs: ID_TAKEN_RECHECK_MS };
    }

    // A throwaway version (replay --code) shares its original's functionId: the logs under it are the original's, never cleaned with it.
    if (!isThrowaway(fn) && !(fn.metadata.finalizers ?? []).includes(FINALIZER)) {
      // resourceVersion in the patch makes it conditional: a concurrent change gives 409 and a retry.
      fn = await client.mergePatch<FunctionResource>(paths.function(namespace, name), {
        metadata: { finalizers: [...(fn.metadata.finalizers ?? []), FINALIZER], resourceVersion: fn.metadata.resourceVersion },
      });
    }

    const functionId = functionIdOf(fn);
    const identity = this.#identityProblem(fn, functionId);
    if (identity) {
      // The recorded id stays in status: adopting the new one is the user's decision.
      await this.#writeStatus(fn, fn.status!.functionId!, { ready: { status: 'False', reason: identity.reason, message: identity.message } }, true);
      return { outcome: `invalid:${identity.reason}` };
    }
    const problem =
      checkSpec(fn, this.#d.settings) ?? (await this.#throwawayProblem(fn)) ?? (fn.spec.codeRef == null ? await this.#d.codeChecker(fn.spec.code ?? '') : null);
    if (problem) {
      // The last good objects keep running; nothing is retried until the spec changes.
      await this.#writeStatus(fn, functionId, { ready: { status: 'False', reason: problem.reason, message: problem.message } }, true);
      return { outcome: `invalid:${problem.reason}` };
    }
    // Referenced code its namespace has not uploaded: nothing started for it (code-ref.ts), and looked at again on a backoff.
    const missing = await codeMissing(fn, this.#d.codePresence);
    if (missing) {
      const since = await this.#writeStatus(fn, functionId, { ready: { status: 'False', reason: missing.reason, message: missing.message } }, true);
      return { outcome: `invalid:${missing.reason}`, requeueAfterMs: codeMissingRecheckMs(this.#d.clock.now() - since) };
    }
    // A schedule the operator cannot run withholds only the CronJob: the function serves HTTP.
    const scheduleProblem = checkSchedule(fn);

    const now = this.#d.clock.now();
    const idle = idleDecision(fn, now);
    const scaling = this.#autoscale(fn, now);
    let ready: ReadyInput;
    let poolPodsLeft = false;
    try {
      ({ ready, poolPodsLeft } = await this.#applyChildren(fn, idle, scaling?.decision.replicas, scheduleProblem !== null));
    } catch (err) {
      // A refusal by the API server is shown on the Function, not only in the operator's log.
      if (!(err instanceof KubeApiError) || (err.statusCode !== 422 && err.statusCode !== 403)) throw err;
      const reason = err.statusCode === 422 ? 'Rejected' : 'Forbidden';
      await this.#writeStatus(fn, functionId, { ready: { status: 'False', reason, message: `the API server refused an owned object: ${err.message}` } }, err.statusCode === 422);
      // 422: the spec itself is refused; nothing changes until the spec does. 403 (a quota, a terminating namespace, RBAC): retried with backoff.
      if (err.statusCode === 422) return { outcome: 'invalid:Rejected' };
      throw err;
    }
    const since = await this.#writeStatus(
      fn,
      functionId,
      {
        ready,
        scheduled: scheduleProblem === null ? null : { status: 'False', reason: scheduleProblem.reason, message: `${scheduleProblem.message}; the CronJob is withheld until the schedule is fixed (HTTP calls are served)` },
        autoscaler: scaling === undefined ? null : autoscalerStatus(scaling.decision, scaling.observed),
        dropConcurrency: staleConcurrencyKeys(fn.status?.concurrency, now),
        // CodeLoaded is there only while the current code is known not to load (Ready says the same, and why).
        codeLoaded: ready.reason === LOAD_FAILED ? { status: 'False', reason: LOAD_FAILED, message: ready.message } : null,
        dropLoadFailure: ready.status === 'True',
      },
      false,
    );
    // Nothing else happens when a function falls idle, a panic ends or a gateway's report turns stale: look again then.
    const rechecks = [
      idle.idleInMs === undefined ? undefined : idle.idleInMs + IDLE_RECHECK_SLACK_MS,
      scaling?.decision.recheckAtMs === undefined || idle.idle ? undefined : Math.max(0, scaling.decision.recheckAtMs - now) + IDLE_RECHECK_SLACK_MS,
      // A pod specialized from the pool for this function goes once its Deployment has a ready pod or it idles.
      poolPodsLeft ? SPECIALIZED_RECHECK_MS : undefined,
    ].filter((t): t is number => t !== undefined);
    const recheck = rechecks.length === 0 ? undefined : Math.min(...rechecks);
    if (ready.status === 'True') return { outcome: `ready:${ready.reason}`, requeueAfterMs: recheck };
    const progress = progressRecheckMs(this.#d.clock.now() - since);
    return { outcome: `waiting:${ready.reason}`, requeueAfterMs: recheck === undefined ? progress : Math.min(progress, recheck) };
  }

  /** spec.scaling's decision from the gateways' reports (autoscale.ts); undefined without spec.scaling. */
  #autoscale(fn: FunctionResource, now: number): { decision: AutoscaleDecision; observed: ObservedConcurrency } | undefined {
    const scaling = scalingOf(fn);
    if (scaling === undefined) return undefined;
    const observed = observedConcurrency(fn.status?.concurrency, now);
    return { decision: autoscaleDecision({ scaling, observed, previous: fn.status?.autoscaler, nowMs: now }), observed };
  }

  /**
   * Whether this Function may hold its id (identities.ts: the id's stored home, then the oldest
   * claimant of that namespace); recording the home on a first claim, moving it on a granted move.
   * A refused Function gets no pods, no runtime token and no finalizer (which would clean the id's logs).
   */
  async #idProblem(fn: FunctionResource): Promise<SpecProblem | null> {
    if (isThrowaway(fn) || this.#d.homes === undefined) return null;
    const outcome = await this.#d.homes.hold(fn);
    if (!outcome.held) return outcome.problem;
    const key = `${fn.metadata.namespace}/${fn.metadata.name}`;
    if (outcome.recorded) this.#d.log.info('functionId home recorded', { function: key, functionId: outcome.recorded.function_id, how: outcome.recorded.how });
    if (outcome.moved) {
      this.#d.log.info('functionId home moved', { function: key, functionId: outcome.moved.function_id, how: outcome.moved.how });
      this.#d.events.record(fn, { reason: 'FunctionIdMoved', type: 'Normal', action: 'Move', note: `functionId ${outcome.moved.function_id} moved to namespace ${fn.metadata.namespace} (${outcome.moved.how === 'moved' ? `granted by ${ANNOTATION_ID_HOME}` : 'its derived id, taken back from an ungranted claim'})` });
    }
    return null;
  }

  /**
   * A Function refused its id that has objects (it held the id until a granted move took it):
   * its pods would otherwise keep the id's runtime token, hence the id's KV. Without delete rights
   * on them (least privilege: docs/operator.md, RBAC), the Deployment goes to zero replicas, the
   * Secret's tokens are emptied and the CronJob (which the operator may delete) goes; the next
   * reconcile that gives it an id again applies them as usual.
   */
  async #disarm(fn: FunctionResource): Promise<void> {
    const ns = fn.metadata.namespace!;
    const names = ownedNames(fn.metadata.name);
    const ours = async (apiVersion: string, kind: string, name: string) => {
      const path = paths.object(apiVersion, kind, ns, name);
      const existing = await this.#d.client.getOrNull<KubeObject & { spec?: { replicas?: number }; data?: Record<string, string> }>(path);
      return existing && (existing.metadata.ownerReferences ?? []).some((r) => r.uid === fn.metadata.uid) ? { path, existing } : null;
    };
    const done: string[] = [];
    const deployment = await ours('apps/v1', 'Deployment', names.deployment);
    if (deployment && deployment.existing.spec?.replicas !== 0) {
      await this.#d.client.mergePatch(deployment.path, { spec: { replicas: 0 } });
      done.push('Deployment scaled to 0');
    }
    const secret = await ours('v1', 'Secret', names.secret);
    if (secret && Object.keys(secret.existing.data ?? {}).length > 0) {
      await this.#d.client.mergePatch(secret.path, { data: null });
      done.push('Secret emptied');
    }
    const cronJob = await ours('batch/v1', 'CronJob', names.cronJob);
    if (cronJob) {
      await this.#d.client.delete(cronJob.path, cronJob.existing.metadata.uid);
      done.push('CronJob deleted');
    }
    if (done.length > 0) this.#d.log.info('the Function no longer holds its functionId: its runtime disarmed', { function: `${ns}/${fn.metadata.name}`, done });
  }

  /** A throwaway's original, read only for a throwaway (checkThrowaway). */
  async #throwawayProblem(fn: FunctionResource): Promise<SpecProblem | null> {
    if (!isThrowaway(fn)) return null;
    const of = fn.metadata.labels?.[LABEL_REPLAY_OF];
    const original = of ? await this.#d.client.getOrNull<FunctionResource>(paths.function(fn.metadata.namespace!, of)) : null;
    const problem = checkThrowaway(fn, original);
    if (problem !== null || this.#d.homes === undefined) return problem;
    // It runs with its original's runtime token: only where the original holds that id.
    if (await this.#d.homes.holds(original!)) return null;
    return { reason: 'InvalidThrowaway', message: `a throwaway Function runs as its original, and ${of} does not hold functionId ${functionIdOf(fn)} (its home is another namespace, or another Function of this one holds it)` };
  }

  #identityProblem(fn: FunctionResource, functionId: string): SpecProblem | null {
    const recorded = fn.status?.functionId;
    if (!recorded || recorded === functionId) return null;
    return {
      reason: 'FunctionIdChanged',
      message:
        `this Function was recorded as functionId ${recorded} but now resolves to ${functionId} (was it restored into another namespace?). ` +
        `Nothing was changed, so the logs of ${recorded} are not orphaned: set spec.functionId: ${recorded} on a new Function to keep that identity, ` +
        `or clear status.functionId (kubectl patch --subresource=status) to adopt the new one.`,
    };
  }

  async #finalize(fn: FunctionResource): Promise<ReconcileResult> {
    const finalizers = fn.metadata.finalizers ?? [];
    if (!finalizers.includes(FINALIZER)) return { outcome: 'deleting' };
    const functionId = fn.status?.functionId ?? functionIdOf(fn);
    const owner = { namespace: fn.metadata.namespace!, name: fn.metadata.name };
    // A throwaway that got the finalizer anyway (added by hand): its functionId's logs are its original's;
    // and a Function whose id another owns (it got a finalizer before the watch knew the owner) cleans nothing of it.
    if (!isThrowaway(fn) && (this.#d.homes === undefined || (await this.#d.homes.holds(fn)))) {
      await this.#d.logCleaner.deleteFunctionLogs(functionId, owner);
      this.#d.log.info('execution logs cleaned', { function: `${owner.namespace}/${owner.name}`, functionId, cleaner: this.#d.logCleaner.name });
    }
    await this.#d.client.mergePatch(paths.function(owner.namespace, owner.name), {
      metadata: { finalizers: finalizers.filter((f) => f !== FINALIZER), resourceVersion: fn.metadata.resourceVersion },
    });
    // Owned objects go with the Function through their owner references (garbage collector).
    return { outcome: 'finalized' };
  }

  async #apply(obj: KubeObject): Promise<any> {
    return this.#d.client.apply(paths.object(obj.apiVersion, obj.kind, obj.metadata.namespace!, obj.metadata.name), obj, FIELD_MANAGER);
  }

  async #applyChildren(fn: FunctionResource, idle: IdleDecision, replicas: number | undefined, withholdCronJob: boolean): Promise<{ ready: ReadyInput; poolPodsLeft: boolean }> {
    const { settings, client } = this.#d;
    const ns = fn.metadata.namespace!;
    // First: no pod of this Function may run before its namespace's policy exists (pool pods included).
    if (settings.networkPolicy !== undefined) await this.#ensureNamespacePolicy(fn, settings.networkPolicy);
    await this.#apply(secretFor(fn, settings));
    await this.#apply(configMapFor(fn));
    const deployment = await this.#apply(deploymentFor(fn, settings, { idle: idle.idle, replicas }));
    await this.#apply(serviceFor(fn));
    const cronJob = cronJobFor(fn, settings);
    if (withholdCronJob) {
      // An invalid schedule (an unknown time zone): the last good CronJob, if any, is left as it is.
    } else if (cronJob) {
      await this.#apply(cronJob);
    } else {
      const name = ownedNames(fn.metadata.name).cronJob;
      const existing = await client.getOrNull<KubeObject>(paths.object('batch/v1', 'CronJob', ns, name));
      if (existing && (existing.metadata.ownerReferences ?? []).some((r) => r.uid === fn.metadata.uid)) {
        await client.delete(paths.object('batch/v1', 'CronJob', ns, name), existing.metadata.uid);
        this.#d.log.info('cronjob removed: the Function has no schedule', { function: `${ns}/${fn.metadata.name}`, cronJob: name });
      }
    }
    const poolPodsLeft = await this.#keepPool(fn, deployment);
    return { ready: await this.#readiness(fn, deployment, idle), poolPodsLeft };
  }

  /**
   * The namespace's pool and this function's specialized pods (pool-keeper.ts), after the
   * function's own objects: a pool that cannot be kept (a quota, RBAC) never stops the function
   * from being served by its Deployment; it is tried again at the next reconcile.
   */
  async #keepPool(fn: FunctionResource, deployment: any): Promise<boolean> {
    if (!this.#pool.enabled) return false;
    try {
      await this.#pool.ensure(fn);
      return await this.#pool.sweep(fn, deployment);
    } catch (err) {
      this.#d.log.warn('keeping the pool failed; the function is served by its Deployment', { function: `${fn.metadata.namespace}/${fn.metadata.name}`, error: (err as Error).message });
      return true;
    }
  }

  /**
   * The namespace's function NetworkPolicy, with this Function among its owners.
   * Its owners are every Function of the namespace (none of them its controller), so
   * the garbage collector deletes it with the last; the reference is added by a
   * strategic merge (ownerReferences merge by uid), which keeps the others'.
   */
  async #ensureNamespacePolicy(fn: FunctionResource, policySettings: NonNullable<Settings['networkPolicy']>): Promise<void> {
    const policy = functionsNetworkPolicyFor(fn.metadata.namespace!, policySettings);
    const applied = await this.#apply(policy);
    if ((applied?.metadata?.ownerReferences ?? []).some((r: { uid?: string }) => r.uid === fn.metadata.uid)) return;
    const { apiVersion, kind, name, uid } = ownerReference(fn);
    await this.#d.client.strategicMergePatch(paths.object(policy.apiVersion, policy.kind, policy.metadata.namespace!, policy.metadata.name), {
      metadata: { ownerReferences: [{ apiVersion, kind, name, uid }] },
    });
  }

  async #readiness(fn: FunctionResource, deployment: any, idle: IdleDecision): Promise<ReadyInput> {
    const active = fn.spec.active ?? true;
    if (!active) {
      return { status: 'True', reason: 'Inactive', message: 'the function is inactive: scaled to zero, its schedule suspended; invocations are refused' };
    }
    const want: number = deployment?.spec?.replicas ?? 0;
    const st = deployment?.status ?? {};
    if (idle.idle) {
      return {
        status: 'True',
        reason: 'Idle',
        message: `no invocation since ${new Date(idle.sinceMs!).toISOString().replace(/\.\d{3}Z$/, 'Z')} (${fn.spec.scaleToZero ? `spec.scaleToZero.idleSeconds ${idleSecondsOf(fn)}` : `spec.scaling.minReplicas 0, idle after ${idleSecondsOf(fn)} s`}): scaled to zero; the next invocation scales it up`,
      };
    }
    if (want === 0) return { status: 'True', reason: 'ScaledToZero', message: 'spec.replicas is 0: no runtime pod is running' };
    const replicaFailure = (st.conditions ?? []).find((c: any) => c.type === 'ReplicaFailure' && c.status === 'True');
    if (replicaFailure) return { status: 'False', reason: 'ReplicaFailure', message: `pods cannot be created: ${replicaFailure.message}` };
    const rolledOut =
      (st.observedGeneration ?? 0) >= (deployment?.metadata?.generation ?? 1) &&
      (st.updatedReplicas ?? 0) >= want &&
      (st.availableReplicas ?? 0) >= want &&
      (st.replicas ?? 0) <= want;
    if (rolledOut) {
      return { status: 'True', reason: 'Available', message: `${st.availableReplicas} of ${want} runtime pods ready at ${serviceUrl(fn)}` };
    }
    return (await this.#podProblem(fn)) ?? { status: 'False', reason: 'Progressing', message: `rolling out: ${st.updatedReplicas ?? 0} of ${want} runtime pods updated, ${st.availableReplicas ?? 0} available` };
  }

  /** The most telling reason a runtime pod is not ready: a missing image, a crash, a code load error. */
  async #podProblem(fn: FunctionResource): Promise<ReadyInput | null> {
    const ns = fn.metadata.namespace!;
    const pods = await this.#d.client.request<{ items: any[] }>('GET', paths.pods(ns), { query: { labelSelector: `${LABEL_FUNCTION}=${fn.metadata.name},${LABEL_ROLE}=${ROLE_RUNTIME}` } });
    // A pod of the current code that the gateway found failing to load (status.loadFailure): no wait can help.
    const loadFailed = loadFailureOf(fn, pods.items ?? [], configHash(fn, this.#d.settings));
    if (loadFailed !== null) return loadFailed;
    for (const pod of pods.items ?? []) {
      for (const cs of pod.status?.containerStatuses ?? []) {
        const waiting = cs.state?.waiting;
        if (waiting && /ImagePull|ErrImage|InvalidImageName/.test(waiting.reason ?? '')) {
          return { status: 'False', reason: 'ImageUnavailable', message: `runtime image ${cs.image} is not available: ${waiting.reason}${waiting.message ? `: ${waiting.message}` : ''}` };
        }
        if (waiting?.reason === 'CrashLoopBackOff') {
          const last = cs.lastState?.terminated;
          return { status: 'False', reason: 'RuntimeCrashing', message: `the runtime keeps exiting${last ? ` (${last.reason}, exit code ${last.exitCode})` : ''}` };
        }
        if (cs.state?.running && !cs.ready) {
          return { status: 'False', reason: 'RuntimeNotReady', message: 'the runtime is running but /healthz does not answer 200: the code may fail to load (see kubectl logs)' };
        }
      }
      const scheduled = (pod.status?.conditions ?? []).find((c: any) => c.type === 'PodScheduled');
      if (scheduled?.status === 'False') return { status: 'False', reason: 'Unschedulable', message: `no node can run the pod: ${scheduled.message ?? scheduled.reason}` };
    }
    return null;
  }

  /** Writes status when it changed, and records the Events the change tells; returns when the Ready condition last changed (ms). */
  async #writeStatus(fn: FunctionResource, functionId: string, input: Omit<StatusInput, 'functionId' | 'url' | 'generation'>, invalid: boolean): Promise<number> {
    const generation = fn.metadata.generation ?? 0;
    const next = desiredStatus(fn.status, { functionId, url: invokeUrl(this.#d.settings, functionId), generation, code: codeLabel(fn), ...input }, new Date(this.#d.clock.now()));
    const since = Date.parse(next.conditions![0]!.lastTransitionTime);
    if (!statusChanged(fn.status, next)) return since;
    await this.#d.client.mergePatch(paths.functionStatus(fn.metadata.namespace!, fn.metadata.name), {
      metadata: { resourceVersion: fn.metadata.resourceVersion },
      status: next,
    });
    // Only once the write held: a 409 retries the reconcile, which would tell it again.
    for (const event of transitionEvents(fn.status, next, generation, invalid)) this.#d.events.record(fn, event);
    return since;
  }
}
