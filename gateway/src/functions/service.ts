import { applyScalingChange, parseScalingChange } from '@fnhost/core/scaling.ts';
import { CodeRefusedError } from './code-check.ts';
import {
  CodeMissingError, ConcurrentChangeError, ConflictError, FunctionRefusedError, NotFoundError, ValidationError, isUuid, isoTimestamp, limits, newFunctionId,
  validateCodeSource, validateCron, validateEnv, validateFunctionName, validateMemoryMiB, validateRetention, validateRoutes,
  validateTimeoutSeconds, validateTimezone, validateRequestRecording, recordingOf, validateKvQuota, validateAsyncSettings,
  type CodeRef, type CodeSource, type Executor, type KvQuota, type FunctionRecord, type PreparedRuntime, type RetentionPolicy, type Schedule, type Stores,
} from '@fnhost/core';
import type { ApiKvUsage, ApiRollout } from '@fnhost/core/api.ts';
import type { Logger } from '../log.ts';

// Functions as the management API sees them. Every write goes to the store
// first, then to the in-memory index the invocation path reads (no store
// query per call), then to the executor and the scheduler. Writes are
// serialised so the index never disagrees with the store. On one machine the
// index is filled from the store at start and kept by these writes; in
// cluster mode it is the watch-backed cache of Function resources
// (gateway/src/cluster/functions.ts), which also follows kubectl's edits.

export const NAMESPACE = 'default';

const NAMESPACE_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/** Tries of one management write when other writers keep coming between its read and its write. */
const WRITE_ATTEMPTS = 4;
/** Management reads (GET of one function) reading the API server at once; more answer from the cache. */
const MAX_CATCH_UPS = 2;

/** Where the invocation path and the management API find functions without a store query. */
export interface FunctionIndex {
  get(functionId: string): FunctionRecord | undefined;
  getByName(namespace: string, name: string): FunctionRecord | undefined;
  /** Sorted by name; every namespace when none is given. */
  all(namespace?: string): FunctionRecord[];
  /** After a write through the store (a cache that the store itself updates may ignore it). */
  written(fn: FunctionRecord): void;
  removed(fn: FunctionRecord): void;
  /** Cluster mode: the rollout of the function's current spec (the operator's Ready condition). */
  rollout?(functionId: string): ApiRollout | undefined;
  /** Cluster mode: why a Function of that name exists but is served as nothing (FunctionIdTaken). */
  refusal?(namespace: string, name: string): FunctionRefusedError | undefined;
}

/** One machine's index: kept by the service's own writes. */
export class LocalFunctionIndex implements FunctionIndex {
  readonly #byId = new Map<string, FunctionRecord>();
  readonly #byName = new Map<string, string>();

  get(functionId: string): FunctionRecord | undefined {
    return this.#byId.get(functionId);
  }

  getByName(namespace: string, name: string): FunctionRecord | undefined {
    return this.#byId.get(this.#byName.get(`${namespace}/${name}`) ?? '');
  }

  all(namespace?: string): FunctionRecord[] {
    const out = [...this.#byId.values()].filter((fn) => namespace === undefined || fn.namespace === namespace);
    return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  written(fn: FunctionRecord): void {
    const old = this.#byId.get(fn.function_id);
    if (old !== undefined && (old.name !== fn.name || old.namespace !== fn.namespace)) this.#byName.delete(`${old.namespace}/${old.name}`);
    this.#byId.set(fn.function_id, fn);
    this.#byName.set(`${fn.namespace}/${fn.name}`, fn.function_id);
  }

  removed(fn: FunctionRecord): void {
    this.#byId.delete(fn.function_id);
    const key = `${fn.namespace}/${fn.name}`;
    if (this.#byName.get(key) === fn.function_id) this.#byName.delete(key);
  }
}

export interface ScheduleSink {
  sync(fn: FunctionRecord | null, functionId: string): void;
  nextRun(functionId: string): number | undefined;
}

export interface ApiFunction extends Omit<FunctionRecord, 'code' | 'schedule' | 'record_requests'> {
  code?: string;
  record_requests: NonNullable<FunctionRecord['record_requests']>;
  schedule: (Schedule & { next_run_at: string | null }) | null;
  total_executions: number;
  invocation_url: string;
  rollout?: ApiRollout;
  /** Single-function answers: the function's KV usage and the quota in force (docs/kv.md "Quotas"). */
  kv?: ApiKvUsage;
}


export interface FunctionServiceOptions {
  stores: Stores;
  executor: Executor;
  scheduler: ScheduleSink;
  /** Execution counts not yet flushed by the log writer. */
  pendingCount: (functionId: string) => number;
  executionUrl: () => string;
  maxTimeoutSeconds: number;
  now: () => number;
  logger: Logger;
  /** Default: a LocalFunctionIndex kept by this service's writes. */
  index?: FunctionIndex;
  /** The namespace of requests that name none (one machine: `default`, the only one). */
  defaultNamespace?: string;
  /** Whether namespaces other than the default exist (cluster mode). */
  multiNamespace?: boolean;
  /** The id of a new function (one machine: a random UUID; cluster: derived from namespace and name). */
  newFunctionId?: (namespace: string, name: string) => string;
  /** The KV quota a function's writes are held to (gateway/src/kv/settings.ts quotaFor); without it no usage is shown. */
  kvQuota?: (fn: FunctionRecord) => KvQuota;
}

const CREATE_FIELDS = new Set(['name', 'code', 'code_ref', 'env', 'routes', 'timeout_seconds', 'memory_mib', 'active', 'retention', 'schedule', 'record_requests', 'kv_quota', 'async']);
const PATCH_FIELDS = new Set(['code', 'code_ref', 'env', 'routes', 'timeout_seconds', 'memory_mib', 'record_requests', 'kv_quota', 'async']);

function checkFields(body: unknown, allowed: Set<string>, what: string): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new ValidationError(`${what} body must be a JSON object`);
  for (const key of Object.keys(body)) {
    if (!allowed.has(key)) throw new ValidationError(`${what}: unknown field "${key}"; allowed: ${[...allowed].join(', ')}`);
  }
  return body as Record<string, unknown>;
}

export function parseScheduleBody(raw: unknown): { cron: string; timezone: string } {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new ValidationError('schedule must be an object {cron, timezone?}');
  const { cron, timezone, ...rest } = raw as Record<string, unknown>;
  const extra = Object.keys(rest).filter((k) => k !== 'enabled');
  if (extra.length > 0) throw new ValidationError(`schedule: unknown field "${extra[0]}"; allowed: cron, timezone`);
  const tz = timezone === undefined ? 'UTC' : validateTimezone(timezone);
  return { cron: validateCron(cron, tz), timezone: tz };
}

export class FunctionService {
  readonly #o: FunctionServiceOptions;
  readonly #index: FunctionIndex;
  readonly defaultNamespace: string;
  #writes: Promise<unknown> = Promise.resolve();
  /** catchUp's reads of the API server in flight. */
  #catchingUp = 0;

  constructor(options: FunctionServiceOptions) {
    this.#o = options;
    this.#index = options.index ?? new LocalFunctionIndex();
    this.defaultNamespace = options.defaultNamespace ?? NAMESPACE;
  }

  /** Fills the index from the store (at start; in cluster mode: waits for the first list of Functions). */
  async load(): Promise<FunctionRecord[]> {
    const all = await this.#o.stores.functions.list();
    for (const fn of all) this.#index.written(fn);
    return all;
  }

  byId(functionId: string): FunctionRecord | undefined {
    return this.#index.get(functionId);
  }

  /** Every function, or those of one namespace. */
  all(namespace?: string): FunctionRecord[] {
    return this.#index.all(namespace === undefined ? undefined : this.namespace(namespace));
  }

  /** The namespace a request means: the given one (checked) or the default. */
  namespace(raw: unknown): string {
    if (raw === undefined || raw === '') return this.defaultNamespace;
    if (typeof raw !== 'string' || raw.length > 63 || !NAMESPACE_NAME.test(raw)) {
      throw new ValidationError(`namespace ${JSON.stringify(typeof raw === 'string' ? raw.slice(0, 80) : raw)} is invalid: a DNS-1123 label of at most 63 characters`);
    }
    if (!this.#o.multiNamespace && raw !== this.defaultNamespace) {
      throw new ValidationError(`namespace "${raw}" does not exist here: this gateway runs on one machine, where the only namespace is "${this.defaultNamespace}"`);
    }
    return raw;
  }

  /** `{ref}` is a name (in the namespace) or a UUID (in any namespace). */
  resolve(ref: string, namespace?: string): FunctionRecord {
    const ns = this.namespace(namespace);
    const fn = isUuid(ref) ? (this.#index.get(ref.toLowerCase()) ?? this.#index.get(ref)) : undefined;
    const found = fn ?? this.#index.getByName(ns, ref);
    if (found === undefined) {
      const refused = fn === undefined ? this.#index.refusal?.(ns, ref) : undefined;
      if (refused !== undefined) throw refused;
      const where = this.#o.multiNamespace ? ` in namespace "${ns}"` : '';
      throw new NotFoundError(`function "${ref.slice(0, 100)}" not found${where}`);
    }
    return found;
  }

  /**
   * Where the API server keeps what `ref` names: a known id's Function, else the ref read as a
   * name in the namespace (so a function another replica just created is found too); undefined
   * when it names nothing readable (not a valid name).
   */
  #apiKeyOf(ref: string, namespace: string | undefined): { namespace: string; name: string } | undefined {
    const known = isUuid(ref) ? (this.#index.get(ref.toLowerCase()) ?? this.#index.get(ref)) : undefined;
    if (known !== undefined) return { namespace: known.namespace, name: known.name };
    const ns = this.namespace(namespace);
    try {
      return { namespace: ns, name: validateFunctionName(ref) };
    } catch {
      return undefined;
    }
  }

  /**
   * Before a management read of one function (GET /functions/{ref}): in cluster mode, read it from
   * the API server into the cache, since a write the client just made through another replica
   * (activate, then get) may not have reached this one's watch yet. A ref that names nothing
   * readable is left to the cache, and so is everything when the API server does not answer, or
   * when MAX_CATCH_UPS reads are in flight already: the read is answered either way, and a flood of
   * GETs never holds more of the API client's requests than that.
   */
  async catchUp(ref: string, namespace?: string): Promise<void> {
    const store = this.#o.stores.functions;
    if (store.refresh === undefined || this.#catchingUp >= MAX_CATCH_UPS) return;
    const key = this.#apiKeyOf(ref, namespace);
    if (key === undefined) return;
    this.#catchingUp++;
    try {
      await store.refresh(key.namespace, key.name);
    } catch (err) {
      this.#o.logger.warn('reading a function from the API server failed; answering from the cache', { ...key, error: (err as Error).message });
    } finally {
      this.#catchingUp--;
    }
  }

  #serial<T>(work: () => Promise<T>): Promise<T> {
    const next = this.#writes.then(work, work);
    this.#writes = next.catch(() => undefined);
    return next;
  }

  #rollout(functionId: string): { rollout?: ApiRollout } {
    const rollout = this.#index.rollout?.(functionId);
    return rollout === undefined ? {} : { rollout };
  }

  async toApi(fn: FunctionRecord, includeCode: boolean): Promise<ApiFunction> {
    const total = (await this.#o.stores.counters.get(fn.function_id)) + this.#o.pendingCount(fn.function_id);
    const { code, schedule, ...rest } = fn;
    const next = schedule?.enabled && fn.active ? this.#o.scheduler.nextRun(fn.function_id) : undefined;
    return {
      ...rest,
      ...(includeCode && fn.code_ref === undefined ? { code } : {}),
      schedule: schedule === null ? null : { ...schedule, next_run_at: next === undefined ? null : isoTimestamp(next) },
      record_requests: recordingOf(fn),
      total_executions: total,
      invocation_url: `${this.#o.executionUrl()}/invoke/${fn.function_id}`,
      ...this.#rollout(fn.function_id),
      ...(includeCode ? await this.#kvUsage(fn) : {}),
    };
  }

  async #kvUsage(fn: FunctionRecord): Promise<{ kv?: ApiKvUsage }> {
    const quota = this.#o.kvQuota?.(fn);
    if (quota === undefined) return {};
    const now = this.#o.now();
    const usage = await this.#o.stores.kv.usage(fn.function_id, now);
    const kv: ApiKvUsage = { keys: usage.keys, bytes: usage.bytes, max_keys: quota.maxKeys, max_bytes: quota.maxBytes };
    if (quota.group?.maxBytes !== undefined) {
      kv.namespace_bytes = (await this.#o.stores.kv.groupUsage(quota.group.id, now)).bytes;
      kv.namespace_max_bytes = quota.group.maxBytes;
    }
    return { kv };
  }

  create(body: unknown, namespace?: string, options: CodeWriteOptions = {}): Promise<FunctionRecord> {
    const ns = this.namespace(namespace);
    const raw = checkFields(body, CREATE_FIELDS, 'create function');
    const name = validateFunctionName(raw.name);
    const source = validateCodeSource(raw, true)!;
    const env = validateEnv(raw.env);
    const routes = validateRoutes(raw.routes);
    const timeout = raw.timeout_seconds === undefined ? Math.min(limits.DEFAULT_TIMEOUT_SECONDS, this.#o.maxTimeoutSeconds) : validateTimeoutSeconds(raw.timeout_seconds, this.#o.maxTimeoutSeconds);
    const memory = raw.memory_mib === undefined ? limits.DEFAULT_MEMORY_MIB : validateMemoryMiB(raw.memory_mib);
    if (raw.active !== undefined && typeof raw.active !== 'boolean') throw new ValidationError(`active must be true or false, got ${JSON.stringify(raw.active)}`);
    const retention: RetentionPolicy = raw.retention === undefined ? { type: 'none' } : validateRetention(raw.retention);
    const schedule: Schedule | null = raw.schedule === undefined || raw.schedule === null ? null : { ...parseScheduleBody(raw.schedule), enabled: true };
    const recording = raw.record_requests === undefined ? undefined : validateRequestRecording(raw.record_requests);
    const kvQuota = raw.kv_quota === undefined ? undefined : validateKvQuota(raw.kv_quota);
    const asyncSettings = raw.async === undefined ? undefined : validateAsyncSettings(raw.async);
    return this.#serial(async () => {
      if (this.#index.getByName(ns, name) !== undefined) throw new ConflictError(`a function named "${name}" already exists${this.#o.multiNamespace ? ` in namespace "${ns}"` : ''}`);
      await this.#checkCodeRef(ns, source.code_ref);
      const now = isoTimestamp(this.#o.now());
      const fn: FunctionRecord = {
        function_id: this.#o.newFunctionId?.(ns, name) ?? newFunctionId(), name, namespace: ns, code: source.code, ...(source.code_ref === undefined ? {} : { code_ref: source.code_ref }), env, routes, timeout_seconds: timeout, memory_mib: memory,
        active: raw.active === undefined ? true : (raw.active as boolean), retention, schedule, created_at: now, updated_at: now,
        ...(recording === undefined ? {} : { record_requests: recording }),
        ...(kvQuota === undefined || Object.keys(kvQuota).length === 0 ? {} : { kv_quota: kvQuota }),
        ...(asyncSettings === undefined || Object.keys(asyncSettings).length === 0 ? {} : { async: asyncSettings }),
      };
      const prepared = await this.#prepared(fn, !options.allowLoadError);
      try {
        await this.#o.stores.functions.create(fn);
      } catch (err) {
        await prepared?.discard();
        throw err;
      }
      this.#index.written(fn);
      this.#o.scheduler.sync(fn, fn.function_id);
      this.#adopt(fn, prepared);
      this.#o.logger.info('function created', { function_id: fn.function_id, name });
      return fn;
    });
  }

  /**
   * A write of the code (create, deploy) is stored only once a runtime has loaded it (Executor.prepare,
   * one machine): a module that does not parse or exports no handler is refused with a 400 and the
   * function's current runtime keeps serving. The answer waits for the load the first call would
   * otherwise wait for, so create → first 200 stays one start (P5); the runtime is then the function's.
   */
  #prepare(fn: FunctionRecord): Promise<PreparedRuntime | undefined> {
    return this.#o.executor.prepare?.(fn) ?? Promise.resolve(undefined);
  }

  /**
   * #prepare, and a module whose top level threw while loading refused too when `refuseLoadError`
   * (a write of the code or the environment it loads with, not asked to store it anyway): the
   * user who just typed create learns it then, not from the first failing call.
   */
  async #prepared(fn: FunctionRecord, refuseLoadError: boolean): Promise<PreparedRuntime | undefined> {
    const prepared = await this.#prepare(fn);
    if (refuseLoadError && prepared?.loadError !== undefined) {
      await prepared.discard();
      throw new CodeRefusedError(prepared.loadTimedOut === true ? 'load_timeout' : 'load', prepared.loadError);
    }
    return prepared;
  }

  /** The stored record's runtime: the prepared one when active, then converge (a no-op when it is current). */
  #adopt(fn: FunctionRecord, prepared: PreparedRuntime | undefined): void {
    if (fn.active) prepared?.commit();
    else void prepared?.discard();
    this.#syncRuntime(fn);
  }

  /**
   * The function as stored now, for a read-modify-write: in cluster mode read again from the API
   * server first, since this gateway's cache may not have another gateway's last write yet (a
   * change decided on it could be a no-op that is not one, or undo that write).
   */
  async #fresh(ref: string, namespace: string | undefined): Promise<FunctionRecord> {
    const store = this.#o.stores.functions;
    const key = store.refresh === undefined ? undefined : this.#apiKeyOf(ref, namespace);
    if (key !== undefined) await store.refresh!(key.namespace, key.name);
    return this.resolve(ref, namespace);
  }

  /** A read-modify-write, made anew from a fresh read when the store finds another writer came between. */
  async #retryingConcurrent<T>(write: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await write();
      } catch (err) {
        if (!(err instanceof ConcurrentChangeError) || attempt >= WRITE_ATTEMPTS) throw err;
      }
    }
  }

  #replace(ref: string, namespace: string | undefined, change: (fn: FunctionRecord) => FunctionRecord | null, runtimeAffected: boolean, checkCode = false, options: CodeWriteOptions = {}): Promise<FunctionRecord> {
    return this.#serial(() => this.#retryingConcurrent(async () => {
      const current = await this.#fresh(ref, namespace);
      const updated = change(current);
      if (updated === null) return current;
      updated.updated_at = isoTimestamp(this.#o.now());
      // Only a change of what the module loads with (its code, its environment) is refused for a
      // load error: a new timeout for a function that already fails to load stores as asked.
      const loadInputsChanged = updated.code !== current.code || updated.code_ref?.digest !== current.code_ref?.digest || JSON.stringify(updated.env) !== JSON.stringify(current.env);
      if (updated.code_ref !== undefined && updated.code_ref.digest !== current.code_ref?.digest) await this.#checkCodeRef(updated.namespace, updated.code_ref);
      const prepared = checkCode ? await this.#prepared(updated, loadInputsChanged && !options.allowLoadError) : undefined;
      try {
        await this.#o.stores.functions.update(updated, current);
      } catch (err) {
        await prepared?.discard();
        throw err;
      }
      this.#index.written(updated);
      this.#o.scheduler.sync(updated, updated.function_id);
      if (runtimeAffected) {
        // Stopping is awaited (a deactivated function has no runtime once this answers); starting is not.
        if (updated.active) this.#adopt(updated, prepared);
        else {
          await prepared?.discard();
          await this.#o.executor.sync(updated.function_id, updated);
        }
      }
      return updated;
    }));
  }

  /**
   * A code_ref names code the namespace uploaded (else CodeMissingError, as for a digest never
   * stored: no team learns of another's code), of the size it says. The check also marks the blob
   * used now, so GC's grace covers the write that follows.
   */
  async #checkCodeRef(namespace: string, ref: CodeRef | undefined): Promise<void> {
    if (ref === undefined) return;
    const info = await this.#o.stores.code.use(namespace, ref.digest, this.#o.now());
    if (info === null) throw new CodeMissingError(ref.digest);
    if (info.size !== ref.size) throw new ValidationError(`code_ref.size is ${ref.size}, but code ${ref.digest} is ${info.size} bytes`);
  }

  #syncRuntime(fn: FunctionRecord): void {
    this.#o.executor.sync(fn.function_id, fn).catch((err: unknown) => {
      this.#o.logger.error('starting the runtime failed', { function_id: fn.function_id, error: (err as Error).message });
    });
  }

  update(ref: string, body: unknown, namespace?: string, options: CodeWriteOptions = {}): Promise<FunctionRecord> {
    const raw = checkFields(body, PATCH_FIELDS, 'update function');
    const patch: Partial<FunctionRecord> = {};
    const source: CodeSource | undefined = validateCodeSource(raw, false);
    if (raw.env !== undefined) patch.env = validateEnv(raw.env);
    if (raw.routes !== undefined) patch.routes = validateRoutes(raw.routes);
    if (raw.timeout_seconds !== undefined) patch.timeout_seconds = validateTimeoutSeconds(raw.timeout_seconds, this.#o.maxTimeoutSeconds);
    if (raw.memory_mib !== undefined) patch.memory_mib = validateMemoryMiB(raw.memory_mib);
    // Fields of record_requests not named keep their current values.
    const recording = raw.record_requests;
    if (raw.kv_quota !== undefined) validateKvQuota(raw.kv_quota); // refused before anything is written
    if (raw.async !== undefined) validateAsyncSettings(raw.async);
    return this.#replace(ref, namespace, (fn) => {
      const next: FunctionRecord = {
        ...fn, ...patch, ...(recording === undefined ? {} : { record_requests: validateRequestRecording(recording, recordingOf(fn)) }),
      };
      if (source !== undefined) {
        next.code = source.code;
        if (source.code_ref === undefined) delete next.code_ref;
        else next.code_ref = source.code_ref;
      }
      if (raw.kv_quota !== undefined) {
        const quota = validateKvQuota(raw.kv_quota, fn.kv_quota);
        if (Object.keys(quota).length === 0) delete next.kv_quota;
        else next.kv_quota = quota;
      }
      if (raw.async !== undefined) {
        const settings = validateAsyncSettings(raw.async, fn.async);
        if (Object.keys(settings).length === 0) delete next.async;
        else next.async = settings;
      }
      return next;
    }, true, true, options);
  }

  setActive(ref: string, active: boolean, namespace?: string): Promise<FunctionRecord> {
    return this.#replace(ref, namespace, (fn) => (fn.active === active ? null : { ...fn, active }), true);
  }

  setRetention(ref: string, body: unknown, namespace?: string): Promise<FunctionRecord> {
    const retention = validateRetention(body);
    return this.#serial(() => this.#retryingConcurrent(async () => {
      const current = await this.#fresh(ref, namespace);
      const updated: FunctionRecord = { ...current, retention, updated_at: isoTimestamp(this.#o.now()) };
      await this.#o.stores.functions.update(updated, current);
      this.#index.written(updated);
      // Existing records follow the new policy at once (time: expires_at rewritten; count: extras deleted).
      await this.#o.stores.logs.applyRetention(updated.function_id, retention, this.#o.now());
      return updated;
    }));
  }

  /**
   * Cluster mode: pods, autoscaling, scale to zero and CPU (core/src/scaling.ts). One machine takes
   * the CPU only (the runtime's cpu cgroup, docs/sandbox.md "CPU"): one runtime per function, no pods.
   */
  setScaling(ref: string, body: unknown, namespace?: string): Promise<FunctionRecord> {
    const change = parseScalingChange(body);
    // One machine: a CPU change is applied by the runtime's restart (its cgroup is set at start).
    const local = this.resolve(ref, namespace).scaling === undefined;
    return this.#replace(
      ref,
      namespace,
      (fn) => {
        if (fn.scaling === undefined) {
          const other = Object.keys(change).filter((k) => k !== 'cpu');
          if (other.length > 0) throw new ValidationError(`${other.join(', ')}: scaling settings apply to functions on Kubernetes (cluster mode); one machine runs one runtime per function and takes only cpu`);
          const cpu = change.cpu ?? { request: null, limit: null };
          const next = cpu.request === null && cpu.limit === null ? undefined : cpu;
          if (JSON.stringify(next) === JSON.stringify(fn.cpu)) return null;
          const { cpu: _old, ...rest } = fn;
          return next === undefined ? rest : { ...rest, cpu: next };
        }
        const scaling = applyScalingChange(fn.scaling, change);
        return JSON.stringify(scaling) === JSON.stringify(fn.scaling) ? null : { ...fn, scaling };
      },
      local,
    );
  }

  setSchedule(ref: string, body: unknown, namespace?: string): Promise<FunctionRecord> {
    const parsed = parseScheduleBody(body);
    return this.#replace(ref, namespace, (fn) => ({ ...fn, schedule: { ...parsed, enabled: true } }), false);
  }

  disableSchedule(ref: string, namespace?: string): Promise<FunctionRecord> {
    return this.#replace(ref, namespace, (fn) => (fn.schedule === null || !fn.schedule.enabled ? null : { ...fn, schedule: { ...fn.schedule, enabled: false } }), false);
  }

  delete(ref: string, namespace?: string): Promise<FunctionRecord> {
    return this.#serial(async () => {
      const fn = this.resolve(ref, namespace);
      await this.#o.stores.functions.delete(fn.function_id);
      this.#index.removed(fn);
      this.#o.scheduler.sync(null, fn.function_id);
      await this.#o.executor.sync(fn.function_id, null);
      await this.#o.stores.logs.deleteFunction(fn.function_id);
      await this.#o.stores.counters.delete(fn.function_id);
      await this.#o.stores.scheduleRuns.deleteFunction(fn.function_id);
      await this.#o.stores.asyncCalls.deleteFunction(fn.function_id);
      await this.#o.stores.kv.deleteNamespace(fn.function_id);
      const policy = await this.#o.stores.policies.get(fn.function_id);
      if (policy !== null) await this.#o.stores.policies.set(fn.function_id, null, 'system (function deleted)', this.#o.now());
      this.#o.logger.info('function deleted', { function_id: fn.function_id, name: fn.name });
      return fn;
    });
  }
}

/** How a create or update treats code that loads with an error (the API's `allow_load_error`). */
export interface CodeWriteOptions {
  /** Store code whose top level throws while loading (its calls answer 500 function_failed_to_load). */
  allowLoadError?: boolean;
}
