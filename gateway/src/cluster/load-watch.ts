import type { Clock } from '@fnhost/core/clock.ts';
import type { FunctionResource, LoadFailure } from '@fnhost/core/function-resource.ts';
import type { LoadFailureKind } from '../functions/code-check.ts';
import type { Logger } from '../log.ts';

// Cluster mode has no load check at the API (docs/cluster-mode.md "Code that fails to load"): a
// Function's module is first loaded by its pods. This watch asks every starting runtime pod of
// every function, once, how its module load ended (GET /healthz with x-fnhost-wait-load: the
// runtime answers when the load has settled, its own load deadline included) and, when it failed,
// writes the failure into the Function's status (`status.loadFailure`: the pod, the kind and the
// runtime's text, which names the line and column in the user's file). The operator, which alone
// may record Events, turns it into the condition CodeLoaded=False and Ready=False LoadFailed for a
// pod of the current code (operator/src/load-failure.ts). The gateway reaches the pods already (it
// calls them); the operator does not (the namespace's NetworkPolicy admits only the gateway), and
// a container's termination message would need the runtime to exit, which is a crash loop.
//
// Bounds: one question per pod (remembered, at most MAX_REMEMBERED pods), at most MAX_IN_FLIGHT
// questions at once (the rest wait in a queue of at most MAX_QUEUED pods; past it a pod is asked
// when its slice changes again), an unreachable pod asked again after RETRY_MS at most
// MAX_ATTEMPTS times, and a status write only when the status does not already name that pod's failure.

export const MAX_IN_FLIGHT = 32;
export const MAX_QUEUED = 1024;
export const MAX_REMEMBERED = 10_000;
export const RETRY_MS = 2_000;
export const MAX_ATTEMPTS = 30;
/** The runtime's text is the module's error and its position; a longer one is cut here. */
export const MAX_MESSAGE_CHARS = 2_048;
/**
 * A load still unsettled this long after the function's own time limit is a failure: the runtime
 * ends a load that blocks its thread past the time limit itself, but a top-level await that
 * never settles while the loop stays alive (a network call that never answers) keeps it starting
 * for ever. The slack covers the runtime's own start and a code fetch (30 s each at most).
 */
export const LOAD_SLACK_MS = 60_000;

export type LoadAnswer = { kind: LoadFailureKind; message: string } | undefined;

export interface LoadWatchOptions {
  /** Services whose starting pods changed are told here (EndpointIndex.subscribe). */
  subscribe(listener: (service: string) => void): () => void;
  /** The starting pods of a Service, named (EndpointIndex.startingPods). */
  startingPods(service: string): Array<{ origin: string; pod: string }>;
  /** The Function behind a Service key `namespace/fn-<name>`, or undefined (not a function's, or a throwaway's). */
  functionOf(service: string): FunctionResource | undefined;
  /** How the pod's module load ended (load-check.ts loadFailureOf); rejects when the pod cannot be reached. */
  ask(origin: string, timeoutMs: number): Promise<LoadAnswer>;
  /** The owner's text of a failure (code-check.ts loadFailureText: a syntax error placed in inline code). */
  text?(fn: FunctionResource, answer: NonNullable<LoadAnswer>): string;
  /** Merge-patches status.loadFailure of the Function. */
  report(fn: FunctionResource, failure: LoadFailure): Promise<void>;
  clock: Clock;
  logger: Logger;
}

/** The status value for a pod's failure, or undefined when the status already names it (no write). */
export function failureToReport(fn: FunctionResource, pod: string, answer: NonNullable<LoadAnswer>, text: string, nowMs: number): LoadFailure | undefined {
  const message = text.length > MAX_MESSAGE_CHARS ? `${text.slice(0, MAX_MESSAGE_CHARS)}…` : text;
  const current = fn.status?.loadFailure;
  if (current?.pod === pod && current.message === message && current.kind === answer.kind) return undefined;
  return { pod, kind: answer.kind, message, at: new Date(nowMs).toISOString().replace(/\.\d{3}Z$/, 'Z') };
}

export class LoadWatch {
  readonly #o: LoadWatchOptions;
  /** pod key (origin + name) → settled (loaded or reported), in insertion order for forgetting. */
  readonly #done = new Set<string>();
  readonly #attempts = new Map<string, number>();
  readonly #queue = new Map<string, { service: string; origin: string; pod: string }>();
  readonly #asking = new Set<string>();
  readonly #timers = new Set<unknown>();
  #unsubscribe: (() => void) | undefined;
  #closed = false;
  /** Questions sent, failures written, writes that failed (metrics). */
  asked = 0;
  reported = 0;
  reportFailures = 0;

  constructor(options: LoadWatchOptions) {
    this.#o = options;
  }

  start(): void {
    this.#unsubscribe = this.#o.subscribe((service) => this.#look(service));
  }

  close(): void {
    this.#closed = true;
    this.#unsubscribe?.();
    for (const t of this.#timers) this.#o.clock.clearTimeout(t);
    this.#timers.clear();
    this.#queue.clear();
  }

  get inFlight(): number {
    return this.#asking.size;
  }

  #look(service: string): void {
    if (this.#closed || this.#o.functionOf(service) === undefined) return;
    for (const { origin, pod } of this.#o.startingPods(service)) {
      const key = `${pod} ${origin}`;
      if (this.#done.has(key) || this.#asking.has(key) || this.#queue.has(key)) continue;
      if (this.#queue.size >= MAX_QUEUED) return;
      this.#queue.set(key, { service, origin, pod });
    }
    this.#pump();
  }

  #pump(): void {
    while (!this.#closed && this.#asking.size < MAX_IN_FLIGHT && this.#queue.size > 0) {
      const [key, item] = this.#queue.entries().next().value!;
      this.#queue.delete(key);
      this.#asking.add(key);
      void this.#askOne(key, item).finally(() => {
        this.#asking.delete(key);
        this.#pump();
      });
    }
  }

  async #askOne(key: string, item: { service: string; origin: string; pod: string }): Promise<void> {
    const fn = this.#o.functionOf(item.service);
    // The pod left (it became ready, or was deleted) or its function did: nothing to ask.
    if (fn === undefined || !this.#o.startingPods(item.service).some((p) => p.origin === item.origin && p.pod === item.pod)) return;
    this.asked++;
    let answer: LoadAnswer;
    try {
      answer = await this.#o.ask(item.origin, (fn.spec.timeoutSeconds ?? 30) * 1000 + LOAD_SLACK_MS);
    } catch (err) {
      if ((err as Error).name === 'TimeoutError') {
        answer = { kind: 'failed', message: `the module did not finish loading within ${fn.spec.timeoutSeconds ?? 30} s (the function's time limit) and ${LOAD_SLACK_MS / 1000} s for the pod's start: its top level awaits something that never settles` };
      } else {
        // Not listening yet (a code fetch, a slow start) or unreachable: asked again a little later, a bounded number of times.
        return this.#retry(key, item.service);
      }
    }
    if (answer !== undefined) {
      const current = this.#o.functionOf(item.service) ?? fn;
      const failure = failureToReport(current, item.pod, answer, this.#o.text?.(current, answer) ?? answer.message, this.#o.clock.now());
      if (failure !== undefined) {
        try {
          await this.#o.report(current, failure);
          this.reported++;
        } catch (err) {
          this.reportFailures++;
          this.#o.logger.warn('writing a pod\'s load failure into its Function\'s status failed; asked again in 2 s', { function: item.service, pod: item.pod, error: (err as Error).message });
          return this.#retry(key, item.service);
        }
      }
    }
    this.#settle(key);
  }

  #retry(key: string, service: string): void {
    const attempts = (this.#attempts.get(key) ?? 0) + 1;
    this.#attempts.set(key, attempts);
    if (attempts >= MAX_ATTEMPTS) return this.#settle(key);
    const timer = this.#o.clock.setTimeout(() => {
      this.#timers.delete(timer);
      this.#look(service);
    }, RETRY_MS);
    this.#timers.add(timer);
  }

  #settle(key: string): void {
    this.#attempts.delete(key);
    this.#done.add(key);
    if (this.#done.size > MAX_REMEMBERED) this.#done.delete(this.#done.values().next().value!);
  }
}
