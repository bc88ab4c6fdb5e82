import type { AutoscalerStatus, Condition, FunctionStatus } from '@fnhost/core/function-resource.ts';

// Status is computed as a whole, then compared with what is stored; it is
// written only when it differs. A condition keeps its lastTransitionTime while
// its status stays the same (the Kubernetes convention).

export interface ReadyInput {
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
}

export interface StatusInput {
  functionId: string;
  url: string;
  generation: number;
  /** status.code: `inline` or the short digest of spec.codeRef (the Code column); undefined keeps it. */
  code?: string;
  ready: ReadyInput;
  /** The Scheduled condition: a schedule the operator cannot run (InvalidSchedule); null removes it; undefined keeps it. */
  scheduled?: ReadyInput | null;
  /** The CodeLoaded condition: the current code failed to load in a pod (load-failure.ts); null removes it; undefined keeps it. */
  codeLoaded?: ReadyInput | null;
  /** Remove the gateway's status.loadFailure (the function is ready: the failure it names is past). */
  dropLoadFailure?: boolean;
  /** What the autoscaler decided; null removes it (no spec.scaling); undefined keeps it. */
  autoscaler?: AutoscalerStatus | null;
  /** Gateway keys of status.concurrency to remove (reports long stale: a gateway gone). */
  dropConcurrency?: string[];
}

function condition(type: string, input: ReadyInput, previous: Condition | undefined, generation: number, now: Date): Condition {
  const transition = previous && previous.status === input.status ? previous.lastTransitionTime : now.toISOString().replace(/\.\d{3}Z$/, 'Z');
  return { type, status: input.status, reason: input.reason, message: input.message, observedGeneration: generation, lastTransitionTime: transition };
}

export function desiredStatus(current: FunctionStatus | undefined, next: StatusInput, now: Date): FunctionStatus {
  const find = (type: string) => current?.conditions?.find((c) => c.type === type);
  const ready = condition('Ready', next.ready, find('Ready'), next.generation, now);
  let others = (current?.conditions ?? []).filter((c) => c.type !== 'Ready');
  if (next.scheduled !== undefined) {
    others = others.filter((c) => c.type !== 'Scheduled');
    if (next.scheduled !== null) others.push(condition('Scheduled', next.scheduled, find('Scheduled'), next.generation, now));
  }
  if (next.codeLoaded !== undefined) {
    others = others.filter((c) => c.type !== 'CodeLoaded');
    if (next.codeLoaded !== null) others.push(condition('CodeLoaded', next.codeLoaded, find('CodeLoaded'), next.generation, now));
  }
  const status: FunctionStatus = {
    // Fields other writers own (the gateway's lastInvocationTime, errorRate and concurrency) are kept,
    // so that they never make the status look changed to the operator.
    ...current,
    functionId: next.functionId,
    url: next.url,
    observedGeneration: next.generation,
    conditions: [ready, ...others],
  };
  if (next.code !== undefined) status.code = next.code;
  if (next.autoscaler === null) {
    // A merge patch removes a field given as null.
    if (current?.autoscaler !== undefined) status.autoscaler = null as unknown as undefined;
  } else if (next.autoscaler !== undefined) {
    status.autoscaler = next.autoscaler;
  }
  // A merge patch removes a field given as null.
  if (next.dropLoadFailure === true && current?.loadFailure != null) status.loadFailure = null;
  if ((next.dropConcurrency ?? []).length > 0) {
    status.concurrency = { ...current?.concurrency };
    for (const key of next.dropConcurrency!) status.concurrency[key] = null;
  }
  return status;
}

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>)
        .filter(([, v]) => v !== undefined)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([k, v]) => [k, canonical(v)]),
    );
  }
  return value;
}

/** True when writing `next` would change the stored status. */
export function statusChanged(current: FunctionStatus | undefined, next: FunctionStatus): boolean {
  return JSON.stringify(canonical(current ?? {})) !== JSON.stringify(canonical(next));
}
