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

export const DEFAULT_HOLD_MS = 30_000;
export const DEFAULT_MAX_HELD = 1000;
export const DEFAULT_MAX_HELD_PER_FUNCTION = 200;

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
  holdMs?: number;
  maxHeld?: number;
  maxHeldPerFunction?: number;
}

/** How long one call may be held: the setting, but never past the function's own time limit. */
export function holdBoundMs(holdMs: number, timeoutSeconds: number): number {
  return Math.max(0, Math.min(holdMs, timeoutSeconds * 1000));
}

export class ClusterExecutor implements Executor {
  readonly #o: ClusterExecutorOptions;
  readonly #heldPer = new Map<string, number>();
  #held = 0;
  /** Calls that had to wait for a pod, and those that gave up. */
  holds = 0;
  holdTimeouts = 0;
  holdRejections = 0;

  constructor(options: ClusterExecutorOptions) {
    this.#o = options;
  }

  get held(): number {
    return this.#held;
  }

  /** Ready pods the gateway knows of (for the runtimes gauge). */
  get running(): number {
    return 0;
  }

  acquire(fn: FunctionRecord): Promise<Upstream> {
    const service = keyOf(fn.namespace, serviceNameOf(fn.name));
    const origin = this.#o.endpoints.pick(service);
    if (origin !== undefined) return Promise.resolve({ origin });
    return this.#hold(fn, service);
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
    this.#o.wake(fn);
    const bound = holdBoundMs(this.#o.holdMs ?? DEFAULT_HOLD_MS, fn.timeout_seconds);
    try {
      const origin = await new Promise<string | undefined>((resolve) => {
        let timer: unknown;
        const stop = this.#o.endpoints.whenReady(service, () => {
          this.#o.clock.clearTimeout(timer);
          resolve(this.#o.endpoints.pick(service));
        });
        timer = this.#o.clock.setTimeout(() => {
          stop();
          resolve(undefined);
        }, bound);
      });
      if (origin === undefined) {
        this.holdTimeouts++;
        throw new FunctionUnavailableError(
          `function ${fn.name} (namespace ${fn.namespace}) has no ready pod after ${Math.round(bound / 1000)} s: it is scaling up from zero or cannot start (kubectl describe function ${fn.name} -n ${fn.namespace})`,
        );
      }
      return { origin };
    } finally {
      this.#held--;
      const left = (this.#heldPer.get(fn.function_id) ?? 1) - 1;
      if (left === 0) this.#heldPer.delete(fn.function_id);
      else this.#heldPer.set(fn.function_id, left);
    }
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

  async close(): Promise<void> {}
}
