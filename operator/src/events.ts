import { randomBytes } from 'node:crypto';
import type { Clock } from '@fnhost/core/clock.ts';
import type { FunctionResource, FunctionStatus } from '@fnhost/core/function-resource.ts';
import type { KubeClient } from './kube.ts';
import type { Logger } from './log.ts';
import { CODE_LOADED } from './load-failure.ts';

// Kubernetes Events on Functions (events.k8s.io/v1, which `kubectl describe fn`
// and `kubectl events` show): Created, Updated, Invalid, ScaledToZero, Woken,
// Scaled, LoadFailed. A reconcile may run many times for one change (retries, every
// gateway status write), so the recorder bounds what reaches the API server:
//   - the same Function, reason and note within DEDUPE_WINDOW_MS is recorded once;
//   - at most EVENTS_PER_FUNCTION_PER_MINUTE events per Function per minute;
//   - at most a global token bucket of EVENTS_BURST, refilled EVENTS_PER_SECOND.
// What is dropped is counted (fnhost_operator_events_dropped_total), never
// retried: an Event is a note for people, and a failed post never fails a reconcile.

export const DEDUPE_WINDOW_MS = 10 * 60_000;
export const EVENTS_PER_FUNCTION_PER_MINUTE = 10;
export const EVENTS_PER_SECOND = 5;
export const EVENTS_BURST = 25;
/** Remembered Function/reason/note keys at most (oldest forgotten first). */
const MAX_REMEMBERED = 10_000;

export type EventReason = 'Created' | 'Updated' | 'Invalid' | 'ScaledToZero' | 'Woken' | 'Scaled' | 'FunctionIdMoved' | 'LoadFailed';

export interface FunctionEvent {
  reason: EventReason;
  type: 'Normal' | 'Warning';
  /** What the operator did (events.k8s.io action). */
  action: string;
  note: string;
}

/** The pure limiter: whether an event may be posted now (and remembers it when yes). */
export class EventLimiter {
  readonly #seen = new Map<string, number>();
  readonly #perFunction = new Map<string, number[]>();
  #tokens = EVENTS_BURST;
  #refilledAt: number | undefined;

  allow(object: string, reason: string, note: string, nowMs: number): boolean {
    const key = `${object}\u0000${reason}\u0000${note}`;
    const seen = this.#seen.get(key);
    if (seen !== undefined && nowMs - seen < DEDUPE_WINDOW_MS) return false;
    const recent = (this.#perFunction.get(object) ?? []).filter((t) => nowMs - t < 60_000);
    if (recent.length >= EVENTS_PER_FUNCTION_PER_MINUTE) {
      this.#perFunction.set(object, recent);
      return false;
    }
    this.#refill(nowMs);
    if (this.#tokens < 1) return false;
    this.#tokens--;
    recent.push(nowMs);
    this.#perFunction.set(object, recent);
    this.#seen.delete(key);
    this.#seen.set(key, nowMs);
    if (this.#seen.size > MAX_REMEMBERED) this.#seen.delete(this.#seen.keys().next().value!);
    if (this.#perFunction.size > MAX_REMEMBERED) this.#perFunction.delete(this.#perFunction.keys().next().value!);
    return true;
  }

  #refill(nowMs: number): void {
    if (this.#refilledAt !== undefined) this.#tokens = Math.min(EVENTS_BURST, this.#tokens + ((nowMs - this.#refilledAt) / 1000) * EVENTS_PER_SECOND);
    this.#refilledAt = nowMs;
  }
}

/** The events.k8s.io/v1 Event for a Function (eventTime is a MicroTime). */
export function eventObject(fn: FunctionResource, event: FunctionEvent, nowMs: number, instance: string) {
  const eventTime = new Date(nowMs).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
  return {
    apiVersion: 'events.k8s.io/v1',
    kind: 'Event',
    metadata: { name: `${fn.metadata.name}.${randomBytes(8).toString('hex')}`, namespace: fn.metadata.namespace },
    eventTime,
    reportingController: 'fnhost.dev/operator',
    reportingInstance: instance.slice(0, 128),
    action: event.action,
    reason: event.reason,
    type: event.type,
    note: event.note.slice(0, 1024),
    regarding: {
      apiVersion: fn.apiVersion,
      kind: fn.kind,
      name: fn.metadata.name,
      namespace: fn.metadata.namespace,
      uid: fn.metadata.uid,
      resourceVersion: fn.metadata.resourceVersion,
    },
  };
}

export interface EventSink {
  record(fn: FunctionResource, event: FunctionEvent): void;
}

export class EventRecorder implements EventSink {
  readonly #client: KubeClient;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #instance: string;
  readonly #limiter = new EventLimiter();
  posted = 0;
  dropped = 0;
  failed = 0;

  constructor(options: { client: KubeClient; clock: Clock; log: Logger; instance: string }) {
    this.#client = options.client;
    this.#clock = options.clock;
    this.#log = options.log;
    this.#instance = options.instance;
  }

  /** Posts in the background: an Event never delays or fails a reconcile. */
  record(fn: FunctionResource, event: FunctionEvent): void {
    const now = this.#clock.now();
    const object = `${fn.metadata.namespace}/${fn.metadata.name}/${fn.metadata.uid ?? ''}`;
    if (!this.#limiter.allow(object, event.reason, event.note, now)) {
      this.dropped++;
      return;
    }
    const body = eventObject(fn, event, now, this.#instance);
    this.#client.request('POST', `/apis/events.k8s.io/v1/namespaces/${fn.metadata.namespace}/events`, { body }).then(
      () => {
        this.posted++;
      },
      (err: Error) => {
        this.failed++;
        this.#log.warn('recording an event failed', { function: `${fn.metadata.namespace}/${fn.metadata.name}`, reason: event.reason, error: err.message });
      },
    );
  }
}

/** Events in tests and where none are wanted. */
export class MemoryEventSink implements EventSink {
  readonly events: Array<{ name: string; event: FunctionEvent }> = [];
  record(fn: FunctionResource, event: FunctionEvent): void {
    this.events.push({ name: fn.metadata.name, event });
  }
}

const IDLE = 'Idle';

/**
 * The events a status change tells (pure): what the reconcile did, read from
 * the status before and after it. `invalid`: the spec was refused (the Ready
 * reason says why).
 */
export function transitionEvents(before: FunctionStatus | undefined, after: FunctionStatus, generation: number, invalid: boolean): FunctionEvent[] {
  const events: FunctionEvent[] = [];
  const was = before?.conditions?.find((c) => c.type === 'Ready');
  const now = after.conditions?.find((c) => c.type === 'Ready');
  if (invalid && now !== undefined) {
    events.push({ reason: 'Invalid', type: 'Warning', action: 'Validate', note: `${now.reason}: ${now.message}` });
    return events;
  }
  const scheduled = after.conditions?.find((c) => c.type === 'Scheduled' && c.status === 'False');
  if (scheduled !== undefined) events.push({ reason: 'Invalid', type: 'Warning', action: 'Validate', note: `${scheduled.reason}: ${scheduled.message} (the function serves HTTP; its CronJob is withheld)` });
  if (before?.observedGeneration === undefined) {
    events.push({ reason: 'Created', type: 'Normal', action: 'Create', note: `runtime objects created for generation ${generation}` });
  } else if (before.observedGeneration < generation) {
    events.push({ reason: 'Updated', type: 'Normal', action: 'Update', note: `generation ${generation} applied (was ${before.observedGeneration})` });
  }
  // The current code failed to load in a pod (load-failure.ts): once per failure text.
  const loadFailed = after.conditions?.find((c) => c.type === CODE_LOADED && c.status === 'False');
  const loadFailedBefore = before?.conditions?.find((c) => c.type === CODE_LOADED && c.status === 'False');
  if (loadFailed !== undefined && loadFailed.message !== loadFailedBefore?.message) events.push({ reason: 'LoadFailed', type: 'Warning', action: 'Load', note: loadFailed.message });
  if (was?.reason !== IDLE && now?.reason === IDLE) events.push({ reason: 'ScaledToZero', type: 'Normal', action: 'Scale', note: now.message });
  if (was?.reason === IDLE && now !== undefined && now.reason !== IDLE) events.push({ reason: 'Woken', type: 'Normal', action: 'Scale', note: 'an invocation came: scaled up from zero' });
  const from = before?.autoscaler?.replicas;
  const to = after.autoscaler?.replicas;
  if (from !== undefined && to !== undefined && from !== to) {
    events.push({ reason: 'Scaled', type: 'Normal', action: 'Scale', note: `scaled from ${from} to ${to} replicas (${after.autoscaler!.mode} mode, calls in flight stable/panic ${after.autoscaler!.observed ?? '?'})` });
  }
  return events;
}
