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

export interface FunctionSpec {
  code: string;
  functionId?: string;
  routes?: string[];
  env?: FunctionEnvVar[];
  timeoutSeconds?: number;
  memoryMiB?: number;
  active?: boolean;
  schedule?: FunctionSchedule;
  retention?: FunctionRetention;
  recordRequests?: FunctionRecordRequests;
  replicas?: number;
  /** idleSeconds has a CRD default (300), so the API server always returns it with scaleToZero. */
  scaleToZero?: { idleSeconds: number };
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

export interface FunctionStatus {
  functionId?: string;
  url?: string;
  observedGeneration?: number;
  conditions?: Condition[];
  /** Written by the gateway (invocation feedback). */
  lastInvocationTime?: string;
  /** Written by the gateway (invocation feedback), such as `5%`. */
  errorRate?: string;
}

export interface FunctionResource {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  spec: FunctionSpec;
  status?: FunctionStatus;
}
