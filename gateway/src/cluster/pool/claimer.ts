import { request } from 'node:http';
import { poolKeyOf } from '@fnhost/core/cluster-pool.ts';
import type { Clock } from '@fnhost/core/clock.ts';
import type { FunctionResource } from '@fnhost/core/function-resource.ts';
import { functionIdOf } from '@fnhost/core/function-identity.ts';
import { KubeApiError, paths, type KubeClient } from '../kube.ts';
import { GENERIC_POD_SELECTOR, type GenericPodIndex } from './generic-pods.ts';
import { claimOrder, claimPatch, claimable, fallbackReason, podOrigin, specializationBody, type FallbackReason, type PoolPod } from './claim.ts';

// A cold call served from the pool (issue 32): list the namespace's generic pool pods, claim one
// with a conditional label patch (exactly one gateway replica wins a pod; a loser gets 409 and
// tries the next), specialize it over the pod network with the namespace's pool key, and wait for
// its module to load. The held call then goes to it (executor.ts). The runtime's own 409 on a
// second specialization stays behind the claim as a second guard.

export const RUNTIME_PORT = 8080;
/** The specialization request's bound (the runtime answers once it has parsed the body and started its worker). */
export const SPECIALIZE_TIMEOUT_MS = 5_000;
/** How long the module may take to load before the call takes the Deployment path (whose pod loads it too). */
export const LOAD_TIMEOUT_MS = 10_000;
/** Most pods one claim tries (each lost to another replica costs one patch). */
export const MAX_CLAIM_ATTEMPTS = 5;

/**
 * The phases of a start from the pool, timed (fnhost_cluster_pool_start_seconds{phase}): the
 * list of generic pods, the claim patch, the specialization request, the module load in the pod.
 * What is left of a cold call's time is the call itself, proxied to the pod.
 */
export const POOL_PHASES = ['list', 'claim', 'specialize', 'load'] as const;
export type PoolPhase = (typeof POOL_PHASES)[number];

/** Seconds spent in each phase over all starts from the pool, and how many times each phase ran. */
export class PoolPhaseTimes {
  readonly seconds = new Map<PoolPhase, number>(POOL_PHASES.map((p) => [p, 0]));
  readonly count = new Map<PoolPhase, number>(POOL_PHASES.map((p) => [p, 0]));

  add(phase: PoolPhase, ms: number): void {
    this.seconds.set(phase, this.seconds.get(phase)! + ms / 1000);
    this.count.set(phase, this.count.get(phase)! + 1);
  }
}

/** The phase times as a Prometheus summary without quantiles (a rate of _sum over _count is the mean). */
export function poolPhaseMetrics(times: PoolPhaseTimes): string {
  let out =
    '# HELP fnhost_cluster_pool_start_seconds Time in each phase of a cold start from the pool: list (the generic pods), claim (the conditional patch), specialize (the request to the pod), load (its module loading).\n' +
    '# TYPE fnhost_cluster_pool_start_seconds summary\n';
  for (const phase of POOL_PHASES) {
    out += `fnhost_cluster_pool_start_seconds_sum{phase="${phase}"} ${times.seconds.get(phase)!.toFixed(6)}\n`;
    out += `fnhost_cluster_pool_start_seconds_count{phase="${phase}"} ${times.count.get(phase)}\n`;
  }
  return out;
}

/** The load a specialization's answer reports (runtime-image main.ts loadOutcome), or undefined when it says nothing of it. */
export function loadOutcomeOf(body: string): { status: string; ms: number; kind?: string; message?: string } | undefined {
  try {
    const load = (JSON.parse(body) as { load?: unknown }).load as { status?: unknown; ms?: unknown; kind?: unknown; message?: unknown } | undefined;
    if (load === undefined || load === null || typeof load.status !== 'string' || typeof load.ms !== 'number' || !Number.isFinite(load.ms) || load.ms < 0) return undefined;
    return { status: load.status, ms: load.ms, kind: typeof load.kind === 'string' ? load.kind : undefined, message: typeof load.message === 'string' ? load.message : undefined };
  } catch {
    return undefined;
  }
}

export type PoolOutcome = { origin: string; pod: string } | { fallback: FallbackReason; detail?: string };

/** One HTTP exchange with a pool pod: status and (bounded) body text. */
export type PodRequest = (origin: string, path: string, init: { method: 'GET' | 'POST'; headers: Record<string, string>; body?: string; timeoutMs: number }) => Promise<{ status: number; body: string }>;

export const podRequest: PodRequest = (origin, path, init) =>
  new Promise((resolve, reject) => {
    const req = request(`${origin}${path}`, { method: init.method, headers: init.headers, agent: false, signal: AbortSignal.timeout(init.timeoutMs) }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        if (body.length < 4096) body += c;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(init.body);
  });

export interface PoolClaimerOptions {
  client: KubeClient;
  tokenKey: string;
  /** The function's runtime token (derived, as the operator writes it into the function's Secret). */
  runtimeToken: (functionId: string) => string;
  clock: Clock;
  /** The generic pods a watch keeps (generic-pods.ts); unset: every claim lists them. */
  index?: GenericPodIndex;
  send?: PodRequest;
  random?: () => number;
}

export class PoolClaimer {
  readonly #o: PoolClaimerOptions;
  /** Claims won and lost to another claimer (409), specializations that failed. */
  claims = 0;
  conflicts = 0;
  readonly phases = new PoolPhaseTimes();

  constructor(options: PoolClaimerOptions) {
    this.#o = options;
  }

  /** The namespace's generic pods that can take a claim now. */
  async generic(namespace: string): Promise<PoolPod[]> {
    const started = this.#o.clock.now();
    const list = await this.#o.client.request<{ items?: PoolPod[] }>('GET', paths.pods(namespace), {
      query: { labelSelector: GENERIC_POD_SELECTOR },
      timeoutMs: 5_000,
    });
    this.phases.add('list', this.#o.clock.now() - started);
    return (list.items ?? []).filter(claimable);
  }

  /**
   * Claims one generic pod for `fn` (the conditional patch) and returns it, or why not. Only the
   * Kubernetes side: specialize() makes it the function's runtime.
   */
  async claimPod(fn: FunctionResource): Promise<{ pod: PoolPod } | { fallback: FallbackReason; detail?: string }> {
    const ns = fn.metadata.namespace ?? 'default';
    const tried = new Set<string>();
    // The watched index first (no API round trip); what it offers may be stale, so a claim that
    // loses every pod it knew lists afresh and tries the pods it had not offered.
    const known = this.#o.index?.claimable(ns);
    if (known !== undefined && known.length > 0) {
      const why = fallbackReason(fn, known[0]!);
      if (why !== undefined) return { fallback: why };
      const won = await this.#claimOne(fn, ns, known, tried);
      if (won !== undefined) return won;
    }
    const pods = (await this.generic(ns)).filter((p) => !tried.has(p.metadata.name));
    if (pods.length === 0) return { fallback: tried.size > 0 ? 'claim_lost' : 'pool_empty' };
    const why = fallbackReason(fn, pods[0]!);
    if (why !== undefined) return { fallback: why };
    return (await this.#claimOne(fn, ns, pods, tried)) ?? { fallback: 'claim_lost' };
  }

  /** Tries the pods in a random order (at most MAX_CLAIM_ATTEMPTS in all); the pod won, or undefined. */
  async #claimOne(fn: FunctionResource, ns: string, pods: PoolPod[], tried: Set<string>): Promise<{ pod: PoolPod } | undefined> {
    for (const pod of claimOrder(pods, this.#o.random)) {
      if (tried.size >= MAX_CLAIM_ATTEMPTS) return undefined;
      tried.add(pod.metadata.name);
      const started = this.#o.clock.now();
      try {
        const claimed = await this.#o.client.request<PoolPod>('PATCH', `${paths.pods(ns)}/${pod.metadata.name}`, {
          body: claimPatch(pod, fn, this.#o.clock.now()),
          contentType: 'application/merge-patch+json',
          query: { fieldManager: 'fnhost-gateway' },
          timeoutMs: 5_000,
        });
        this.claims++;
        this.phases.add('claim', this.#o.clock.now() - started);
        this.#o.index?.forget(ns, pod.metadata.name);
        return { pod: { ...claimed, status: claimed.status ?? pod.status } };
      } catch (err) {
        // 409: another replica claimed it first (or it changed since it was read); 404: it is gone. Try the next.
        if (err instanceof KubeApiError && (err.statusCode === 409 || err.statusCode === 404)) {
          this.conflicts++;
          continue;
        }
        throw err;
      }
    }
    return undefined;
  }

  /** Claims, specializes and waits for the module to load: the origin to send the call to, or why not. */
  async serve(fn: FunctionResource): Promise<PoolOutcome> {
    const claimed = await this.claimPod(fn);
    if ('fallback' in claimed) return claimed;
    const origin = podOrigin(claimed.pod.status!.podIP!, RUNTIME_PORT);
    return this.specialize(fn, claimed.pod.metadata.name, origin);
  }

  async specialize(fn: FunctionResource, pod: string, origin: string): Promise<PoolOutcome> {
    const send = this.#o.send ?? podRequest;
    const ns = fn.metadata.namespace ?? 'default';
    const body = JSON.stringify(specializationBody(fn, this.#o.runtimeToken(functionIdOf(fn))));
    let started = this.#o.clock.now();
    try {
      // With the start's wait header the runtime answers once the module has loaded (or failed to),
      // saying how it went: one exchange. A runtime image from before that answer says nothing of
      // the load, and the /healthz wait follows as it did.
      const answer = await send(origin, '/_fnhost/specialize', {
        method: 'POST',
        headers: { 'x-fnhost-specialize-token': poolKeyOf(this.#o.tokenKey, ns), 'x-fnhost-wait-load': '1', 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) },
        body,
        timeoutMs: SPECIALIZE_TIMEOUT_MS + LOAD_TIMEOUT_MS,
      });
      if (answer.status !== 200) return { fallback: 'specialize_failed', detail: `the pool pod ${pod} answered ${answer.status}: ${answer.body.slice(0, 200)}` };
      const load = loadOutcomeOf(answer.body);
      if (load !== undefined) {
        const total = this.#o.clock.now() - started;
        this.phases.add('specialize', Math.max(0, total - load.ms));
        this.phases.add('load', Math.min(total, load.ms));
        if (load.status !== 'ok') return { fallback: 'load_failed', detail: `the pool pod ${pod} could not load the code: ${JSON.stringify({ kind: load.kind, message: load.message }).slice(0, 300)}` };
        return { origin, pod };
      }
      this.phases.add('specialize', this.#o.clock.now() - started);
      started = this.#o.clock.now();
      // Answered once the module has loaded or failed to (the start's own header).
      const health = await send(origin, '/healthz', { method: 'GET', headers: { 'x-fnhost-wait-load': '1' }, timeoutMs: LOAD_TIMEOUT_MS });
      if (health.status !== 200) return { fallback: 'load_failed', detail: `the pool pod ${pod} could not load the code: ${health.body.slice(0, 300)}` };
      this.phases.add('load', this.#o.clock.now() - started);
      return { origin, pod };
    } catch (err) {
      return { fallback: 'specialize_failed', detail: `the pool pod ${pod}: ${(err as Error).message}` };
    }
  }
}
