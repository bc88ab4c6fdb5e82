// The Kubernetes object shape the operator builds (sent with server-side
// apply, so kept minimal and structural: plain JSON objects) and its
// settings. The Function resource itself, shared with the cluster-mode
// gateway, is core/src/function-resource.ts.
import type { ObjectMeta } from '@fnhost/core/function-resource.ts';

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  [field: string]: unknown;
}

/** The operator's settings (see settings.ts and docs/operator.md). */
export interface Settings {
  runtimeImage: string;
  imagePullPolicy: 'Always' | 'IfNotPresent' | 'Never';
  /** Base URL of the gateway as pods reach it: KV, policy check and the CronJob's invocation. */
  gatewayUrl: string;
  /**
   * The gateway's egress proxy as pods reach it (`http://host:port`, the gateway's
   * FNHOST_EGRESS_LISTEN behind its Service), given to runtimes as FNHOST_EGRESS_PROXY.
   * Undefined: pods get none and fetch asks the policy check (docs/egress.md).
   */
  egressProxyUrl: string | undefined;
  /** Base URL users invoke functions at; status.url is `<this>/invoke/<functionId>`. */
  publicUrl: string;
  /** Platform maximum of timeoutSeconds; a Function above it gets Ready=False. */
  maxTimeoutSeconds: number;
  /** Memory the runtime's supervisor and Node itself need beyond the handler's heap. */
  runtimeOverheadMiB: number;
  /** Key the per-function runtime and schedule tokens are derived from (HMAC-SHA256). */
  tokenKey: string;
  /** The uid the runtime and the schedule job run as (10001: the runtime image's USER, above host accounts). */
  runAsUser: number;
  cpuRequest: string;
  /** CPU limit of each runtime and schedule container: one function cannot take a node's CPU. */
  cpuLimit: string;
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
