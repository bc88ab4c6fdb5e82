// The Kubernetes object shape the operator builds (sent with server-side
// apply, so kept minimal and structural: plain JSON objects) and its
// settings. The Function resource itself, shared with the cluster-mode
// gateway, is core/src/function-resource.ts.
import type { ObjectMeta } from '@fnhost/core/function-resource.ts';
import type { FunctionNamespaces } from '@fnhost/core/function-namespaces.ts';

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  [field: string]: unknown;
}

/** The operator's settings (see settings.ts and docs/operator.md). */
/** The pool of generic runtime pods (pool.ts, loadPoolSettings). */
export interface PoolSettings {
  /** Generic pods per namespace (0: no pool; every cold call takes the Deployment path). */
  size: number;
  /** At most this many generic pods in all namespaces together: a namespace past it gets none. */
  maxPods: number;
  /** The handler heap of a pool pod: a function of another memoryMiB takes the Deployment path. */
  memoryMiB: number;
  /** Referenced code larger than this is not sent to a pool pod (its /tmp is sized for it). */
  maxCodeBytes: number;
}

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
  /**
   * FNHOST_NETWORK_POLICY: the operator keeps a NetworkPolicy in each namespace that
   * has Functions (builders/networkpolicy.ts). Undefined: it makes none.
   */
  networkPolicy: NetworkPolicySettings | undefined;
  /**
   * The gateway's addresses for the host names in gatewayUrl and egressProxyUrl,
   * resolved by the operator at start and written into function pods' /etc/hosts
   * (hostAliases): their NetworkPolicy gives them no DNS. Empty when the URLs hold
   * addresses already (or the names did not resolve: pods then use DNS).
   */
  gatewayHostAliases: Array<{ ip: string; hostnames: string[] }>;
  /** Base URL users invoke functions at; status.url is `<this>/invoke/<functionId>`. */
  publicUrl: string;
  /** Platform maximum of timeoutSeconds; a Function above it gets Ready=False. */
  maxTimeoutSeconds: number;
  /** Memory the runtime's supervisor and Node itself need beyond the handler's heap. */
  runtimeOverheadMiB: number;
  /**
   * Seconds a stopping runtime pod keeps serving before it is signalled (a preStop sleep):
   * the gateway learns from the EndpointSlice that the pod is terminating and stops sending
   * it calls, instead of finding its port closed. 0: no preStop.
   */
  runtimeStopDelaySeconds: number;
  /** Code GC (code-gc.ts): seconds between passes, and how long an unreferenced blob is kept after its last upload. */
  codeGcIntervalSeconds: number;
  codeGcGraceSeconds: number;
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
  /** Namespaces where Functions may live (FNHOST_FUNCTION_NAMESPACES, FNHOST_FUNCTION_NAMESPACE_SELECTOR; never kube-system nor the platform's). */
  functionNamespaces: FunctionNamespaces;
  leaderElection: boolean;
  leaseNamespace: string;
  leaseName: string;
  identity: string;
  leaseDurationSeconds: number;
  renewDeadlineSeconds: number;
  retryPeriodSeconds: number;
  logLevel: 'debug' | 'info' | 'warn' | 'error';
  /** FNHOST_METRICS_TOKEN: /metrics answers only this bearer token; undefined: anyone who reaches the port. */
  metricsToken?: string;
  /**
   * FNHOST_FUNCTION_ID_GRANTS: the chart installed the ValidatingAdmissionPolicy that admits the
   * fnhost.dev/function-id-home annotation only from users who may claim in the namespace it names,
   * so the operator honours it (a granted move of a functionId). Off: the annotation moves nothing.
   */
  functionIdGrants?: boolean;
  /** The pool of generic runtime pods (pool.ts); unset or size 0: none. */
  pool?: PoolSettings;
}

/** Where function pods may connect: the gateway's pods (FNHOST_GATEWAY_*; see settings.ts). */
export interface NetworkPolicySettings {
  gatewayNamespace: string;
  /** Labels that select the gateway's pods (and nothing else). */
  gatewayPodLabels: Record<string, string>;
  /** The gateway pods' container ports function pods may reach: its HTTP port (internal API, /invoke) and the egress proxy's. */
  gatewayPorts: number[];
}
