// The Function custom resource (fnhost.dev/v1alpha1) as the API server
// returns it: one shape for the operator, which reconciles it, and the
// cluster-mode gateway, which reads it into a FunctionRecord and writes spec
// edits and status feedback (they meet only through the API server). It
// follows crds/fnhost.dev_functions.yaml (generated from operator/src/crd.ts):
// apiVersion, kind and what the CRD requires are required here, and so is
// scaleToZero.idleSeconds, which the API server always fills (CRD default).
// The other defaulted fields (timeoutSeconds, memoryMiB, active, replicas,
// schedule.timezone, ...) stay optional: the gateway writes a Function
// without some of them and reads them with the same defaults. Plain JSON, no
// client library types.

export const GROUP = 'fnhost.dev';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;
export const KIND = 'Function';
export const PLURAL = 'functions';

/** REST paths of Functions on the API server (the operator's and the gateway's clients share them). */
export const functionPaths = {
  list: (ns?: string) => (ns ? `/apis/${API_VERSION}/namespaces/${ns}/${PLURAL}` : `/apis/${API_VERSION}/${PLURAL}`),
  one: (ns: string, name: string) => `/apis/${API_VERSION}/namespaces/${ns}/${PLURAL}/${name}`,
  status: (ns: string, name: string) => `/apis/${API_VERSION}/namespaces/${ns}/${PLURAL}/${name}/status`,
};

export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: OwnerReference[];
  /** Who set which fields, and when (server-side field management). */
  managedFields?: ManagedFieldsEntry[];
}

export interface ManagedFieldsEntry {
  manager?: string;
  operation?: string;
  /** RFC 3339, seconds: when this manager last changed one of its fields. */
  time?: string;
  /** `status` for writes through the status subresource. */
  subresource?: string;
  fieldsV1?: Record<string, unknown>;
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

/** A Secret or ConfigMap key, as in a Pod's env (the CRD admits exactly one of the two). */
export interface EnvVarSource {
  secretKeyRef?: { name: string; key: string; optional?: boolean };
  configMapKeyRef?: { name: string; key: string; optional?: boolean };
}

/** One spec.env entry: value or valueFrom, not both. */
export interface FunctionEnvVar {
  name: string;
  value?: string;
  valueFrom?: EnvVarSource;
}

export interface FunctionSchedule {
  cron: string;
  /** CRD default UTC. */
  timezone?: string;
  /** CRD default false. */
  suspend?: boolean;
}

export interface FunctionRetention {
  type: 'time' | 'count' | 'none';
  days?: number;
  count?: number;
}

/** Request recording for replay (docs/replay.md); CRD defaults: enabled false, maxBodyBytes 65536. */
export interface FunctionRecordRequests {
  enabled?: boolean;
  maxBodyBytes?: number;
  redact?: { headers?: string[]; jsonPaths?: string[] };
}

/** spec.codeRef: code held in the platform's code store by digest (core/src/code/), instead of inline spec.code. */
export interface FunctionCodeRef {
  /** `sha256:<64 hex>` of the bundle's bytes. */
  digest: string;
  /** Its size in bytes. */
  size: number;
}

export interface FunctionSpec {
  /** The module inline; exactly one of code and codeRef (the CRD's rule, and the operator's). */
  code?: string;
  codeRef?: FunctionCodeRef;
  functionId?: string;
  routes?: string[];
  env?: FunctionEnvVar[];
  timeoutSeconds?: number;
  memoryMiB?: number;
  active?: boolean;
  schedule?: FunctionSchedule;
  retention?: FunctionRetention;
  recordRequests?: FunctionRecordRequests;
  /** This function's KV quota; a field left out takes the platform's default (docs/kv.md "Quotas"). */
  kvQuota?: { maxBytes?: number; maxKeys?: number };
  /** Asynchronous invocation's retries, age and callback hosts (FunctionRecord.async). */
  async?: { maxRetries?: number; maxAgeSeconds?: number; callbackHosts?: string[] };
  replicas?: number;
  /** idleSeconds has a CRD default (300), so the API server always returns it with scaleToZero. */
  scaleToZero?: { idleSeconds: number };
  /** Autoscaling on concurrency (replaces spec.replicas when set; docs/cluster-mode.md, Autoscaling). */
  scaling?: FunctionScaling;
  /** CPU of the runtime container, Kubernetes quantities ("250m", "1"); the operator's settings when unset. */
  cpu?: { request?: string; limit?: string };
}

/** spec.scaling: the CRD fills the defaults (min 1, max 10, target 10). */
export interface FunctionScaling {
  /** 0: the function may be scaled to zero when idle (spec.scaleToZero.idleSeconds, default 300). */
  minReplicas?: number;
  maxReplicas?: number;
  /** Calls in flight per pod the autoscaler aims at. */
  targetConcurrency?: number;
}

/**
 * One gateway replica's view of a function's calls in flight, time-averaged
 * over the stable and the panic window (status.concurrency[<gateway>]). Each
 * replica writes only its own key; the operator adds the fresh ones up.
 */
export interface ConcurrencyReport {
  /** Average calls in flight over the stable window (60 s). */
  stable: number;
  /** Average calls in flight over the panic window (6 s). */
  panic: number;
  /** RFC 3339: when the gateway measured it. */
  at: string;
}

/** What the operator's autoscaler decided last (status.autoscaler). */
export interface AutoscalerStatus {
  /** The replica count it set on the Deployment. */
  replicas: number;
  /** Stable or panic (scale-ups on the short window, no scale-down). */
  mode: 'stable' | 'panic';
  /** RFC 3339: panic mode lasts until then unless the panic condition holds again. */
  panicUntil?: string;
  /** The summed concurrency the decision saw (for describe), such as "12.4/18.0". */
  observed?: string;
}

/** A status condition; the CRD requires every field but observedGeneration. */
export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  observedGeneration?: number;
  lastTransitionTime: string;
}

/**
 * A runtime pod's module failed to load (status.loadFailure, written by the gateway, which asks the
 * starting pods: gateway/src/cluster/load-watch.ts); the operator shows it as CodeLoaded=False
 * LoadFailed while that pod runs the Function's current code.
 */
export interface LoadFailure {
  /** The pod that failed. */
  pod: string;
  /** syntax, no_handler or failed (threw, timed out, ran out of memory, the code could not be fetched). */
  kind: 'syntax' | 'no_handler' | 'failed';
  /** The runtime's text: the error with its line and column in the user's file. */
  message: string;
  /** RFC 3339. */
  at: string;
}

export interface FunctionStatus {
  functionId?: string;
  url?: string;
  observedGeneration?: number;
  conditions?: Condition[];
  /** Written by the gateway (invocation feedback). */
  lastInvocationTime?: string;
  /** Written by the gateway (invocation feedback), such as `5%`. */
  errorRate?: string;
  /** Written by each gateway replica under its own key (autoscaling input); a key set to null is removed by a merge patch. */
  concurrency?: Record<string, ConcurrencyReport | null>;
  /** Written by the operator. */
  autoscaler?: AutoscalerStatus;
  /** Written by the operator: `inline`, or the codeRef's digest shortened (the Code column of kubectl get fn). */
  code?: string;
  /** Written by the gateway: a starting pod's module failed to load; removed by the operator once the function is ready (null in a merge patch). */
  loadFailure?: LoadFailure | null;
}

export interface FunctionResource {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  spec: FunctionSpec;
  status?: FunctionStatus;
}
