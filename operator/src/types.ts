// The Function custom resource as the operator reads it, and the few
// Kubernetes object shapes the operator builds. Shapes are kept minimal and
// structural (plain JSON objects) because they are sent with server-side apply.

export const GROUP = 'fnhost.dev';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;
export const KIND = 'Function';
export const PLURAL = 'functions';

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
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  [field: string]: unknown;
}

export interface EnvVarSource {
  secretKeyRef?: { name: string; key: string; optional?: boolean };
  configMapKeyRef?: { name: string; key: string; optional?: boolean };
}

export interface FunctionEnvVar {
  name: string;
  value?: string;
  valueFrom?: EnvVarSource;
}

export interface FunctionSchedule {
  cron: string;
  timezone?: string;
  suspend?: boolean;
}

export interface FunctionRetention {
  type: 'time' | 'count' | 'none';
  days?: number;
  count?: number;
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
  replicas?: number;
  scaleToZero?: { idleSeconds: number };
}

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
  errorRate?: string;
}

export interface FunctionResource {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  spec: FunctionSpec;
  status?: FunctionStatus;
}

/** The operator's settings (see settings.ts and docs/operator.md). */
export interface Settings {
  runtimeImage: string;
  imagePullPolicy: 'Always' | 'IfNotPresent' | 'Never';
  /** Base URL of the gateway as pods reach it: KV, policy check and the CronJob's invocation. */
  gatewayUrl: string;
  /** Base URL users invoke functions at; status.url is `<this>/invoke/<functionId>`. */
  publicUrl: string;
  /** Platform maximum of timeoutSeconds; a Function above it gets Ready=False. */
  maxTimeoutSeconds: number;
  /** Memory the runtime's supervisor and Node itself need beyond the handler's heap. */
  runtimeOverheadMiB: number;
  /** Key the per-function runtime and schedule tokens are derived from (HMAC-SHA256). */
  tokenKey: string;
  /** The uid the runtime and the schedule job run as. */
  runAsUser: number;
  cpuRequest: string;
  workers: number;
  maxInFlight: number;
  port: number;
  /** Empty: every namespace. */
  watchNamespace: string;
  leaderElection: boolean;
  leaseNamespace: string;
  leaseName: string;
  identity: string;
  leaseDurationSeconds: number;
  renewDeadlineSeconds: number;
  retryPeriodSeconds: number;
  logLevel: 'debug' | 'info' | 'warn' | 'error';
}
