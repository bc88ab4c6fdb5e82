import { randomBytes } from 'node:crypto';
import type { FunctionResource } from '@fnhost/core/function-resource.ts';

// The Event on a Function that says which path served a cold start (issue 32): `ColdStartPool`
// (a pool pod specialized for it) or `ColdStartDeployment` with the reason the pool could not
// (kubectl describe fn). At most one per function per EVENT_INTERVAL_MS: a function that goes
// cold again and again does not flood the API server; the metric counts every one.

export const EVENT_INTERVAL_MS = 10_000;
/** Functions remembered by the limiter at most (the oldest forgotten first). */
export const MAX_REMEMBERED = 10_000;

export class ColdStartEventLimiter {
  readonly #last = new Map<string, number>();
  allow(key: string, now: number): boolean {
    const last = this.#last.get(key);
    if (last !== undefined && now - last < EVENT_INTERVAL_MS) return false;
    this.#last.delete(key);
    this.#last.set(key, now);
    if (this.#last.size > MAX_REMEMBERED) this.#last.delete(this.#last.keys().next().value!);
    return true;
  }
}

/** The events.k8s.io/v1 Event of a cold start (eventTime is a MicroTime). */
export function coldStartEvent(fn: FunctionResource, path: 'pool' | 'deployment', note: string, nowMs: number, instance: string) {
  return {
    apiVersion: 'events.k8s.io/v1',
    kind: 'Event',
    metadata: { name: `${fn.metadata.name}.${randomBytes(8).toString('hex')}`, namespace: fn.metadata.namespace },
    eventTime: new Date(nowMs).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z'),
    reportingController: 'fnhost.dev/gateway',
    reportingInstance: instance.slice(0, 128),
    action: 'ColdStart',
    reason: path === 'pool' ? 'ColdStartPool' : 'ColdStartDeployment',
    type: 'Normal',
    note: note.slice(0, 1024),
    regarding: { apiVersion: fn.apiVersion, kind: fn.kind, name: fn.metadata.name, namespace: fn.metadata.namespace, uid: fn.metadata.uid },
  };
}

/** The Event's note: what served, and why not the pool. */
export function coldStartNote(path: 'pool' | 'deployment', reason: string | undefined, detail: string | undefined): string {
  if (path === 'pool') return `served from the pool: pod ${detail ?? '?'} specialized for this function`;
  return `served by the function's Deployment: ${reason ?? 'no pool'}${detail === undefined ? '' : ` (${detail})`}`;
}
