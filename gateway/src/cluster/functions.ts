import { ConcurrentChangeError, ConflictError, FnhostError, FunctionRefusedError, KubernetesQuotaError, NotFoundError, ValidationError, type FunctionRecord, type FunctionStore } from '@fnhost/core';
import type { FunctionIndex } from '../functions/service.ts';
import { KubeApiError, paths, type KubeClient } from './kube.ts';
import type { Change } from './reflector.ts';
import type { FunctionResource } from '@fnhost/core/function-resource.ts';
import { keyOf, recordFromResource, resourceForCreate, rolloutOf, specPatch } from './resource.ts';
import type { ApiRollout } from '@fnhost/core/api.ts';
import { LABEL_REPLAY_OF, isThrowaway } from '@fnhost/core/replay-throwaway.ts';
import { functionIdOwner } from '@fnhost/core/function-identity.ts';
import { claimOf, mayServe, type FunctionIdHome } from '@fnhost/core/function-id-home.ts';

/** Where the cache reads each id's home (the store's FunctionIdHomeStore). */
export interface HomeReader {
  get(functionId: string): Promise<FunctionIdHome | null>;
}

export interface FunctionCacheOptions {
  /** Each id's home, read when a claimant of it changes; without it (unit tests of other parts), the oldest claimant serves. */
  homes?: HomeReader;
  /** A failed read (the last known home stays; read again after retryMs). */
  onHomeError?: (functionId: string, err: unknown) => void;
  retryMs?: number;
}

// Functions in cluster mode. The truth is the Function resources in the API
// server; the gateway holds them in a cache fed by a watch (Reflector), so an
// invocation or a management read never asks the API server. Management
// writes go to the API server (kubectl and the CLI edit the same objects),
// each from a fresh read of the one Function (refresh) and conditional on its
// resourceVersion, since another replica's write reaches this cache late; the
// server's answer is put in the cache at once, so a write is visible to
// the next read on this gateway before its watch event arrives. An event
// older than what the cache holds (by resourceVersion) is ignored, so a
// delayed event never rolls back a newer write.

interface Entry {
  resource: FunctionResource;
  /** null: being deleted (kept as a tombstone so an older event cannot revive it). */
  record: FunctionRecord | null;
}

/** True when resourceVersion `a` is older than `b` (both etcd revisions; other shapes never count as older). */
export function olderVersion(a: string | undefined, b: string | undefined): boolean {
  if (a === undefined || b === undefined || !/^\d+$/.test(a) || !/^\d+$/.test(b)) return false;
  return BigInt(a) < BigInt(b);
}

function byName(a: FunctionRecord, b: FunctionRecord): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : a.namespace < b.namespace ? -1 : a.namespace > b.namespace ? 1 : 0;
}

export class FunctionCache implements FunctionIndex {
  readonly #byKey = new Map<string, Entry>();
  /**
   * Throwaway versions (replay --code, core/src/replay-throwaway.ts), held apart: they carry
   * their original's functionId and are no function of their own, so no listing, lookup by
   * id, token index or schedule ever sees them.
   */
  readonly #throwaways = new Map<string, FunctionResource>();
  readonly #throwawayListeners = new Set<(key: string) => void>();
  readonly #idToKey = new Map<string, string>();
  /** Every Function (throwaways apart) that claims each id: one of them owns it (#settleOwner). */
  readonly #claimants = new Map<string, Set<string>>();
  /** Each claimed id's home namespace as last read (null: none stored); absent: not read yet. */
  readonly #homes = new Map<string, string | null>();
  readonly #reading = new Map<string, Promise<void>>();
  readonly #readAgain = new Set<string>();
  readonly #options: FunctionCacheOptions;

  constructor(options: FunctionCacheOptions = {}) {
    this.#options = options;
  }
  #sorted: FunctionRecord[] | undefined;
  /** Grows with every change (runtime-token index rebuilds on change). */
  version = 0;

  /** A change from the watch. */
  apply(change: Change<FunctionResource>): void {
    if (this.#throwaways.has(change.key) || (change.object !== undefined && isThrowaway(change.object))) {
      this.#applyThrowaway(change.key, change.object);
      return;
    }
    if (change.object === undefined) {
      const held = this.#byKey.get(change.key);
      // A write of this gateway newer than the deletion (the name created again) stays.
      if (held !== undefined && !olderVersion(change.resourceVersion, held.resource.metadata.resourceVersion)) this.#drop(change.key, held);
      return;
    }
    this.put(change.object);
  }

  /** An object as the API server gave it (a write's answer or a watch event); older versions are ignored. */
  put(resource: FunctionResource): void {
    const key = keyOf(resource.metadata.namespace ?? 'default', resource.metadata.name);
    if (isThrowaway(resource)) {
      this.#applyThrowaway(key, resource);
      return;
    }
    const held = this.#byKey.get(key);
    if (held !== undefined) {
      // resourceVersions are etcd revisions, ordered across objects: an older one is stale even for another uid.
      if (olderVersion(resource.metadata.resourceVersion, held.resource.metadata.resourceVersion)) return;
      // The version held already (a refresh that found nothing new): no change, no home read.
      if (resource.metadata.resourceVersion !== undefined && resource.metadata.resourceVersion === held.resource.metadata.resourceVersion) return;
      this.#drop(key, held);
    }
    const record = recordFromResource(resource);
    this.#byKey.set(key, { resource, record });
    if (record !== null) {
      let claimants = this.#claimants.get(record.function_id);
      if (claimants === undefined) this.#claimants.set(record.function_id, (claimants = new Set()));
      claimants.add(key);
      this.#settleOwner(record.function_id);
      this.#readHome(record.function_id);
    }
    this.#changed();
  }

  #drop(key: string, held: Entry): void {
    this.#byKey.delete(key);
    if (held.record !== null) {
      const claimants = this.#claimants.get(held.record.function_id);
      claimants?.delete(key);
      if (claimants?.size === 0) {
        this.#claimants.delete(held.record.function_id);
        this.#homes.delete(held.record.function_id);
      }
      this.#settleOwner(held.record.function_id);
    }
    this.#changed();
  }

  /**
   * The id leads to the oldest of the Functions that may hold it: those of its home namespace, as
   * the store records it (core's mayServe; the operator applies the same home). A Function of
   * another namespace naming the id in spec.functionId neither takes its calls nor its runtime
   * token, also while the home's own Function is absent. The others are served as nothing.
   */
  #settleOwner(functionId: string): void {
    const keys = this.#claimants.get(functionId);
    let claimants = keys === undefined ? [] : [...keys].map((k) => this.#byKey.get(k)!.resource);
    if (this.#options.homes !== undefined) {
      const home = this.#homes.get(functionId);
      claimants = claimants.filter((c) => mayServe(claimOf(c), home));
    }
    const owner = functionIdOwner(claimants);
    if (owner === undefined) this.#idToKey.delete(functionId);
    else this.#idToKey.set(functionId, keyOf(owner.metadata.namespace ?? 'default', owner.metadata.name));
  }

  /** Reads the id's home (again: a claimant changed, so the operator may have recorded or moved it). */
  #readHome(functionId: string): void {
    const reader = this.#options.homes;
    if (reader === undefined) return;
    if (this.#reading.has(functionId)) {
      this.#readAgain.add(functionId);
      return;
    }
    const read = (async () => {
      try {
        const home = await reader.get(functionId);
        if (this.#claimants.has(functionId)) this.#homes.set(functionId, home?.namespace ?? null);
      } catch (err) {
        this.#options.onHomeError?.(functionId, err);
        // The last known home stays; an id not read yet serves only its own namespace/name meanwhile.
        setTimeout(() => this.#claimants.has(functionId) && this.#readHome(functionId), this.#options.retryMs ?? 5_000).unref();
      } finally {
        this.#reading.delete(functionId);
      }
      this.#settleOwner(functionId);
      this.#changed();
      if (this.#readAgain.delete(functionId)) this.#readHome(functionId);
    })();
    this.#reading.set(functionId, read);
  }

  /** Resolves once no home read is in flight (tests; the gateway never waits for it). */
  async homesRead(): Promise<void> {
    while (this.#reading.size > 0) await Promise.all([...this.#reading.values()]);
  }

  #changed(): void {
    this.version++;
    this.#sorted = undefined;
  }

  get(functionId: string): FunctionRecord | undefined {
    const key = this.#idToKey.get(functionId);
    return key === undefined ? undefined : (this.#byKey.get(key)?.record ?? undefined);
  }

  rollout(functionId: string): ApiRollout | undefined {
    const key = this.#idToKey.get(functionId);
    const held = key === undefined ? undefined : this.#byKey.get(key);
    return held?.record == null ? undefined : rolloutOf(held.resource);
  }

  getByName(namespace: string, name: string): FunctionRecord | undefined {
    const key = keyOf(namespace, name);
    const record = this.#byKey.get(key)?.record ?? undefined;
    // A Function refused another's id is served as nothing: its record would carry that id's logs and runtime.
    return record !== undefined && this.#idToKey.get(record.function_id) === key ? record : undefined;
  }

  /**
   * Why a Function that exists is served as nothing: a claimant of another's id (FunctionIdTaken).
   * The owner is not named: the caller may have no right to see its namespace.
   */
  refusal(namespace: string, name: string): FunctionRefusedError | undefined {
    const key = keyOf(namespace, name);
    const record = this.#byKey.get(key)?.record ?? undefined;
    if (record === undefined || this.#idToKey.get(record.function_id) === key) return undefined;
    return new FunctionRefusedError(
      'FunctionIdTaken',
      `function ${name} (namespace ${namespace}) is refused: FunctionIdTaken: its spec.functionId ${record.function_id} belongs to another Function, created earlier; ` +
        `this one gets no pods and no calls until that one is deleted or this one names another id (kubectl describe function ${name} -n ${namespace})`,
    );
  }

  /** The served Function of namespace/name as last seen (not a throwaway, not a claimant refused its id), or undefined. */
  resourceByName(namespace: string, name: string): FunctionResource | undefined {
    const key = keyOf(namespace, name);
    const held = this.#byKey.get(key);
    return held?.record != null && this.#idToKey.get(held.record.function_id) === key ? held.resource : undefined;
  }

  /** The resource behind a record (for patches and status). */
  resource(functionId: string): FunctionResource | undefined {
    const key = this.#idToKey.get(functionId);
    return key === undefined ? undefined : this.#byKey.get(key)?.resource;
  }

  all(namespace?: string): FunctionRecord[] {
    if (this.#sorted === undefined) {
      const records: FunctionRecord[] = [];
      for (const [key, e] of this.#byKey) if (e.record !== null && this.#idToKey.get(e.record.function_id) === key) records.push(e.record);
      this.#sorted = records.sort(byName);
    }
    return namespace === undefined ? this.#sorted : this.#sorted.filter((fn) => fn.namespace === namespace);
  }

  #applyThrowaway(key: string, resource: FunctionResource | undefined): void {
    const held = this.#throwaways.get(key);
    if (resource === undefined) this.#throwaways.delete(key);
    else if (held === undefined || !olderVersion(resource.metadata.resourceVersion, held.metadata.resourceVersion)) this.#throwaways.set(key, resource);
    else return;
    for (const listener of this.#throwawayListeners) listener(key);
  }

  /** A throwaway version as last seen, or undefined (never seen, or gone). */
  throwaway(namespace: string, name: string): FunctionResource | undefined {
    return this.#throwaways.get(keyOf(namespace, name));
  }

  /** Throwaway versions not being deleted: of one function (namespace and name), or all of them. */
  throwaways(of?: { namespace: string; name: string }): FunctionResource[] {
    const found: FunctionResource[] = [];
    for (const res of this.#throwaways.values()) {
      if (res.metadata.deletionTimestamp !== undefined) continue;
      if (of !== undefined && ((res.metadata.namespace ?? 'default') !== of.namespace || res.metadata.labels?.[LABEL_REPLAY_OF] !== of.name)) continue;
      found.push(res);
    }
    return found;
  }

  /** Calls `listener` with the key of every throwaway that changed or left; returns how to stop. */
  onThrowaway(listener: (key: string) => void): () => void {
    this.#throwawayListeners.add(listener);
    return () => this.#throwawayListeners.delete(listener);
  }

  /** The store already put the server's answer here. */
  written(): void {}

  removed(): void {}
}

/** How an API server refusal reads to a management-API caller. */
export function apiErrorFor(err: unknown, what: string): unknown {
  if (!(err instanceof KubeApiError)) return err;
  const detail = err.message.replace(/^\S+ \S+: \d+ /, '');
  switch (err.statusCode) {
    case 409:
      return err.reason === 'AlreadyExists' ? new ConflictError(`${what} already exists`) : new ConcurrentChangeError(`${what} was changed at the same time; try again (${detail})`);
    case 422:
    case 400:
      return new ValidationError(`the Kubernetes API server refused ${what}: ${detail}`);
    case 404:
      return new NotFoundError(`${what}: ${detail}`);
    case 403:
      // A ResourceQuota (docs/install.md, Functions per namespace) is no RBAC matter: say which quota.
      if (/exceeded quota/.test(detail)) return new KubernetesQuotaError(`the Kubernetes API server refused ${what}: ${detail}`);
      return new FnhostError('forbidden', 403, `the gateway may not change ${what} (RBAC): ${detail}`);
    default:
      return err;
  }
}

/** A merge patch that applies only to this resourceVersion of the object (the API server answers 409 otherwise). */
export function withPrecondition(patch: Record<string, unknown>, resourceVersion: string | undefined): Record<string, unknown> {
  if (resourceVersion === undefined) return patch;
  const metadata = (patch.metadata ?? {}) as Record<string, unknown>;
  return { ...patch, metadata: { ...metadata, resourceVersion } };
}

/**
 * core's FunctionStore seam over Function resources. Reads come from the
 * watch-backed cache (never an API request); writes go to the API server.
 */
export class KubeFunctionStore implements FunctionStore {
  readonly #client: KubeClient;
  readonly #cache: FunctionCache;
  readonly #synced: Promise<void>;

  constructor(client: KubeClient, cache: FunctionCache, synced: Promise<void>) {
    this.#client = client;
    this.#cache = cache;
    this.#synced = synced;
  }

  async create(fn: FunctionRecord): Promise<void> {
    let created: FunctionResource;
    try {
      created = await this.#client.request<FunctionResource>('POST', paths.functions(fn.namespace), { body: resourceForCreate(fn), query: { fieldManager: 'fnhost-gateway' } });
    } catch (err) {
      throw apiErrorFor(err, `function "${fn.name}" in namespace "${fn.namespace}"`);
    }
    this.#cache.put(created);
  }

  async get(functionId: string): Promise<FunctionRecord | null> {
    return this.#cache.get(functionId) ?? null;
  }

  async getByName(namespace: string, name: string): Promise<FunctionRecord | null> {
    return this.#cache.getByName(namespace, name) ?? null;
  }

  /** Waits for the first list of Functions, then answers from the cache. */
  async list(namespace?: string): Promise<FunctionRecord[]> {
    await this.#synced;
    return this.#cache.all(namespace);
  }

  /**
   * A merge patch of what changed from `basis` (else from the cached record), made only if the
   * Function is still the version the cache holds: its resourceVersion is the patch's
   * precondition, so a write another gateway or kubectl made meanwhile is never undone (409,
   * ConcurrentChangeError; the caller reads again and retries).
   */
  async update(fn: FunctionRecord, basis?: FunctionRecord): Promise<void> {
    const current = this.#cache.get(fn.function_id);
    const resource = this.#cache.resource(fn.function_id);
    if (current === undefined || resource === undefined) throw new NotFoundError(`function "${fn.name}" not found`);
    const from = basis ?? current;
    if (from !== current && specPatch(from, current, resource) !== null) {
      throw new ConcurrentChangeError(`function "${current.name}" in namespace "${current.namespace}" was changed while this write was being made; try again`);
    }
    const patch = specPatch(from, fn, resource);
    if (patch === null) return;
    let updated: FunctionResource;
    try {
      updated = await this.#client.request<FunctionResource>('PATCH', paths.function(current.namespace, current.name), {
        body: withPrecondition(patch, resource.metadata.resourceVersion),
        contentType: 'application/merge-patch+json',
        query: { fieldManager: 'fnhost-gateway' },
      });
    } catch (err) {
      throw apiErrorFor(err, `function "${current.name}" in namespace "${current.namespace}"`);
    }
    this.#cache.put(updated);
  }

  /** One GET of the Function into the cache (a newer version from the watch is kept); gone: dropped. */
  async refresh(namespace: string, name: string): Promise<void> {
    let resource: FunctionResource;
    try {
      resource = await this.#client.request<FunctionResource>('GET', paths.function(namespace, name));
    } catch (err) {
      if (err instanceof KubeApiError && err.statusCode === 404) {
        this.#cache.apply({ key: keyOf(namespace, name), object: undefined });
        return;
      }
      throw apiErrorFor(err, `function "${name}" in namespace "${namespace}"`);
    }
    this.#cache.put(resource);
  }

  async delete(functionId: string): Promise<boolean> {
    const current = this.#cache.get(functionId);
    if (current === undefined) return false;
    let answer: FunctionResource | { kind?: string };
    try {
      answer = await this.#client.request<FunctionResource | { kind?: string }>('DELETE', paths.function(current.namespace, current.name), {
        body: { kind: 'DeleteOptions', apiVersion: 'v1', propagationPolicy: 'Background' },
      });
    } catch (err) {
      if (err instanceof KubeApiError && err.statusCode === 404) return false;
      throw apiErrorFor(err, `function "${current.name}" in namespace "${current.namespace}"`);
    }
    // With the operator's finalizer the answer is the object with deletionTimestamp (a tombstone here);
    // without one it is a Status, and the object is gone.
    if ((answer as FunctionResource).metadata?.deletionTimestamp !== undefined) this.#cache.put(answer as FunctionResource);
    else this.#cache.apply({ key: keyOf(current.namespace, current.name), object: undefined });
    return true;
  }
}
