import type { AutoscalerStatus, ConcurrencyReport, FunctionResource } from '@fnhost/core/function-resource.ts';
import { DEFAULT_MAX_REPLICAS, DEFAULT_MIN_REPLICAS, DEFAULT_TARGET_CONCURRENCY } from '@fnhost/core/scaling.ts';

// Autoscaling on concurrency (spec.scaling), after Knative's KPA, decided from
// the Function alone so that a reconcile stays level-triggered. Each gateway
// replica measures its calls in flight per function, time-averaged over a
// stable window (60 s) and a panic window (6 s), and writes the two averages
// under its own key of status.concurrency, at most once per status interval
// (sooner, every PANIC_WRITE_INTERVAL, while it sees a burst). The sum of the
// fresh reports is the function's demand:
//
//   stable mode: replicas = ceil(stable / targetConcurrency)
//   panic mode:  entered when the panic average exceeds PANIC_THRESHOLD times
//                what the current replicas are meant to carry; replicas =
//                ceil(panic / target), never fewer than now (no scale-down in
//                a burst); left once a whole stable window passed without
//                the condition (status.autoscaler.panicUntil).
//
// then bounded by minReplicas (at least 1: zero comes only from the idle rule,
// idle.ts) and maxReplicas. What was decided last is kept in status.autoscaler,
// the only state, so a restarted operator continues where the last one was.

export const STABLE_WINDOW_MS = 60_000;
export const PANIC_WINDOW_MS = 6_000;
/** Panic when the short-window demand is at least this many times the current capacity. */
export const PANIC_THRESHOLD = 2;
/** A report older than this says nothing about the stable window any more: it is left out (a gateway gone). */
export const REPORT_MAX_AGE_MS = STABLE_WINDOW_MS;

export interface EffectiveScaling {
  minReplicas: number;
  maxReplicas: number;
  targetConcurrency: number;
}

/** spec.scaling with the CRD's defaults filled; undefined when the function does not autoscale. */
export function scalingOf(fn: FunctionResource): EffectiveScaling | undefined {
  const s = fn.spec.scaling;
  if (s === undefined || s === null) return undefined;
  return {
    minReplicas: s.minReplicas ?? DEFAULT_MIN_REPLICAS,
    maxReplicas: s.maxReplicas ?? DEFAULT_MAX_REPLICAS,
    targetConcurrency: s.targetConcurrency ?? DEFAULT_TARGET_CONCURRENCY,
  };
}

export interface ObservedConcurrency {
  stable: number;
  panic: number;
  /** Reports counted. */
  reports: number;
  /** When the oldest counted report turns stale (ms); undefined with none. */
  staleAtMs?: number;
}

/** The sum of the gateways' fresh reports (null entries and reports older than REPORT_MAX_AGE_MS left out). */
export function observedConcurrency(reports: Record<string, ConcurrencyReport | null> | undefined, nowMs: number): ObservedConcurrency {
  const out: ObservedConcurrency = { stable: 0, panic: 0, reports: 0 };
  for (const r of Object.values(reports ?? {})) {
    if (r === null || typeof r !== 'object') continue;
    const at = Date.parse(r.at);
    if (!Number.isFinite(at) || nowMs - at >= REPORT_MAX_AGE_MS) continue;
    const stable = Number(r.stable);
    const panic = Number(r.panic);
    if (!Number.isFinite(stable) || !Number.isFinite(panic) || stable < 0 || panic < 0) continue;
    out.stable += stable;
    out.panic += panic;
    out.reports++;
    const staleAt = Math.min(at, nowMs) + REPORT_MAX_AGE_MS;
    out.staleAtMs = out.staleAtMs === undefined ? staleAt : Math.min(out.staleAtMs, staleAt);
  }
  return out;
}

export interface AutoscaleInput {
  scaling: EffectiveScaling;
  observed: ObservedConcurrency;
  /** What the autoscaler set last (status.autoscaler), if anything. */
  previous: AutoscalerStatus | undefined;
  nowMs: number;
}

export interface AutoscaleDecision {
  replicas: number;
  mode: 'stable' | 'panic';
  /** Panic mode ends then (ms). */
  panicUntilMs?: number;
  /** Look again then, since no event comes (panic ends, a report turns stale); undefined: nothing pending. */
  recheckAtMs?: number;
}

function clamp(n: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, n));
}

/** Replicas for a demand: calls in flight over the target, up (a small float error never adds a pod). */
function replicasFor(concurrency: number, target: number): number {
  return Math.ceil(concurrency / target - 1e-9);
}

export function autoscaleDecision(input: AutoscaleInput): AutoscaleDecision {
  const { scaling, observed, previous, nowMs } = input;
  const lo = Math.max(1, scaling.minReplicas);
  const hi = Math.max(lo, scaling.maxReplicas);
  const current = Math.max(1, previous?.replicas ?? lo);
  const target = scaling.targetConcurrency;
  const overPanic = observed.panic >= PANIC_THRESHOLD * current * target;
  const previousPanicUntil = previous?.panicUntil === undefined ? Number.NaN : Date.parse(previous.panicUntil);
  const panicUntilMs = overPanic ? nowMs + STABLE_WINDOW_MS : Number.isFinite(previousPanicUntil) && previousPanicUntil > nowMs ? previousPanicUntil : undefined;
  const stableWant = replicasFor(observed.stable, target);
  let replicas: number;
  let mode: 'stable' | 'panic';
  if (panicUntilMs !== undefined) {
    mode = 'panic';
    replicas = Math.max(current, stableWant, replicasFor(observed.panic, target));
  } else {
    mode = 'stable';
    replicas = stableWant;
  }
  replicas = clamp(replicas, lo, hi);
  const rechecks = [panicUntilMs, observed.staleAtMs].filter((t): t is number => t !== undefined);
  return { replicas, mode, panicUntilMs, recheckAtMs: rechecks.length === 0 ? undefined : Math.min(...rechecks) };
}

/** status.autoscaler for a decision (times to the second, as Kubernetes writes them). */
export function autoscalerStatus(decision: AutoscaleDecision, observed: ObservedConcurrency): AutoscalerStatus {
  const status: AutoscalerStatus = { replicas: decision.replicas, mode: decision.mode, observed: `${observed.stable.toFixed(1)}/${observed.panic.toFixed(1)}` };
  if (decision.panicUntilMs !== undefined) status.panicUntil = new Date(Math.ceil(decision.panicUntilMs / 1000) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
  return status;
}

/** A report this old belongs to a gateway that is gone: the operator removes its key. */
export const REPORT_FORGET_AFTER_MS = 10 * REPORT_MAX_AGE_MS;

export function staleConcurrencyKeys(reports: Record<string, ConcurrencyReport | null> | undefined, nowMs: number): string[] {
  return Object.entries(reports ?? {})
    .filter(([, r]) => r !== null && !(nowMs - Date.parse(r.at) < REPORT_FORGET_AFTER_MS))
    .map(([key]) => key);
}
