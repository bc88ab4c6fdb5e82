import type { Clock } from '@fnhost/core/clock.ts';
import type { Logger } from '../log.ts';
import { KubeApiError, type ListResult, type WatchEvent } from './kube.ts';

// A list + watch of one kind of object, kept as a level: the reflector holds
// the latest version of every object, and tells its listener, per key, what
// the object is now (or that it is gone). Nothing is edge-triggered: after a
// watch breaks, a new list is diffed against what was held, so a deletion or
// an update missed while disconnected still reaches the listener.
//
// client-node's informer stops for good when its watch fails; this one starts
// again by itself: a watch the server ends normally is resumed at once from
// the last resourceVersion; one that fails is resumed after 0.5 s doubling to
// 30 s (reset after a minute without failures); an expired resourceVersion
// (410) means a fresh list. Delays come from an injected clock.

export const RESTART_BASE_MS = 500;
export const RESTART_MAX_MS = 30_000;
export const STABLE_MS = 60_000;

export interface KubeObjectMeta {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
}

/** Capped exponential delays. */
export class Backoff {
  readonly #base: number;
  readonly #max: number;
  #next: number;
  constructor(base = RESTART_BASE_MS, max = RESTART_MAX_MS) {
    this.#base = base;
    this.#max = max;
    this.#next = base;
  }
  next(): number {
    const d = this.#next;
    this.#next = Math.min(this.#max, this.#next * 2);
    return d;
  }
  reset(): void {
    this.#next = this.#base;
  }
}

export function objectKey(obj: KubeObjectMeta): string {
  return `${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''}`;
}

/**
 * The object as it is now, or undefined when it is gone; for a deletion,
 * `resourceVersion` is the version at which it was seen gone (the deletion
 * event's, or the list's), so a cache holding a newer write can keep it.
 */
export type Change<T> = { key: string; object: T | undefined; resourceVersion?: string };

/** What a fresh list changes against the held state: new or changed objects, and keys that are gone. */
export function diffList<T extends KubeObjectMeta>(held: ReadonlyMap<string, T>, items: readonly T[], listVersion?: string): Change<T>[] {
  const changes: Change<T>[] = [];
  const seen = new Set<string>();
  for (const item of items) {
    const key = objectKey(item);
    seen.add(key);
    const old = held.get(key);
    if (old === undefined || old.metadata?.resourceVersion !== item.metadata?.resourceVersion) changes.push({ key, object: item });
  }
  for (const key of held.keys()) if (!seen.has(key)) changes.push({ key, object: undefined, resourceVersion: listVersion });
  return changes;
}

export type EventOutcome<T> =
  | { kind: 'change'; change: Change<T>; resourceVersion: string | undefined }
  | { kind: 'bookmark'; resourceVersion: string | undefined }
  | { kind: 'expired' }
  | { kind: 'error'; message: string };

/** How one watch event moves the state. */
export function classifyEvent<T extends KubeObjectMeta>(event: WatchEvent<T>): EventOutcome<T> {
  const rv = event.object?.metadata?.resourceVersion;
  switch (event.type) {
    case 'ADDED':
    case 'MODIFIED':
      return { kind: 'change', change: { key: objectKey(event.object), object: event.object }, resourceVersion: rv };
    case 'DELETED':
      return { kind: 'change', change: { key: objectKey(event.object), object: undefined, resourceVersion: rv }, resourceVersion: rv };
    case 'BOOKMARK':
      return { kind: 'bookmark', resourceVersion: rv };
    default: {
      const status = event.object as unknown as { code?: number; message?: string };
      if (status?.code === 410) return { kind: 'expired' };
      return { kind: 'error', message: status?.message ?? 'watch error' };
    }
  }
}

export interface ReflectorOptions<T> {
  name: string;
  list(): Promise<ListResult<T>>;
  watch(resourceVersion: string, onEvent: (event: WatchEvent<T>) => void, signal: AbortSignal): Promise<void>;
  /** Called for every change, in order, with the object as it is now (undefined: gone). */
  onChange(change: Change<T>): void;
  clock: Clock;
  logger: Logger;
  onRestart?(delayMs: number): void;
}

class Expired extends Error {}

export class Reflector<T extends KubeObjectMeta> {
  readonly #o: ReflectorOptions<T>;
  readonly #held = new Map<string, T>();
  readonly #backoff = new Backoff();
  #abort = new AbortController();
  #stopped = false;
  #resourceVersion = '';
  #lastFailureAt = -Infinity;
  #timer: unknown;
  #syncedResolve!: () => void;
  /** Resolves after the first successful list. */
  readonly synced: Promise<void>;
  restarts = 0;
  isSynced = false;

  constructor(options: ReflectorOptions<T>) {
    this.#o = options;
    this.synced = new Promise((resolve) => (this.#syncedResolve = resolve));
  }

  get size(): number {
    return this.#held.size;
  }

  start(): void {
    void this.#run(true);
  }

  stop(): void {
    this.#stopped = true;
    this.#abort.abort();
    if (this.#timer !== undefined) this.#o.clock.clearTimeout(this.#timer);
  }

  #apply(change: Change<T>): void {
    if (change.object === undefined) {
      if (!this.#held.delete(change.key)) return;
    } else {
      this.#held.set(change.key, change.object);
    }
    try {
      this.#o.onChange(change);
    } catch (err) {
      this.#o.logger.error('applying a watched change failed', { watch: this.#o.name, key: change.key, error: (err as Error).message });
    }
  }

  async #run(relist: boolean): Promise<void> {
    if (this.#stopped) return;
    try {
      if (relist || this.#resourceVersion === '') {
        const list = await this.#o.list();
        for (const change of diffList(this.#held, list.items, list.resourceVersion)) this.#apply(change);
        this.#resourceVersion = list.resourceVersion;
        if (!this.isSynced) {
          this.isSynced = true;
          this.#syncedResolve();
        }
      }
      this.#abort = new AbortController();
      await this.#o.watch(
        this.#resourceVersion,
        (event) => {
          const outcome = classifyEvent(event);
          if (outcome.kind === 'expired') throw new Expired('resourceVersion expired');
          if (outcome.kind === 'error') throw new Error(outcome.message);
          if (outcome.kind === 'change') this.#apply(outcome.change);
          if (outcome.resourceVersion) this.#resourceVersion = outcome.resourceVersion;
        },
        this.#abort.signal,
      );
      // The server ended the watch (its timeout): resume from where it stopped.
      if (this.#o.clock.now() - this.#lastFailureAt > STABLE_MS) this.#backoff.reset();
      this.#schedule(0, false);
    } catch (err) {
      if (this.#stopped) return;
      if (err instanceof Expired || (err instanceof KubeApiError && err.statusCode === 410)) {
        this.#schedule(0, true);
        return;
      }
      const now = this.#o.clock.now();
      if (now - this.#lastFailureAt > STABLE_MS) this.#backoff.reset();
      this.#lastFailureAt = now;
      const delay = this.#backoff.next();
      this.restarts++;
      this.#o.onRestart?.(delay);
      this.#o.logger.warn('watch failed; restarting', { watch: this.#o.name, error: (err as Error).message, delay_ms: delay });
      // After a failure the list is read again: whatever happened meanwhile is diffed in.
      this.#schedule(delay, true);
    }
  }

  #schedule(delay: number, relist: boolean): void {
    if (this.#stopped) return;
    this.#timer = this.#o.clock.setTimeout(() => {
      this.#timer = undefined;
      void this.#run(relist);
    }, delay);
  }
}
