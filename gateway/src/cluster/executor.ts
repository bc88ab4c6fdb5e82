import { FnhostError, type Executor, type FunctionRecord, type RecycleReason, type Upstream } from '@fnhost/core';
import type { Clock } from '@fnhost/core/clock.ts';
import type { EndpointIndex } from './endpoints.ts';
import { keyOf, serviceNameOf } from './resource.ts';

// core's Executor seam on Kubernetes: the upstream of a call is a ready pod of
// the function, picked round robin from its EndpointSlices (the proxy keeps a
// keep-alive pool per pod). Pods are the operator's business: sync() does
// nothing here, and the gateway never creates or deletes anything.
//
// A function with no ready pod (scaled to zero for idleness, just created, or
// rolling out) gets its call held: a bounded number of calls wait, each for a
// bounded time, while the executor asks for the function to be woken (a
// status write the operator reacts to); they go on as soon as a pod is ready.
// Past the bounds the caller gets 503 with a message saying which bound.
//
// "Ready" comes from two sources, whichever is first. The slice saying so
// takes the kubelet's readiness probe (a period of a second) plus the
// EndpointSlice update and the watch; measured, a pod's runtime answers
// /healthz 200 about a second before that. So, as Knative's activator does,
// while calls of a function are held the executor probes the function's
// *starting* pods itself (slice endpoints with an address, ready: false, not
// terminating): GET <pod>/healthz every PROBE_INTERVAL_MS, and the held calls
// go to the first pod that answers 200. One prober per function, shared by all
// its held calls, living only while at least one is held.

export const DEFAULT_HOLD_MS = 30_000;
export const DEFAULT_MAX_HELD = 1000;
export const DEFAULT_MAX_HELD_PER_FUNCTION = 200;

/** How often a starting pod of a function with held calls is probed (GET /healthz). */
export const PROBE_INTERVAL_MS = 25;
/** A probe without an answer after this long fails (and is aborted); the runtime answers /healthz in a millisecond. */
export const PROBE_TIMEOUT_MS = 250;
/** At most this many starting pods of one function are probed at a time (one probe in flight per pod). */
export const MAX_PROBES_PER_FUNCTION = 4;
/** At most this many probes start per PROBE_INTERVAL_MS in all: many functions waking at once take turns. */
export const MAX_PROBES_PER_INTERVAL = 64;
/**
 * How long a pod that answered the gateway's probe also takes new calls of its
 * function while its slice does not say it is ready yet (the slice normally
 * does about a second later). Dropped earlier as soon as the function has a
 * ready pod, or the slice drops the pod or marks it terminating.
 */
export const PROBED_POD_TTL_MS = 5000;
/**
 * How long a pod whose runtime port refused a connection is passed over while
 * its slice still lists it as ready. The slice says a stopping pod is
 * terminating a moment after its runtime stops listening (an endpoint update
 * and a watch away); until then calls go to the function's other pods, or are
 * held for a new one. Forgiven earlier when the slice drops it from the ready
 * ones; after the TTL it is tried again (a container restarted in place).
 */
export const REFUSED_ORIGIN_TTL_MS = 5000;

/**
 * GET `<origin>/healthz` of a runtime pod: true only on 200. The runtime
 * answers 503 while its function module loads (`starting`) or failed to load
 * (`error`), and a generic runtime not specialized yet answers 503 too. The
 * executor aborts `signal` after PROBE_TIMEOUT_MS.
 */
export type HealthProbe = (origin: string, signal: AbortSignal) => Promise<boolean | typeof LOAD_ERROR>;
/** A probe's answer when the runtime says its function module failed to load (503 `{"status":"error","error":"load"}`). */
export const LOAD_ERROR = 'load_error';
/**
 * How long a cold call's wake of the function's own pod may wait for its claim from the pool: a
 * start from the pool takes a few hundred ms; a claim still running after a second is failing or
 * slow, and the Deployment path should not wait on it longer.
 */
export const POOL_WAKE_DELAY_MS = 1000;

export class FunctionUnavailableError extends FnhostError {
  constructor(message: string) {
    super('function_unavailable', 503, message, { expose: true });
  }
}

/** The few fields of a pod the OOM diagnosis reads. */
export interface PodStatusView {
  status?: {
    containerStatuses?: Array<{
      state?: { terminated?: { reason?: string; finishedAt?: string } };
      lastState?: { terminated?: { reason?: string; finishedAt?: string } };
    }>;
  };
}

/** How long after a container was OOM-killed a broken call is still blamed on it. */
export const OOM_WINDOW_MS = 15_000;
/** The kubelet reports a kill about a second after it happened: the diagnosis waits this long for it. */
export const OOM_DIAGNOSIS_MS = 4000;

/** True when one of the pods' containers was killed by the kernel for memory within the window before `now`. */
export function oomKilledRecently(pods: readonly PodStatusView[], now: number, windowMs = OOM_WINDOW_MS): boolean {
  for (const pod of pods) {
    for (const c of pod.status?.containerStatuses ?? []) {
      for (const t of [c.state?.terminated, c.lastState?.terminated]) {
        if (t?.reason !== 'OOMKilled') continue;
        const at = t.finishedAt === undefined ? now : Date.parse(t.finishedAt);
        // finishedAt has one-second precision: allow a second of slack.
        if (Number.isFinite(at) && at >= now - windowMs - 1000) return true;
      }
    }
  }
  return false;
}

export interface ClusterExecutorOptions {
  endpoints: EndpointIndex;
  clock: Clock;
  /** The runtime pods of a function (only read to diagnose a call whose connection broke). */
  runtimePods?: (fn: FunctionRecord) => Promise<PodStatusView[]>;
  /** The function of an id (for the diagnosis). */
  lookup?: (functionId: string) => FunctionRecord | undefined;
  /** Asks for the function to be scaled up (the status feedback's wake). */
  wake: (fn: FunctionRecord) => void;
  /**
   * Why the function cannot run (its status says so for its current spec: code that does
   * not parse, ...), or undefined. A call with no ready pod then gets a 503 at once
   * instead of being held.
   */
  cannotRun?: (fn: FunctionRecord) => string | undefined;
  /** A call began / ended (autoscaling: the status feedback measures calls in flight). */
  calls?: { started(functionId: string): void; ended(functionId: string): void };
  /** Probes a starting pod while calls are held (unset: held calls wait for the slice only). */
  probe?: HealthProbe;
  holdMs?: number;
  maxHeld?: number;
  maxHeldPerFunction?: number;
  /**
   * The pool of generic pods (pool/claimer.ts): a cold call tries it beside the Deployment path
   * (the wake), and the held calls go to whichever has a pod first. Unset: no pool.
   */
  pool?: (fn: FunctionRecord) => Promise<PoolAnswer>;
  /** A cold start began on a path (the pool's pod, or the function's Deployment, with the reason it was not the pool). */
  coldStart?: (fn: FunctionRecord, path: 'pool' | 'deployment', reason: string | undefined, detail: string | undefined) => void;
}

/** What the pool answers a cold call: the specialized pod's origin, or why the Deployment path serves it. */
export type PoolAnswer = { origin: string; pod: string } | { fallback: string; detail?: string };

/** The one prober of a Service while calls of its function are held. */
interface Prober {
  service: string;
  /** Releases of the held calls: each sends its call to the origin given (undefined: every starting pod failed to load the code). */
  held: Set<(origin: string | undefined) => void>;
  /** Starting pods whose runtime answered that the function module failed to load. */
  failed: Set<string>;
  /** origin → its probe in flight */
  inflight: Map<string, { abort: AbortController; timer: unknown }>;
  /** Where the next round starts among the starting origins (more than MAX_PROBES_PER_FUNCTION take turns). */
  cursor: number;
  /** When it last started a probe (a sequence number; 0: never): the least recent goes first. */
  turn: number;
}

/** How long one call may be held: the setting, but never past the function's own time limit. */
export function holdBoundMs(holdMs: number, timeoutSeconds: number): number {
  return Math.max(0, Math.min(holdMs, timeoutSeconds * 1000));
}

export class ClusterExecutor implements Executor {
  readonly #o: ClusterExecutorOptions;
  readonly #heldPer = new Map<string, number>();
  #held = 0;
  /** service → its prober, while calls of it are held */
  readonly #probers = new Map<string, Prober>();
  /** service → a pod that answered the probe, used until its slice catches up (PROBED_POD_TTL_MS at most) */
  readonly #probed = new Map<string, { origin: string; until: number }>();
  /** service → origin that refused a connection → the timer that forgives it (REFUSED_ORIGIN_TTL_MS) */
  readonly #refused = new Map<string, Map<string, unknown>>();
  /** service → the held calls' checks for a usable pod, run on every change of its pods */
  readonly #waiting = new Map<string, Set<() => void>>();
  /** service → the origin of a pod specialized from the pool for it, used until its slice has a ready pod */
  readonly #pooled = new Map<string, string>();
  /** services whose wake waits for their pool claim's answer (at most POOL_WAKE_DELAY_MS) */
  readonly #wakeDeferred = new Map<string, unknown>();
  /** services with a pool claim in flight (one per function at a time) */
  readonly #claiming = new Set<string>();
  #tick: unknown;
  #budget = 0;
  #budgetResetAt = Number.NEGATIVE_INFINITY;
  /** Counts rounds of probes, to order the probers (Prober.turn). */
  #turns = 0;
  #closed = false;
  readonly #unsubscribe: () => void;
  /** Calls that had to wait for a pod, and those that gave up. */
  holds = 0;
  holdTimeouts = 0;
  holdRejections = 0;
  /** Held calls sent on because the gateway's own probe found a pod, or because a slice said one is ready. */
  releasedByProbe = 0;
  releasedBySlice = 0;
  /** Health probes started. */
  probes = 0;
  /** Calls answered 503 at once: the function cannot run (its status, or every starting pod failed to load it). */
  unrunnable = 0;
  /** Pods passed over because their runtime port refused a connection. */
  refusals = 0;
  /** Cold starts by path (fnhost_cluster_cold_starts_total{path}), and the pool's fallbacks by reason. */
  readonly coldStarts = { pool: 0, deployment: 0 };
  readonly poolFallbacks = new Map<string, number>();
  releasedByPool = 0;

  constructor(options: ClusterExecutorOptions) {
    this.#o = options;
    this.#unsubscribe = options.endpoints.subscribe((service) => this.#endpointsChanged(service));
  }

  get held(): number {
    return this.#held;
  }

  /** Ready pods the gateway knows of (for the runtimes gauge). */
  get running(): number {
    return 0;
  }

  /** Services being probed now (tests, diagnostics). */
  get probing(): number {
    return this.#probers.size;
  }

  acquire(fn: FunctionRecord): Promise<Upstream> {
    const service = keyOf(fn.namespace, serviceNameOf(fn.name));
    const origin = this.#usable(service);
    if (origin !== undefined) return Promise.resolve({ origin });
    const why = this.#o.cannotRun?.(fn);
    if (why !== undefined) {
      this.unrunnable++;
      return Promise.reject(new FunctionUnavailableError(why));
    }
    return this.#hold(fn, service);
  }

  callStarted(functionId: string): void {
    this.#o.calls?.started(functionId);
  }

  callEnded(functionId: string): void {
    this.#o.calls?.ended(functionId);
  }

  /** A ready pod (round robin), else a pod that answered the probe; never one that refused a connection lately. */
  #usable(service: string): string | undefined {
    const refused = this.#refused.get(service);
    const skip = refused === undefined ? undefined : (origin: string) => refused.has(origin);
    const origin = this.#o.endpoints.pick(service, skip) ?? this.#probedOrigin(service) ?? this.#pooled.get(service);
    return origin !== undefined && skip?.(origin) === true ? undefined : origin;
  }

  /**
   * A connection to `origin` was refused: the call never reached the pod (its
   * runtime stopped listening: the pod is stopping, while its slice still says
   * ready). The proxy sends the call again; this pod is passed over until its
   * slice drops it or REFUSED_ORIGIN_TTL_MS pass, so the call goes to another
   * pod or is held for one.
   */
  unreachable(fn: FunctionRecord, origin: string): void {
    const service = keyOf(fn.namespace, serviceNameOf(fn.name));
    let refused = this.#refused.get(service);
    if (refused === undefined) this.#refused.set(service, (refused = new Map()));
    this.#o.clock.clearTimeout(refused.get(origin));
    refused.set(origin, this.#o.clock.setTimeout(() => this.#forgive(service, origin), REFUSED_ORIGIN_TTL_MS));
    if (this.#probed.get(service)?.origin === origin) this.#probed.delete(service);
    // A specialized pool pod that refuses has been ended (its function's Deployment took over, or it idled).
    if (this.#pooled.get(service) === origin) this.#pooled.delete(service);
    this.refusals++;
  }

  #forgive(service: string, origin: string): void {
    const refused = this.#refused.get(service);
    if (refused === undefined || !refused.has(origin)) return;
    this.#o.clock.clearTimeout(refused.get(origin));
    refused.delete(origin);
    if (refused.size === 0) this.#refused.delete(service);
    this.#recheck(service);
  }

  /** Held calls of the Service look again for a usable pod. */
  #recheck(service: string): void {
    for (const check of [...(this.#waiting.get(service) ?? [])]) check();
  }

  /** The pod that answered the probe, while still starting in its slice and within PROBED_POD_TTL_MS. */
  #probedOrigin(service: string): string | undefined {
    const entry = this.#probed.get(service);
    if (entry === undefined) return undefined;
    if (this.#o.clock.now() >= entry.until || !this.#o.endpoints.starting(service).includes(entry.origin)) {
      this.#probed.delete(service);
      return undefined;
    }
    return entry.origin;
  }

  async #hold(fn: FunctionRecord, service: string): Promise<Upstream> {
    const maxHeld = this.#o.maxHeld ?? DEFAULT_MAX_HELD;
    const maxPer = this.#o.maxHeldPerFunction ?? DEFAULT_MAX_HELD_PER_FUNCTION;
    const mine = this.#heldPer.get(fn.function_id) ?? 0;
    if (this.#held >= maxHeld || mine >= maxPer) {
      this.holdRejections++;
      throw new FunctionUnavailableError(
        `function ${fn.name} has no ready pod and ${mine >= maxPer ? `${mine} calls of it` : `${this.#held} calls`} already wait for one (limit ${mine >= maxPer ? maxPer : maxHeld}); try again shortly`,
      );
    }
    this.#held++;
    this.#heldPer.set(fn.function_id, mine + 1);
    this.holds++;
    if (mine === 0) this.#coldStart(fn, service);
    // While a claim from the pool is under way the wake waits for its answer (#coldStart): the
    // function's own pod starting (scheduler, kubelet, container, runtime) competes for the same
    // API server and, on a small cluster, the same cores, and a specialized pool pod serves until
    // that pod is ready anyway. A pool that cannot serve wakes it at once with its answer.
    if (!this.#wakeDeferred.has(service)) this.#o.wake(fn);
    const bound = holdBoundMs(this.#o.holdMs ?? DEFAULT_HOLD_MS, fn.timeout_seconds);
    try {
      type Released = { origin: string; by: 'probe' | 'slice' | 'pool' } | { loadError: true } | undefined;
      const released = await new Promise<Released>((resolve) => {
        let done = false;
        let timer: unknown;
        let stopWaiting = (): void => undefined;
        let leave = (): void => undefined;
        const finish = (result: Released): void => {
          if (done) return;
          done = true;
          this.#o.clock.clearTimeout(timer);
          stopWaiting();
          leave();
          resolve(result);
        };
        // Every change of the Service's pods (and a refused pod forgiven) looks again.
        const check = (): void => {
          const origin = this.#usable(service);
          if (origin !== undefined) finish({ origin, by: origin === this.#pooled.get(service) ? 'pool' : 'slice' });
        };
        let waiting = this.#waiting.get(service);
        if (waiting === undefined) this.#waiting.set(service, (waiting = new Set()));
        waiting.add(check);
        stopWaiting = () => {
          const set = this.#waiting.get(service);
          set?.delete(check);
          if (set !== undefined && set.size === 0) this.#waiting.delete(service);
        };
        timer = this.#o.clock.setTimeout(() => finish(undefined), bound);
        if (this.#o.probe !== undefined && !this.#closed) leave = this.#join(service, (origin) => finish(origin === undefined ? { loadError: true } : { origin, by: 'probe' }));
      });
      if (released !== undefined && 'loadError' in released) {
        this.unrunnable++;
        throw new FunctionUnavailableError(
          `function ${fn.name} (namespace ${fn.namespace}) cannot run: its code failed to load in its pods (kubectl logs deployment/fn-${fn.name} -n ${fn.namespace})`,
        );
      }
      if (released === undefined) {
        this.holdTimeouts++;
        const why = this.#o.endpoints.origins(service).length > 0
          ? `its ready pods refused connections for ${Math.round(bound / 1000)} s`
          : `it has no ready pod after ${Math.round(bound / 1000)} s: it is scaling up from zero or cannot start`;
        throw new FunctionUnavailableError(`function ${fn.name} (namespace ${fn.namespace}) is unavailable: ${why} (kubectl describe function ${fn.name} -n ${fn.namespace})`);
      }
      if (released.by === 'probe') this.releasedByProbe++;
      else if (released.by === 'pool') this.releasedByPool++;
      else this.releasedBySlice++;
      return { origin: released.origin, coldStart: true };
    } finally {
      this.#held--;
      const left = (this.#heldPer.get(fn.function_id) ?? 1) - 1;
      if (left === 0) this.#heldPer.delete(fn.function_id);
      else this.#heldPer.set(fn.function_id, left);
    }
  }

  // --- the pool of generic pods ---------------------------------------------

  /**
   * The first held call of a function with no pod: the pool is asked for a pod beside the wake
   * (the Deployment path goes on regardless: the function's own pods take over once ready). One
   * claim per function at a time; its pod serves every held and new call until a slice has a ready pod.
   */
  #coldStart(fn: FunctionRecord, service: string): void {
    const pool = this.#o.pool;
    if (pool === undefined) {
      this.#countCold(fn, 'deployment', 'pool_off', undefined);
      return;
    }
    if (this.#claiming.has(service) || this.#pooled.has(service)) return;
    this.#claiming.add(service);
    // The wake, deferred while the claim runs (#hold), comes with the pool's answer, or at the
    // latest POOL_WAKE_DELAY_MS after the claim began: a slow or stuck claim (a pod that takes its
    // full specialization and load bounds) never delays the function's own pod by more.
    const wake = (): void => {
      if (!this.#wakeDeferred.has(service)) return;
      this.#o.clock.clearTimeout(this.#wakeDeferred.get(service));
      this.#wakeDeferred.delete(service);
      if (!this.#closed) this.#o.wake(fn);
    };
    this.#wakeDeferred.set(service, this.#o.clock.setTimeout(wake, POOL_WAKE_DELAY_MS));
    pool(fn).then(
      (answer) => {
        this.#claiming.delete(service);
        wake();
        if ('fallback' in answer) return this.#countCold(fn, 'deployment', answer.fallback, answer.detail);
        this.#countCold(fn, 'pool', undefined, answer.pod);
        if (this.#closed || this.#o.endpoints.origins(service).length > 0) return;
        this.#pooled.set(service, answer.origin);
        this.#recheck(service);
      },
      (err: unknown) => {
        this.#claiming.delete(service);
        wake();
        this.#countCold(fn, 'deployment', 'specialize_failed', (err as Error).message);
      },
    );
  }

  #countCold(fn: FunctionRecord, path: 'pool' | 'deployment', reason: string | undefined, detail: string | undefined): void {
    this.coldStarts[path]++;
    if (reason !== undefined && reason !== 'pool_off') this.poolFallbacks.set(reason, (this.poolFallbacks.get(reason) ?? 0) + 1);
    this.#o.coldStart?.(fn, path, reason, detail);
  }

  // --- probing the starting pods of functions with held calls -------------

  /** A held call joins its Service's prober (started by the first); returns how to leave it (the last one out stops it). */
  #join(service: string, release: (origin: string | undefined) => void): () => void {
    let p = this.#probers.get(service);
    const first = p === undefined;
    if (p === undefined) {
      p = { service, held: new Set(), failed: new Set(), inflight: new Map(), cursor: 0, turn: 0 };
      this.#probers.set(service, p);
    }
    p.held.add(release);
    if (first) {
      // A pod already starting (a rollout, or a call that came a moment after the wake) is probed at once.
      this.#probeService(p);
      this.#schedule();
    }
    const prober = p;
    return () => {
      prober.held.delete(release);
      if (prober.held.size === 0) this.#stop(prober);
    };
  }

  #stop(p: Prober): void {
    if (this.#probers.get(p.service) === p) this.#probers.delete(p.service);
    for (const [origin, probe] of p.inflight) this.#cancel(p, origin, probe);
    if (this.#probers.size === 0 && this.#tick !== undefined) {
      this.#o.clock.clearTimeout(this.#tick);
      this.#tick = undefined;
    }
  }

  #cancel(p: Prober, origin: string, probe: { abort: AbortController; timer: unknown }): void {
    this.#o.clock.clearTimeout(probe.timer);
    probe.abort.abort();
    if (p.inflight.get(origin) === probe) p.inflight.delete(origin);
  }

  /** One timer for all probers: every PROBE_INTERVAL_MS while any call is held. */
  #schedule(): void {
    if (this.#tick !== undefined || this.#probers.size === 0) return;
    this.#tick = this.#o.clock.setTimeout(() => {
      this.#tick = undefined;
      // Least recently probed first: functions left out by the budget come first next time.
      for (const p of [...this.#probers.values()].sort((a, b) => a.turn - b.turn)) {
        if (this.#budgetLeft() === 0) break;
        this.#probeService(p);
      }
      this.#schedule();
    }, PROBE_INTERVAL_MS);
  }

  /** Probes left in this interval (MAX_PROBES_PER_INTERVAL, renewed every PROBE_INTERVAL_MS). */
  #budgetLeft(): number {
    const now = this.#o.clock.now();
    if (now >= this.#budgetResetAt) {
      this.#budget = MAX_PROBES_PER_INTERVAL;
      this.#budgetResetAt = now + PROBE_INTERVAL_MS;
    }
    return this.#budget;
  }

  /** Starts a probe of each starting pod of the Service that has none in flight, within the bounds. */
  #probeService(p: Prober): void {
    const starting = this.#o.endpoints.starting(p.service);
    const n = starting.length;
    let started = 0;
    for (let k = 0; k < n && p.inflight.size < MAX_PROBES_PER_FUNCTION && this.#budgetLeft() > 0; k++) {
      const origin = starting[(p.cursor + k) % n]!;
      if (p.inflight.has(origin)) continue;
      this.#probeOne(p, origin);
      started++;
    }
    p.cursor = n === 0 ? 0 : (p.cursor + started) % n;
    if (started > 0) p.turn = ++this.#turns;
  }

  #probeOne(p: Prober, origin: string): void {
    this.#budget--;
    this.probes++;
    const probe = { abort: new AbortController(), timer: undefined as unknown };
    p.inflight.set(origin, probe);
    let settled = false;
    const settle = (ok: boolean | typeof LOAD_ERROR): void => {
      if (settled) return;
      settled = true;
      this.#o.clock.clearTimeout(probe.timer);
      // Cancelled meanwhile (the prober stopped, or the pod left): its answer is not used.
      if (p.inflight.get(origin) !== probe) return;
      p.inflight.delete(origin);
      if (ok === true) this.#answered(p, origin);
      else if (ok === LOAD_ERROR) this.#failedToLoad(p, origin);
    };
    probe.timer = this.#o.clock.setTimeout(() => {
      probe.abort.abort();
      settle(false);
    }, PROBE_TIMEOUT_MS);
    let answer: Promise<boolean | typeof LOAD_ERROR>;
    try {
      answer = this.#o.probe!(origin, probe.abort.signal);
    } catch {
      answer = Promise.resolve(false);
    }
    answer.then((ok) => settle(ok === true || ok === LOAD_ERROR ? ok : false), () => settle(false));
  }

  /** A starting pod answered /healthz 200: the Service's held calls go to it, and new calls until its slice catches up. */
  #answered(p: Prober, origin: string): void {
    if (this.#probers.get(p.service) !== p) return;
    // Gone from the slice or terminating since the probe began: never used. (Ready meanwhile: the slice released the calls.)
    if (!this.#o.endpoints.starting(p.service).includes(origin)) return;
    this.#probed.set(p.service, { origin, until: this.#o.clock.now() + PROBED_POD_TTL_MS });
    for (const release of [...p.held]) release(origin);
  }

  /**
   * A starting pod's runtime says the function module failed to load. When every
   * starting pod of the function says so (none of a rollout is still loading), and
   * none is ready, the held calls fail at once: holding them would only time out.
   */
  #failedToLoad(p: Prober, origin: string): void {
    if (this.#probers.get(p.service) !== p) return;
    const starting = this.#o.endpoints.starting(p.service);
    if (!starting.includes(origin)) return;
    p.failed.add(origin);
    if (this.#o.endpoints.origins(p.service).length > 0 || !starting.every((o) => p.failed.has(o))) return;
    for (const release of [...p.held]) release(undefined);
  }

  /** A Service's slices changed: drop what they no longer allow, wake held calls a pod can take, and probe a newly starting pod at once. */
  #endpointsChanged(service: string): void {
    const starting = this.#o.endpoints.starting(service);
    const ready = this.#o.endpoints.origins(service);
    const entry = this.#probed.get(service);
    if (entry !== undefined && (ready.length > 0 || !starting.includes(entry.origin))) this.#probed.delete(service);
    // The function's own pod is ready: the specialized pool pod is no longer used (the operator ends it).
    if (ready.length > 0) this.#pooled.delete(service);
    // A refused pod the slice no longer lists as ready has left: when it is ready again, it is a pod that listens.
    const refused = this.#refused.get(service);
    for (const origin of [...(refused?.keys() ?? [])]) if (!ready.includes(origin)) this.#forgive(service, origin);
    this.#recheck(service);
    const p = this.#probers.get(service);
    if (p === undefined) return;
    for (const [origin, probe] of p.inflight) if (!starting.includes(origin)) this.#cancel(p, origin, probe);
    this.#probeService(p);
  }

  /**
   * A call's connection broke mid-way: was the container killed by the kernel
   * for memory (OOMKilled)? Then the execution is reported as out of memory.
   * Reads the function's pods (one list request, on this failure path only),
   * waiting up to OOM_DIAGNOSIS_MS for the kubelet to report the kill.
   */
  async diagnose(functionId: string, waitMs: number): Promise<RecycleReason | undefined> {
    const fn = this.#o.lookup?.(functionId);
    if (fn === undefined || this.#o.runtimePods === undefined) return undefined;
    const deadline = this.#o.clock.now() + Math.max(waitMs, OOM_DIAGNOSIS_MS);
    for (;;) {
      try {
        if (oomKilledRecently(await this.#o.runtimePods(fn), this.#o.clock.now())) return 'out_of_memory';
      } catch {
        return undefined;
      }
      if (this.#o.clock.now() >= deadline) return undefined;
      await new Promise<void>((resolve) => this.#o.clock.setTimeout(resolve, 250));
    }
  }

  /**
   * The runtime in the pod replaces a handler that timed out or ran out of
   * memory by itself (the pod stays Running); a pod that is gone leaves its
   * EndpointSlice. Nothing for the gateway to do but drop the connection pool,
   * which the proxy does.
   */
  recycle(_functionId: string, _reason: RecycleReason): void {}

  /** The operator converges the pods on the Function; the gateway only watches. */
  async sync(): Promise<void> {}

  async close(): Promise<void> {
    this.#closed = true;
    this.#unsubscribe();
    for (const p of [...this.#probers.values()]) this.#stop(p);
    this.#probed.clear();
    this.#pooled.clear();
    for (const timer of this.#wakeDeferred.values()) this.#o.clock.clearTimeout(timer);
    this.#wakeDeferred.clear();
    for (const refused of this.#refused.values()) for (const timer of refused.values()) this.#o.clock.clearTimeout(timer);
    this.#refused.clear();
  }
}
