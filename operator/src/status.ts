import type { Condition, FunctionStatus } from '@fnhost/core/function-resource.ts';

// Status is computed as a whole, then compared with what is stored; it is
// written only when it differs. A condition keeps its lastTransitionTime while
// its status stays the same (the Kubernetes convention).

export interface ReadyInput {
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
}

export function desiredStatus(
  current: FunctionStatus | undefined,
  next: { functionId: string; url: string; generation: number; ready: ReadyInput },
  now: Date,
): FunctionStatus {
  const previous = current?.conditions?.find((c) => c.type === 'Ready');
  const transition = previous && previous.status === next.ready.status ? previous.lastTransitionTime : now.toISOString().replace(/\.\d{3}Z$/, 'Z');
  const ready: Condition = {
    type: 'Ready',
    status: next.ready.status,
    reason: next.ready.reason,
    message: next.ready.message,
    observedGeneration: next.generation,
    lastTransitionTime: transition,
  };
  const others = (current?.conditions ?? []).filter((c) => c.type !== 'Ready');
  return {
    // Fields other writers own (the gateway's lastInvocationTime and errorRate) are kept,
    // so that they never make the status look changed to the operator.
    ...current,
    functionId: next.functionId,
    url: next.url,
    observedGeneration: next.generation,
    conditions: [ready, ...others],
  };
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
