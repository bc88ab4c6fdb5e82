import { randomInt } from 'node:crypto';
import { ReplayError, limits, isoTimestamp, type FunctionRecord, type ThrowawayRuntime } from '@fnhost/core';
import type { Clock } from '@fnhost/core/clock.ts';
import { API_VERSION, KIND, type FunctionResource, type FunctionSpec } from '@fnhost/core/function-resource.ts';
import { functionIdOf } from '@fnhost/core/function-identity.ts';
import { ANNOTATION_EXPIRES_AT, LABEL_REPLAY_OF, LABEL_THROWAWAY, THROWAWAY_REPLAY, throwawayExpiry } from '@fnhost/core/replay-throwaway.ts';
import { CodeRefusedError, FunctionFailedToLoadError, loadFailureText } from '../functions/code-check.ts';
import { loadFailureOf } from '../executor/load-check.ts';
import { loadsAsModule } from '../executor/module-file.ts';
import type { Logger } from '../log.ts';
import type { EndpointIndex } from './endpoints.ts';
import type { FunctionCache } from './functions.ts';
import { KubeApiError, paths, type KubeClient } from './kube.ts';
import { FIELD_MANAGER, UNRUNNABLE_REASONS, keyOf, serviceNameOf } from './resource.ts';

// function:replay --code in cluster mode (docs/replay.md): the throwaway
// version is a short-lived Function resource in the original's namespace,
// which the operator reconciles like any other (Secret, ConfigMap, Deployment,
// Service, the namespace's NetworkPolicy), so its pod starts exactly as a
// deploy's would. The gateway creates it, waits (bounded) until its runtime
// has loaded the module, pins the one replay call to that pod, and deletes it
// whatever happened. It carries the original's functionId, so its pod holds
// the original's runtime token and KV namespace, as on one machine; labels
// keep it out of every listing (FunctionCache). A throwaway left behind by a
// gateway that died mid-replay is deleted past its expiry annotation by
// whichever gateway replica sweeps first.

/** How long a replay waits for the throwaway's runtime to load its module. */
export const THROWAWAY_READY_MS = 60_000;
/** At most this many throwaway versions of one function exist at a time (as this gateway sees them). */
export const MAX_THROWAWAYS_PER_FUNCTION = 2;
/** Kept past the longest its replay can take (ready wait plus the call), so the sweep never takes one in use. */
export const THROWAWAY_EXPIRY_SLACK_MS = 60_000;
/** How often leftovers past their expiry are looked for. */
export const THROWAWAY_SWEEP_MS = 60_000;
/** With no change of its pods or status, the waiting replay looks again this often (a runtime starts listening without an event). */
const RECHECK_MS = 500;
/** `<original>-rp-<5 random>` fits the 40 characters of a Function name. */
const SUFFIX = '-rp-';
const RANDOM_CHARS = 5;
const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

/** Five random characters of [a-z0-9] (the throwaway's name suffix). */
export function randomSuffix(): string {
  let s = '';
  for (let i = 0; i < RANDOM_CHARS; i++) s += ALPHABET[randomInt(ALPHABET.length)];
  return s;
}

/** The throwaway's name: the original's, cut to fit, then `-rp-` and the suffix. */
export function throwawayName(original: string, suffix: string): string {
  return `${original.slice(0, limits.MAX_FUNCTION_NAME_LENGTH - SUFFIX.length - suffix.length)}${SUFFIX}${suffix}`;
}

/**
 * The throwaway Function of `original` running `code`: the original's functionId, routes, env
 * (Secret and ConfigMap references included), timeout, memory and CPU; active, one pod, no
 * schedule (no CronJob), no autoscaling or scale to zero, no recording (the gateway records the
 * replay under the original). Owned by the original, so deleting that deletes it too.
 */
export function throwawayResource(original: FunctionResource, code: string, suffix: string, expiresAtMs: number): FunctionResource {
  const s = original.spec;
  const spec: FunctionSpec = { code, functionId: functionIdOf(original), active: true, replicas: 1 };
  if (s.routes !== undefined) spec.routes = s.routes;
  if (s.env !== undefined) spec.env = s.env;
  if (s.timeoutSeconds !== undefined) spec.timeoutSeconds = s.timeoutSeconds;
  if (s.memoryMiB !== undefined) spec.memoryMiB = s.memoryMiB;
  if (s.cpu !== undefined) spec.cpu = s.cpu;
  const { name, namespace = 'default', uid } = original.metadata;
  return {
    apiVersion: API_VERSION,
    kind: KIND,
    metadata: {
      name: throwawayName(name, suffix),
      namespace,
      labels: { [LABEL_THROWAWAY]: THROWAWAY_REPLAY, [LABEL_REPLAY_OF]: name },
      annotations: { [ANNOTATION_EXPIRES_AT]: isoTimestamp(expiresAtMs) },
      ...(uid === undefined ? {} : { ownerReferences: [{ apiVersion: API_VERSION, kind: KIND, name, uid }] }),
    },
    spec,
  };
}

/**
 * Ready=False reasons that mean the throwaway will not run in time: what makes any function
 * unrunnable, and what a call could wait out but a one-off replay should not (a quota, an image,
 * no node), so the caller learns why at once instead of after the bound.
 */
const REFUSED: ReadonlySet<string> = new Set([...UNRUNNABLE_REASONS, 'Forbidden', 'ImageUnavailable', 'Unschedulable']);

/** The error a throwaway's status gives, when it says the throwaway cannot run; undefined otherwise. */
export function statusRefusal(res: FunctionResource | undefined, original: string): Error | undefined {
  const c = res?.status?.conditions?.find((x) => x.type === 'Ready');
  if (res === undefined || c === undefined || c.status !== 'False' || !REFUSED.has(c.reason)) return undefined;
  if (c.observedGeneration !== undefined && res.metadata.generation !== undefined && c.observedGeneration !== res.metadata.generation) return undefined;
  if (c.reason === 'CodeDoesNotParse') return new CodeRefusedError('syntax', (c.message ?? '').replace(/^spec\.code does not parse: /, ''));
  return new ReplayError('replay_throwaway_not_ready', 503, `the throwaway version of ${original} (Function ${res.metadata.namespace}/${res.metadata.name}) cannot run: ${c.reason}: ${c.message ?? ''}`);
}

export interface ClusterThrowawaysOptions {
  client: Pick<KubeClient, 'request'>;
  cache: FunctionCache;
  endpoints: EndpointIndex;
  clock: Clock;
  logger: Logger;
  readyMs?: number;
  maxPerFunction?: number;
  /** Tests: a fixed name suffix. */
  suffix?: () => string;
}

export class ClusterThrowaways {
  readonly #o: ClusterThrowawaysOptions;
  /** `namespace/original` → throwaways of it this gateway has between create and delete */
  readonly #live = new Map<string, number>();
  #sweepTimer: unknown;
  #closed = false;
  created = 0;
  swept = 0;

  constructor(options: ClusterThrowawaysOptions) {
    this.#o = options;
  }

  /** Executor.throwaway in cluster mode: a pod of its own for `fn` (its code the version to try), ready for one call. */
  async start(fn: FunctionRecord): Promise<ThrowawayRuntime> {
    const { client, cache, clock } = this.#o;
    const original = cache.resource(fn.function_id);
    if (original === undefined) throw new ReplayError('replay_throwaway_not_ready', 503, `function ${fn.name} is not in the gateway's cache of Functions; try again`);
    const ownerKey = keyOf(fn.namespace, fn.name);
    const max = this.#o.maxPerFunction ?? MAX_THROWAWAYS_PER_FUNCTION;
    const existing = Math.max(this.#live.get(ownerKey) ?? 0, cache.throwaways({ namespace: fn.namespace, name: fn.name }).length);
    if (existing >= max) {
      throw new ReplayError('replay_throwaways_busy', 429, `function ${fn.name} already has ${existing} replays with code running (at most ${max} at a time); try again when one has finished`);
    }
    const readyMs = this.#o.readyMs ?? THROWAWAY_READY_MS;
    const deadline = clock.now() + readyMs;
    const desired = throwawayResource(original, fn.code, (this.#o.suffix ?? randomSuffix)(), deadline + fn.timeout_seconds * 1000 + THROWAWAY_EXPIRY_SLACK_MS);
    const { name, namespace } = desired.metadata as { name: string; namespace: string };
    this.#live.set(ownerKey, (this.#live.get(ownerKey) ?? 0) + 1);
    let deleted = false;
    const discard = async (): Promise<void> => {
      if (deleted) return;
      deleted = true;
      const left = (this.#live.get(ownerKey) ?? 1) - 1;
      if (left === 0) this.#live.delete(ownerKey);
      else this.#live.set(ownerKey, left);
      await this.#delete(namespace, name, 'replay done');
    };
    try {
      const created = await client.request<FunctionResource>('POST', paths.functions(namespace), { body: desired, query: { fieldManager: FIELD_MANAGER } });
      this.created++;
      cache.put(created);
      const origin = await this.#ready(fn, namespace, name, deadline);
      return { upstream: { origin, coldStart: true }, discard };
    } catch (err) {
      await discard();
      if (err instanceof KubeApiError) {
        throw new ReplayError('replay_throwaway_not_ready', 503, `the throwaway version of ${fn.name} could not be created: ${err.message}`);
      }
      throw err;
    }
  }

  /** Deletes a throwaway (its Deployment and the rest go with it); a failure is logged: the sweep deletes it at its expiry. */
  async #delete(namespace: string, name: string, why: string): Promise<void> {
    try {
      const answer = await this.#o.client.request<FunctionResource | { kind?: string }>('DELETE', paths.function(namespace, name), {
        body: { kind: 'DeleteOptions', apiVersion: 'v1', propagationPolicy: 'Background' },
      });
      // Counted no more at once (the per-function bound), before the watch says so: gone, or being deleted.
      if ((answer as FunctionResource).metadata?.deletionTimestamp !== undefined) this.#o.cache.put(answer as FunctionResource);
      else this.#o.cache.apply({ key: keyOf(namespace, name), object: undefined });
    } catch (err) {
      if (err instanceof KubeApiError && err.statusCode === 404) {
        this.#o.cache.apply({ key: keyOf(namespace, name), object: undefined });
        return;
      }
      this.#o.logger.warn('could not delete a throwaway Function; it is deleted at its expiry', { function: `${namespace}/${name}`, why, error: (err as Error).message });
    }
  }

  /** The origin of the throwaway's pod once its runtime has loaded the module; throws what stops it, or that it took too long. */
  async #ready(fn: FunctionRecord, namespace: string, name: string, deadline: number): Promise<string> {
    const { cache, endpoints, clock } = this.#o;
    const key = keyOf(namespace, name);
    const service = keyOf(namespace, serviceNameOf(name));
    let wake = (): void => undefined;
    const stopEndpoints = endpoints.subscribe((changed) => changed === service && wake());
    const stopCache = cache.onThrowaway((changed) => changed === key && wake());
    try {
      for (;;) {
        const refusal = statusRefusal(cache.throwaway(namespace, name), fn.name);
        if (refusal !== undefined) throw refusal;
        // A ready pod, else one still starting: its runtime answers once the module has loaded or failed to.
        for (const origin of [...endpoints.origins(service), ...endpoints.starting(service)]) {
          const left = deadline - clock.now();
          if (left <= 0) break;
          let failure;
          try {
            failure = await loadFailureOf({ origin }, left);
          } catch {
            continue; // not listening yet
          }
          if (failure === undefined) return origin;
          if (failure.kind === 'syntax' || failure.kind === 'no_handler') {
            throw new CodeRefusedError(failure.kind, loadFailureText(failure.kind, failure.message, fn.code, loadsAsModule(fn.code)));
          }
          throw new FunctionFailedToLoadError(failure.message);
        }
        const left = deadline - clock.now();
        if (left <= 0) {
          const c = cache.throwaway(namespace, name)?.status?.conditions?.find((x) => x.type === 'Ready');
          throw new ReplayError(
            'replay_throwaway_not_ready',
            504,
            `the throwaway version of ${fn.name} (Function ${namespace}/${name}) had no runtime pod with its module loaded after ${Math.round((this.#o.readyMs ?? THROWAWAY_READY_MS) / 1000)} s` +
              (c === undefined ? ': the operator has not reported on it (is it running?)' : ` (Ready ${c.status} ${c.reason}: ${c.message ?? ''})`),
          );
        }
        await new Promise<void>((resolve) => {
          const timer = clock.setTimeout(resolve, Math.min(left, RECHECK_MS));
          wake = () => {
            clock.clearTimeout(timer);
            resolve();
          };
        });
        wake = () => undefined;
      }
    } finally {
      stopEndpoints();
      stopCache();
    }
  }

  /** Deletes throwaways past their expiry (left by a gateway that died mid-replay); returns how many. */
  async sweep(): Promise<number> {
    const now = this.#o.clock.now();
    const expired = this.#o.cache.throwaways().filter((res) => throwawayExpiry(res, now).expired);
    for (const res of expired) {
      this.#o.logger.info('deleting a throwaway Function past its expiry', { function: `${res.metadata.namespace}/${res.metadata.name}`, expires_at: res.metadata.annotations?.[ANNOTATION_EXPIRES_AT] });
      await this.#delete(res.metadata.namespace ?? 'default', res.metadata.name, 'expired');
      this.swept++;
    }
    return expired.length;
  }

  /** Sweeps now and every THROWAWAY_SWEEP_MS until close(). */
  startSweeping(): void {
    const run = (): void => {
      if (this.#closed) return;
      this.sweep().catch((err: Error) => this.#o.logger.warn('throwaway sweep failed', { error: err.message })).finally(() => {
        if (!this.#closed) this.#sweepTimer = this.#o.clock.setTimeout(run, THROWAWAY_SWEEP_MS);
      });
    };
    run();
  }

  close(): void {
    this.#closed = true;
    this.#o.clock.clearTimeout(this.#sweepTimer);
  }
}
