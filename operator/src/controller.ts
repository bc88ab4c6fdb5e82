import { makeInformer } from '@kubernetes/client-node';
import type { KubernetesObject } from '@kubernetes/client-node';
import { Backoff } from './clock.ts';
import type { Clock } from '@fnhost/core/clock.ts';
import { KubeApiError, KubeClient, paths } from './kube.ts';
import type { Logger } from './log.ts';
import type { Metrics } from './metrics.ts';
import { LABEL_FUNCTION, MANAGED_BY, keyOf } from './names.ts';
import { Reconciler } from './reconciler.ts';
import type { FunctionIdIndex } from './identities.ts';
import type { FunctionResource } from '@fnhost/core/function-resource.ts';
import { functionIdOf } from '@fnhost/core/function-identity.ts';
import { isThrowaway } from '@fnhost/core/replay-throwaway.ts';
import { WorkQueue } from './workqueue.ts';

// Informer handlers only put keys on the queue; workers take keys and call
// reconcile. A watch that ends in an error is started again after a capped,
// growing delay (client-node's informer stops on errors other than 410 and
// client-side timeouts).

export const WATCH_RESTART_BASE_MS = 500;
export const WATCH_RESTART_MAX_MS = 30_000;
/** A watch that ran this long without an error starts its backoff again from the base. */
export const WATCH_STABLE_MS = 60_000;

export interface WatchSpec {
  name: string;
  path: string;
  labelSelector?: string;
  /** The queue key an event maps to, or null to ignore it. */
  keyFor(obj: KubernetesObject): string | null;
}

export function functionKey(obj: KubernetesObject): string | null {
  return obj.metadata?.name ? keyOf(obj.metadata.namespace, obj.metadata.name) : null;
}

/** Owned objects carry the Function's name as a label; their events requeue the Function. */
export function ownerKey(obj: KubernetesObject): string | null {
  const fnName = obj.metadata?.labels?.[LABEL_FUNCTION];
  return fnName ? keyOf(obj.metadata?.namespace, fnName) : null;
}

export interface Restartable {
  on(verb: 'error', cb: (err?: unknown) => void): void;
  start(): Promise<void>;
}

/**
 * Starts a watch again after it ends in an error: after 0.5 s, doubling up to
 * 30 s while errors keep coming; a watch that ran a minute without an error
 * starts again from 0.5 s.
 */
export function superviseWatch(
  informer: Restartable,
  opts: { clock: Clock; stopped: () => boolean; onRestartScheduled?: (err: unknown, delayMs: number) => void; onRestartFailed?: (err: unknown) => void },
): void {
  const backoff = new Backoff(WATCH_RESTART_BASE_MS, WATCH_RESTART_MAX_MS);
  let lastErrorAt = -Infinity;
  let restartPending = false;
  informer.on('error', (err?: unknown) => {
    // One restart at a time: a second start() would abort the first one's request.
    if (opts.stopped() || restartPending) return;
    restartPending = true;
    const now = opts.clock.now();
    if (now - lastErrorAt > WATCH_STABLE_MS) backoff.reset();
    lastErrorAt = now;
    const delay = backoff.next();
    opts.onRestartScheduled?.(err, delay);
    opts.clock.setTimeout(() => {
      restartPending = false;
      if (!opts.stopped()) informer.start().catch((e: unknown) => opts.onRestartFailed?.(e));
    }, delay);
  });
}

export class Controller {
  readonly queue: WorkQueue;
  readonly #client: KubeClient;
  readonly #reconciler: Reconciler;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #metrics: Metrics;
  readonly #workers: number;
  readonly #watches: WatchSpec[];
  readonly #informers: Array<{ stop(): Promise<void> }> = [];
  readonly #synced = new Set<string>();
  #stopped = false;
  #running: Promise<void>[] = [];

  readonly #identities: FunctionIdIndex | undefined;

  constructor(deps: { client: KubeClient; reconciler: Reconciler; clock: Clock; log: Logger; metrics: Metrics; workers: number; watchNamespace: string; identities?: FunctionIdIndex }) {
    this.#identities = deps.identities;
    this.#client = deps.client;
    this.#reconciler = deps.reconciler;
    this.#clock = deps.clock;
    this.#log = deps.log;
    this.#metrics = deps.metrics;
    this.#workers = deps.workers;
    this.queue = new WorkQueue({ clock: deps.clock, baseDelayMs: 100, maxDelayMs: 300_000 });
    const ns = deps.watchNamespace || undefined;
    const owned = `app.kubernetes.io/managed-by=${MANAGED_BY}`;
    this.#watches = [
      { name: 'functions', path: paths.functions(ns), keyFor: functionKey },
      { name: 'deployments', path: paths.deployments(ns), labelSelector: owned, keyFor: ownerKey },
      { name: 'cronjobs', path: paths.cronJobs(ns), labelSelector: owned, keyFor: ownerKey },
    ];
    this.#metrics.gauge('fnhost_operator_queue_depth', 'Keys waiting in the work queue.', () => this.queue.length);
  }

  /** True once every informer has listed once. */
  get synced(): boolean {
    return this.#synced.size === this.#watches.length;
  }

  async start(): Promise<void> {
    for (const w of this.#watches) this.#startInformer(w);
    for (let i = 0; i < this.#workers; i++) this.#running.push(this.#work(i));
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.queue.shutDown();
    await Promise.all(this.#informers.map((i) => i.stop().catch(() => {})));
    await Promise.all(this.#running);
  }

  #startInformer(w: WatchSpec): void {
    const log = this.#log.child({ watch: w.name });
    const listFn = async () => {
      const list = await this.#client.request('GET', w.path, { query: { labelSelector: w.labelSelector } });
      this.#synced.add(w.name);
      return list;
    };
    const informer = makeInformer(this.#client.kc, w.path, listFn, w.labelSelector);
    const enqueue = (obj: KubernetesObject) => {
      const key = w.keyFor(obj);
      if (key) this.queue.add(key);
    };
    if (w.name === 'functions' && this.#identities !== undefined) {
      const identities = this.#identities;
      // The index first, so the reconcile the event queues sees it.
      informer.on('add', (obj) => identities.put(obj as unknown as FunctionResource));
      informer.on('update', (obj) => {
        const fn = obj as unknown as FunctionResource;
        identities.put(fn);
        // A claimant's change may move its id's home (a granted move): the others look again.
        if (!isThrowaway(fn)) for (const other of identities.claimants(functionIdOf(fn))) if (other !== w.keyFor(obj)) this.queue.add(other);
      });
      informer.on('delete', (obj) => {
        const key = w.keyFor(obj);
        // The id's next owner (if any) takes it now, not at its next recheck.
        if (key) for (const other of identities.remove(key)) this.queue.add(other);
      });
    }
    informer.on('add', enqueue);
    informer.on('update', enqueue);
    informer.on('delete', enqueue);
    superviseWatch(informer, {
      clock: this.#clock,
      stopped: () => this.#stopped,
      onRestartScheduled: (err, delayMs) => {
        this.#metrics.inc('fnhost_operator_watch_restarts_total', 'Watches started again after an error.', { watch: w.name });
        log.warn('watch failed; restarting', { error: describe(err), delayMs });
      },
      onRestartFailed: (err) => log.error('watch restart failed', { error: describe(err) }),
    });
    this.#informers.push(informer);
    informer.start().catch((e: unknown) => log.error('watch start failed', { error: describe(e) }));
  }

  async #work(worker: number): Promise<void> {
    for (;;) {
      const key = await this.queue.get();
      if (key === undefined) return;
      const started = this.#clock.now();
      try {
        const result = await this.#reconciler.reconcile(key);
        this.queue.forget(key);
        if (result.requeueAfterMs !== undefined) this.queue.addAfter(key, result.requeueAfterMs);
        this.#metrics.inc('fnhost_operator_reconcile_total', 'Reconciles by result.', { result: 'success' });
        this.#log.debug('reconciled', { key, worker, outcome: result.outcome, ms: this.#clock.now() - started });
      } catch (err) {
        const delay = this.queue.addRateLimited(key);
        const conflict = err instanceof KubeApiError && err.statusCode === 409;
        this.#metrics.inc('fnhost_operator_reconcile_total', 'Reconciles by result.', { result: conflict ? 'conflict' : 'error' });
        (conflict ? this.#log.debug : this.#log.warn)('reconcile failed; retrying', { key, error: describe(err), retryInMs: delay });
      } finally {
        this.#metrics.inc('fnhost_operator_reconcile_seconds_total', 'Time spent reconciling.', {}, (this.#clock.now() - started) / 1000);
        this.queue.done(key);
      }
    }
  }
}

export function describe(err: unknown): string {
  if (err instanceof Error) return err.message;
  if (err && typeof err === 'object' && 'message' in err) return String((err as { message: unknown }).message);
  return String(err);
}
