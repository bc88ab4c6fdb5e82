import { functionIdOf } from '@fnhost/core/function-identity.ts';
import { API_VERSION, KIND, type FunctionEnvVar, type FunctionResource, type FunctionSpec } from '@fnhost/core/function-resource.ts';
import { limits, isoTimestamp, validateCallbackHosts, validateRequestRecording, type FunctionKvQuota, type FunctionAsyncSettings, type FunctionRecord, type RequestRecording, type RetentionPolicy, type Schedule } from '@fnhost/core';
import type { ApiRollout } from '@fnhost/core/api.ts';
import { DEFAULT_IDLE_SECONDS, DEFAULT_MAX_REPLICAS, DEFAULT_MIN_REPLICAS, DEFAULT_TARGET_CONCURRENCY, type FunctionScalingSettings } from '@fnhost/core/scaling.ts';

// The pure mapping between the Function custom resource (its shape, shared
// with the operator, is core/src/function-resource.ts) and core's
// FunctionRecord, as the cluster-mode gateway reads and writes it. The two
// derivations the gateway and the operator must agree on (the functionId and
// the per-function tokens) come from core/src/function-identity.ts.

/** Field manager of every write the gateway makes (spec edits, status feedback). */
export const FIELD_MANAGER = 'fnhost-gateway';
/** When the management API last changed the Function (FunctionRecord.updated_at). */
export const ANNOTATION_UPDATED_AT = 'fnhost.dev/updated-at';

export { FUNCTION_ID_NAMESPACE, derivedFunctionId, deriveToken, functionIdOf, uuidV5, type TokenPurpose } from '@fnhost/core/function-identity.ts';

/** The Service the operator makes for a function; its EndpointSlices carry this name. */
export function serviceNameOf(functionName: string): string {
  return `fn-${functionName}`;
}

/** `namespace/name` */
export function keyOf(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

function retentionOf(spec: FunctionSpec): RetentionPolicy {
  const r = spec.retention;
  if (r?.type === 'time' && typeof r.days === 'number') return { type: 'time', days: r.days };
  if (r?.type === 'count' && typeof r.count === 'number') return { type: 'count', count: r.count };
  return { type: 'none' };
}

/**
 * spec.recordRequests as the gateway applies it. The CRD checks shapes and bounds but cannot parse
 * a JSON path; a policy core refuses (kubectl applied it) turns recording off rather than store
 * what it was meant to mask.
 */
function recordingOf(spec: FunctionSpec): RequestRecording | undefined {
  const r = spec.recordRequests;
  if (r === undefined || r === null) return undefined;
  try {
    return validateRequestRecording({
      enabled: r.enabled ?? false,
      max_body_bytes: r.maxBodyBytes ?? limits.MAX_RECORD_BODY_BYTES,
      redact: { headers: r.redact?.headers ?? [], json_paths: r.redact?.jsonPaths ?? [] },
    });
  } catch {
    return undefined;
  }
}

function specRecording(r: RequestRecording): NonNullable<FunctionSpec['recordRequests']> {
  return { enabled: r.enabled, maxBodyBytes: r.max_body_bytes, redact: { headers: r.redact.headers, jsonPaths: r.redact.json_paths } };
}

/** spec.kvQuota as the function's kv_quota (the CRD checks the bounds). */
function kvQuotaOf(spec: FunctionSpec): { kv_quota?: FunctionKvQuota } {
  const q = spec.kvQuota;
  if (q === undefined || q === null) return {};
  const out: FunctionKvQuota = {};
  if (typeof q.maxBytes === 'number') out.max_bytes = q.maxBytes;
  if (typeof q.maxKeys === 'number') out.max_keys = q.maxKeys;
  return Object.keys(out).length === 0 ? {} : { kv_quota: out };
}

/** spec.async as the function's async settings (the CRD checks the bounds). */
function asyncOf(spec: FunctionSpec): { async?: FunctionAsyncSettings } {
  const a = spec.async;
  if (a === undefined || a === null) return {};
  const out: FunctionAsyncSettings = {};
  if (typeof a.maxRetries === 'number') out.max_retries = a.maxRetries;
  if (typeof a.maxAgeSeconds === 'number') out.max_age_seconds = a.maxAgeSeconds;
  // Checked again by core's rules (the CRD's pattern is coarser): an entry they refuse is left out, so it admits no callback.
  if (Array.isArray(a.callbackHosts)) {
    const hosts = a.callbackHosts.flatMap((h) => {
      try {
        return validateCallbackHosts([h]);
      } catch {
        return [];
      }
    });
    if (hosts.length > 0) out.callback_hosts = hosts;
  }
  return Object.keys(out).length === 0 ? {} : { async: out };
}

function specAsync(a: FunctionAsyncSettings | undefined): { maxRetries: number | null; maxAgeSeconds: number | null; callbackHosts: string[] | null } {
  return { maxRetries: a?.max_retries ?? null, maxAgeSeconds: a?.max_age_seconds ?? null, callbackHosts: a?.callback_hosts ?? null };
}

function specKvQuota(q: FunctionKvQuota | undefined): { maxBytes: number | null; maxKeys: number | null } {
  return { maxBytes: q?.max_bytes ?? null, maxKeys: q?.max_keys ?? null };
}

function scheduleOf(spec: FunctionSpec): Schedule | null {
  const s = spec.schedule;
  if (s === undefined || s === null || typeof s.cron !== 'string') return null;
  return { cron: s.cron.trim(), timezone: s.timezone ?? 'UTC', enabled: s.suspend !== true };
}

function timestamp(raw: string | undefined, fallback: string): string {
  if (raw === undefined) return fallback;
  const ms = Date.parse(raw);
  return Number.isFinite(ms) ? isoTimestamp(ms) : fallback;
}

/**
 * When the Function's spec last changed, whoever changed it: the newest of the
 * gateway's annotation (milliseconds) and the times of the managedFields
 * entries that own spec fields (seconds; kubectl edit, apply, a GitOps
 * controller), never status writes nor metadata-only ones (the operator's
 * finalizer). Falls back to the creation time.
 */
export function updatedAt(res: FunctionResource, created: string): string {
  let newest = Date.parse(timestamp(res.metadata.annotations?.[ANNOTATION_UPDATED_AT], created));
  for (const entry of res.metadata.managedFields ?? []) {
    if (entry.subresource === 'status' || entry.time === undefined || entry.fieldsV1 === undefined || !Object.hasOwn(entry.fieldsV1, 'f:spec')) continue;
    const at = Date.parse(entry.time);
    // A spec change in the same second as the annotation's millisecond time is that write.
    if (Number.isFinite(at) && at > newest && Math.floor(at / 1000) !== Math.floor(newest / 1000)) newest = at;
  }
  return isoTimestamp(newest);
}

/** Rollout of the Function's current spec as the operator reports it (status); the CLI's deploy waits on it. */
export function rolloutOf(res: FunctionResource): ApiRollout {
  const condition = res.status?.conditions?.find((c) => c.type === 'Ready');
  return {
    generation: res.metadata.generation ?? 0,
    // The condition's own observedGeneration: the Ready verdict is about that spec.
    observed_generation: condition?.observedGeneration ?? 0,
    ready: condition?.status ?? 'Unknown',
    reason: condition?.reason ?? '',
    message: condition?.message ?? '',
  };
}

/**
 * The record the management API and the invocation path see. A Function being
 * deleted (deletionTimestamp set, the operator's finalizer still on it) is no
 * function any more: null. Env entries taken from Secrets or ConfigMaps
 * (valueFrom) are resolved only in the pod and do not appear in `env`.
 */
export function recordFromResource(res: FunctionResource): FunctionRecord | null {
  if (res.metadata.deletionTimestamp !== undefined) return null;
  const spec = res.spec ?? ({} as FunctionSpec);
  // Exactly one of the two (the CRD's rule); neither is no function the gateway can serve.
  if (typeof spec.code !== 'string' && spec.codeRef == null) return null;
  const namespace = res.metadata.namespace ?? 'default';
  const env: Record<string, string> = {};
  for (const e of spec.env ?? []) if (e.valueFrom === undefined) env[e.name] = e.value ?? '';
  const created = timestamp(res.metadata.creationTimestamp, isoTimestamp(0));
  const recording = recordingOf(spec);
  return {
    function_id: functionIdOf(res),
    name: res.metadata.name,
    namespace,
    code: spec.codeRef == null ? (spec.code ?? '') : '',
    ...(spec.codeRef == null ? {} : { code_ref: { digest: spec.codeRef.digest, size: spec.codeRef.size } }),
    env,
    routes: spec.routes ?? [],
    timeout_seconds: spec.timeoutSeconds ?? limits.DEFAULT_TIMEOUT_SECONDS,
    memory_mib: spec.memoryMiB ?? limits.DEFAULT_MEMORY_MIB,
    active: spec.active ?? true,
    retention: retentionOf(spec),
    schedule: scheduleOf(spec),
    created_at: created,
    updated_at: updatedAt(res, created),
    ...(recording === undefined ? {} : { record_requests: recording }),
    ...kvQuotaOf(spec),
    ...asyncOf(spec),
    scaling: scalingOf(spec),
  };
}

/** The spec's pods, autoscaling, scale to zero and CPU as the management API shows them (CRD defaults filled). */
export function scalingOf(spec: FunctionSpec): FunctionScalingSettings {
  const a = spec.scaling;
  return {
    replicas: spec.replicas ?? 1,
    autoscale: a == null ? null : { min_replicas: a.minReplicas ?? DEFAULT_MIN_REPLICAS, max_replicas: a.maxReplicas ?? DEFAULT_MAX_REPLICAS, target_concurrency: a.targetConcurrency ?? DEFAULT_TARGET_CONCURRENCY },
    scale_to_zero: spec.scaleToZero == null ? null : { idle_seconds: spec.scaleToZero.idleSeconds ?? DEFAULT_IDLE_SECONDS },
    cpu: { request: spec.cpu?.request ?? null, limit: spec.cpu?.limit ?? null },
  };
}

/** The merge patch of spec for a scaling change (null removes an object). */
function scalingPatch(before: FunctionScalingSettings | undefined, after: FunctionScalingSettings | undefined): Record<string, unknown> {
  const spec: Record<string, unknown> = {};
  if (after === undefined || same(before, after)) return spec;
  if (before?.replicas !== after.replicas) spec.replicas = after.replicas;
  if (!same(before?.autoscale, after.autoscale)) {
    spec.scaling = after.autoscale === null ? null : { minReplicas: after.autoscale.min_replicas, maxReplicas: after.autoscale.max_replicas, targetConcurrency: after.autoscale.target_concurrency };
  }
  if (!same(before?.scale_to_zero, after.scale_to_zero)) spec.scaleToZero = after.scale_to_zero === null ? null : { idleSeconds: after.scale_to_zero.idle_seconds };
  if (!same(before?.cpu, after.cpu)) spec.cpu = after.cpu.request === null && after.cpu.limit === null ? null : { request: after.cpu.request, limit: after.cpu.limit };
  return spec;
}

function specRetention(r: RetentionPolicy): NonNullable<FunctionSpec['retention']> {
  return r.type === 'time' ? { type: 'time', days: r.days } : r.type === 'count' ? { type: 'count', count: r.count } : { type: 'none' };
}

function specSchedule(s: Schedule): NonNullable<FunctionSpec['schedule']> {
  return { cron: s.cron, timezone: s.timezone, suspend: !s.enabled };
}

function specEnv(env: Record<string, string>): FunctionEnvVar[] {
  return Object.entries(env).map(([name, value]) => ({ name, value }));
}

/** The Function a management-API create writes. The id is not written: it is derived from namespace and name. */
export function resourceForCreate(fn: FunctionRecord): FunctionResource {
  const spec: FunctionSpec = {
    ...(fn.code_ref === undefined ? { code: fn.code } : { codeRef: { digest: fn.code_ref.digest, size: fn.code_ref.size } }),
    routes: fn.routes,
    env: specEnv(fn.env),
    timeoutSeconds: fn.timeout_seconds,
    memoryMiB: fn.memory_mib,
    active: fn.active,
    retention: specRetention(fn.retention),
  };
  if (fn.schedule !== null) spec.schedule = specSchedule(fn.schedule);
  if (fn.record_requests !== undefined) spec.recordRequests = specRecording(fn.record_requests);
  if (fn.kv_quota?.max_bytes != null || fn.kv_quota?.max_keys != null) {
    spec.kvQuota = { ...(fn.kv_quota.max_bytes == null ? {} : { maxBytes: fn.kv_quota.max_bytes }), ...(fn.kv_quota.max_keys == null ? {} : { maxKeys: fn.kv_quota.max_keys }) };
  }
  if (fn.async?.max_retries != null || fn.async?.max_age_seconds != null || fn.async?.callback_hosts != null) {
    spec.async = {
      ...(fn.async.max_retries == null ? {} : { maxRetries: fn.async.max_retries }),
      ...(fn.async.max_age_seconds == null ? {} : { maxAgeSeconds: fn.async.max_age_seconds }),
      ...(fn.async.callback_hosts == null ? {} : { callbackHosts: fn.async.callback_hosts }),
    };
  }
  return {
    apiVersion: API_VERSION,
    kind: KIND,
    metadata: { name: fn.name, namespace: fn.namespace, annotations: { [ANNOTATION_UPDATED_AT]: fn.updated_at } },
    spec,
  };
}

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * A JSON merge patch carrying only the fields that differ between `before`
 * and `after`, so that a management-API edit never writes back fields it did
 * not change (a concurrent kubectl edit of another field survives). Env
 * entries from Secrets or ConfigMaps (valueFrom) are kept when env is
 * replaced, unless the new env sets the same name. null when nothing changed.
 */
export function specPatch(before: FunctionRecord, after: FunctionRecord, current: FunctionResource): Record<string, unknown> | null {
  const spec: Record<string, unknown> = {};
  // A switch between inline code and a reference removes the other (null in a merge patch): the CRD admits exactly one.
  if (after.code_ref !== undefined) {
    if (before.code_ref?.digest !== after.code_ref.digest || before.code_ref?.size !== after.code_ref.size) spec.codeRef = { digest: after.code_ref.digest, size: after.code_ref.size };
    if (before.code_ref === undefined) spec.code = null;
  } else {
    if (before.code !== after.code || before.code_ref !== undefined) spec.code = after.code;
    if (before.code_ref !== undefined) spec.codeRef = null;
  }
  if (!same(before.routes, after.routes)) spec.routes = after.routes;
  if (!same(before.env, after.env)) {
    const fromRefs = (current.spec.env ?? []).filter((e) => e.valueFrom !== undefined && !(e.name in after.env));
    spec.env = [...specEnv(after.env), ...fromRefs];
  }
  if (before.timeout_seconds !== after.timeout_seconds) spec.timeoutSeconds = after.timeout_seconds;
  if (before.memory_mib !== after.memory_mib) spec.memoryMiB = after.memory_mib;
  if (before.active !== after.active) spec.active = after.active;
  // A merge patch merges objects: null first clears days/count that the new type must not carry.
  if (!same(before.retention, after.retention)) spec.retention = { days: null, count: null, ...specRetention(after.retention) };
  if (after.record_requests !== undefined && !same(before.record_requests, after.record_requests)) spec.recordRequests = specRecording(after.record_requests);
  // A merge patch: null removes a field, so the platform's default applies again.
  if (!same(before.kv_quota ?? {}, after.kv_quota ?? {})) spec.kvQuota = specKvQuota(after.kv_quota);
  if (!same(before.async ?? {}, after.async ?? {})) spec.async = specAsync(after.async);
  if (!same(before.schedule, after.schedule)) spec.schedule = after.schedule === null ? null : specSchedule(after.schedule);
  Object.assign(spec, scalingPatch(before.scaling, after.scaling));
  if (Object.keys(spec).length === 0) return null;
  return { metadata: { annotations: { [ANNOTATION_UPDATED_AT]: after.updated_at } }, spec };
}

/** The Ready condition as kubectl shows it, for function:get in cluster mode. */
export function readyOf(res: FunctionResource): { status: string; reason: string; message: string } | null {
  const c = res.status?.conditions?.find((x) => x.type === 'Ready');
  return c === undefined ? null : { status: c.status, reason: c.reason ?? '', message: c.message ?? '' };
}

/**
 * Ready reasons that say the function cannot run its current spec: the
 * operator refused it and creates nothing (or keeps nothing running) until the
 * spec, its namespace or its id changes, so holding a call for a pod would only
 * end in the hold's timeout. Calls get a 503 naming the reason at once.
 * Every reason the operator sets is in this list or in MAY_RUN_REASONS (a unit
 * test reads the operator's sources to keep it so).
 */
export const UNRUNNABLE_REASONS: ReadonlySet<string> = new Set([
  // Refused before anything is made: a namespace outside FNHOST_FUNCTION_NAMESPACES (kube-system, ...).
  'NamespaceNotAllowed',
  // Another namespace is the id's home, or the Function names a grant or an id it may not have
  // (core/src/function-id-home.ts): it gets no pods (a call by name says so: FunctionRefusedError).
  'FunctionIdTaken',
  'FunctionIdHomeMismatch',
  'FunctionIdUnknown',
  'InvalidThrowaway',
  'CodeDoesNotParse',
  'CodeTooLarge',
  'InvalidCode',
  'InvalidRoutes',
  'InvalidEnv',
  'InvalidScaling',
  'InvalidCpu',
  'CpuAboveMaximum',
  'TimeoutAboveMaximum',
  'NameTooLong',
  'FunctionIdChanged',
  'Rejected',
  'RuntimeCrashing',
  // A pod of the current code failed to load it (status.loadFailure, written by the gateway's load watch): waiting cannot help.
  'LoadFailed',
  // spec.codeRef names a digest its namespace has not uploaded: no pod is started until it is (the operator looks again on a backoff).
  'CodeMissing',
  // An older operator refused a whole Function for its schedule; this one withholds only the CronJob.
  'InvalidSchedule',
]);

/**
 * Ready reasons of a function that runs or may run soon: a call is served or
 * held for a pod. RuntimeNotReady: every starting pod is not ready for a moment
 * (a load error is found by the gateway's own probe of the pods); the others
 * can clear without a change of spec (a pod quota freed, an image pushed, a
 * node added, a rollout done), so a held call may still be answered.
 */
export const MAY_RUN_REASONS: ReadonlySet<string> = new Set([
  'Available', 'Idle', 'Inactive', 'ScaledToZero', 'Progressing', 'RuntimeNotReady',
  'ImageUnavailable', 'Unschedulable', 'ReplicaFailure', 'Forbidden',
]);

/** Why a Function cannot run, from a Ready=False condition about its current generation; undefined otherwise. */
export function cannotRunReason(res: FunctionResource | undefined): string | undefined {
  const c = res?.status?.conditions?.find((x) => x.type === 'Ready');
  if (res === undefined || c === undefined || c.status !== 'False' || !UNRUNNABLE_REASONS.has(c.reason)) return undefined;
  // A condition about an older spec says nothing about the new one (the operator has not seen it yet).
  if (c.observedGeneration !== undefined && res.metadata.generation !== undefined && c.observedGeneration !== res.metadata.generation) return undefined;
  const { name, namespace = 'default' } = res.metadata;
  // The reason only: a condition's message can carry the owner's error text (a load failure's), which an anonymous caller must not read.
  return `function ${name} (namespace ${namespace}) cannot run: ${c.reason} (kubectl describe function ${name} -n ${namespace})`;
}
