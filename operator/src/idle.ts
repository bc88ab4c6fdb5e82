import type { FunctionResource } from '@fnhost/core/function-resource.ts';
import { DEFAULT_IDLE_SECONDS } from '@fnhost/core/scaling.ts';

// Idle scale to zero (spec.scaleToZero.idleSeconds), decided from the
// Function alone so that a reconcile stays level-triggered: the gateway
// writes status.lastInvocationTime (at most once per interval while calls
// come in, and at once when a call is held for a function with no pod), and
// this decides from that time, the Function's creation and the current time.
// A wake is therefore just another status write: the reconcile it triggers
// sees a recent invocation and scales back up.

export interface IdleDecision {
  /** Run zero pods now because nothing invoked the function for idleSeconds. */
  idle: boolean;
  /** The function has the setting; when idle is false, how long until it would become idle. */
  idleInMs?: number;
  /** The last activity (ms) the decision counted from; stable, so the Ready message does not change every second. */
  sinceMs?: number;
}

function parseTime(value: string | undefined): number {
  if (value === undefined) return Number.NaN;
  return Date.parse(value);
}

/**
 * The newest sign of use: the last invocation the gateway reported, or the
 * Function's creation (a new function gets a full idle window before its
 * first call). A time in the future (clock skew) counts as now.
 */
export function lastActivityMs(fn: FunctionResource, nowMs: number): number {
  const times = [parseTime(fn.status?.lastInvocationTime), parseTime(fn.metadata.creationTimestamp)].filter((t) => Number.isFinite(t));
  if (times.length === 0) return nowMs;
  return Math.min(nowMs, Math.max(...times));
}

/**
 * Seconds without a call before the function may run zero pods: spec.scaleToZero
 * opts in, and so does spec.scaling.minReplicas 0 (with scaleToZero's idleSeconds,
 * else DEFAULT_IDLE_SECONDS). undefined: never scaled to zero for idleness.
 */
export function idleSecondsOf(fn: FunctionResource): number | undefined {
  if (fn.spec.scaleToZero?.idleSeconds !== undefined) return fn.spec.scaleToZero.idleSeconds;
  if (fn.spec.scaling?.minReplicas === 0) return DEFAULT_IDLE_SECONDS;
  return undefined;
}

export function idleDecision(fn: FunctionResource, nowMs: number): IdleDecision {
  const idleSeconds = idleSecondsOf(fn);
  if (idleSeconds === undefined || (fn.spec.active ?? true) === false) return { idle: false };
  const sinceMs = lastActivityMs(fn, nowMs);
  const quietMs = nowMs - sinceMs;
  const windowMs = idleSeconds * 1000;
  if (quietMs >= windowMs) return { idle: true, sinceMs };
  return { idle: false, idleInMs: windowMs - quietMs, sinceMs };
}
