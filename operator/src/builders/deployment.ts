import { ownedNames, selectorFor, ANNOTATION_CONFIG_HASH, LABEL_ROLE, ROLE_RUNTIME } from '../names.ts';
import type { FunctionResource } from '@fnhost/core/function-resource.ts';
import type { KubeObject, Settings } from '../types.ts';
import { configHash, containerSecurityContext, effectiveSpec, hostAliasesOf, ownedMeta, podSecurityContext, SCAN_SKIPS } from './common.ts';
import { CODE_FILE_NAME } from './configmap.ts';
import { RUNTIME_TOKEN_KEY } from './secret.ts';
import { millicores } from '@fnhost/core/scaling.ts';
import { servedNameOf } from '@fnhost/core/replay-throwaway.ts';

export const RUNTIME_PORT = 8080;
export const CODE_MOUNT_PATH = '/fnhost/function';
export const TMP_SIZE_LIMIT = '64Mi';
/**
 * Where a pod's runtime keeps referenced code (spec.codeRef) it fetched from the gateway, by
 * digest: in the pod's /tmp emptyDir (the root is read-only), so a container restart finds it and
 * fetches nothing (runtime-image/src/code-fetch.ts). The emptyDir grows by the code's size.
 */
export const CODE_CACHE_DIR = '/tmp/fnhost-code';
/** The pod template's annotation naming the referenced digest: code GC keeps what a ReplicaSet still runs (code-gc.ts). */
export const ANNOTATION_CODE_DIGEST = 'fnhost.dev/code-digest';

/** The /tmp emptyDir's bound: 64 MiB, plus the referenced code's size rounded up to MiB. */
export function tmpSizeLimit(fn: FunctionResource): string {
  const ref = fn.spec.codeRef;
  return ref == null ? TMP_SIZE_LIMIT : `${64 + Math.ceil(ref.size / (1024 * 1024))}Mi`;
}

/** The module file the runtime loads: the ConfigMap's, or its cache file of the referenced digest. */
export function functionFileOf(fn: FunctionResource): string {
  const ref = fn.spec.codeRef;
  return ref == null ? `${CODE_MOUNT_PATH}/${CODE_FILE_NAME}` : `${CODE_CACHE_DIR}/${ref.digest.slice('sha256:'.length)}.js`;
}

/** Container memory limit: the handler's heap (memoryMiB) plus the runtime's own overhead. */
export function memoryLimitMiB(memoryMiB: number, settings: Settings): number {
  return memoryMiB + settings.runtimeOverheadMiB;
}

/** The runtime's contract (docs/internal-protocol.md) first, then the function's own env. */
export function runtimeEnv(fn: FunctionResource, settings: Settings) {
  const e = effectiveSpec(fn);
  const names = ownedNames(fn.metadata.name);
  return [
    { name: 'PORT', value: String(RUNTIME_PORT) },
    { name: 'HOST', value: '0.0.0.0' },
    { name: 'FNHOST_FUNCTION_FILE', value: functionFileOf(fn) },
    // Referenced code: the runtime fetches it by digest from the gateway at start (docs/internal-protocol.md "Referenced code").
    ...(e.codeRef === null ? [] : [{ name: 'FNHOST_CODE_DIGEST', value: e.codeRef.digest }, { name: 'FNHOST_CODE_SIZE', value: String(e.codeRef.size) }]),
    { name: 'FNHOST_FUNCTION_ID', value: e.functionId },
    { name: 'FNHOST_FUNCTION_NAME', value: servedNameOf(fn) },
    { name: 'FNHOST_ROUTES', value: JSON.stringify(e.routes) },
    { name: 'FNHOST_TIMEOUT_MS', value: String(e.timeoutSeconds * 1000) },
    { name: 'FNHOST_MEMORY_MIB', value: String(e.memoryMiB) },
    { name: 'FNHOST_GATEWAY_URL', value: settings.gatewayUrl },
    { name: 'FNHOST_RUNTIME_TOKEN', valueFrom: { secretKeyRef: { name: names.secret, key: RUNTIME_TOKEN_KEY } } },
    ...(settings.egressProxyUrl === undefined ? [] : [{ name: 'FNHOST_EGRESS_PROXY', value: settings.egressProxyUrl }]),
    ...e.env.map((v) => (v.valueFrom ? { name: v.name, valueFrom: v.valueFrom } : { name: v.name, value: v.value ?? '' })),
  ];
}

export interface DeploymentOptions {
  /** Idle for spec.scaleToZero.idleSeconds (idle.ts): zero pods until a call wakes it. */
  idle?: boolean;
  /** The autoscaler's replica count (autoscale.ts), used instead of spec.replicas when set. */
  replicas?: number;
}

/** The runtime container's CPU: the Function's spec.cpu, else the operator's settings (validate.ts keeps it within FNHOST_CPU_LIMIT). */
export function cpuOf(fn: FunctionResource, settings: Settings): { request: string; limit: string } {
  const limit = fn.spec.cpu?.limit ?? settings.cpuLimit;
  const request = fn.spec.cpu?.request ?? (fn.spec.cpu?.limit !== undefined && millicores(fn.spec.cpu.limit) < millicores(settings.cpuRequest) ? fn.spec.cpu.limit : settings.cpuRequest);
  return { request, limit };
}

export function deploymentFor(fn: FunctionResource, settings: Settings, options: DeploymentOptions = {}): KubeObject {
  const e = effectiveSpec(fn);
  const names = ownedNames(fn.metadata.name);
  const meta = ownedMeta(fn, names.deployment);
  const annotations = {
    ...SCAN_SKIPS,
    'checkov.io/skip3':
      'CKV_K8S_35=the runtime token stays an environment variable: the runtime reads it in its main thread and keeps it out of the handler\'s process.env, while a file in the pod would be readable by the handler, untrusted code running as the same uid',
  };
  const limit = `${memoryLimitMiB(e.memoryMiB, settings)}Mi`;
  const cpu = cpuOf(fn, settings);
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { ...meta, annotations },
    spec: {
      // Inactive and idle functions keep their Deployment (and its history) at zero pods.
      replicas: e.active && !options.idle ? (options.replicas ?? e.replicas) : 0,
      revisionHistoryLimit: 3,
      selector: { matchLabels: selectorFor(fn) },
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
      template: {
        metadata: {
          labels: { ...meta.labels, [LABEL_ROLE]: ROLE_RUNTIME },
          annotations: { [ANNOTATION_CONFIG_HASH]: configHash(fn, settings), ...(e.codeRef === null ? {} : { [ANNOTATION_CODE_DIGEST]: e.codeRef.digest }) },
        },
        spec: {
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          ...hostAliasesOf(settings),
          securityContext: podSecurityContext(settings),
          // Let an invocation that is running finish before the pod goes (after the preStop pause).
          terminationGracePeriodSeconds: e.timeoutSeconds + 5 + settings.runtimeStopDelaySeconds,
          containers: [
            {
              name: 'runtime',
              image: settings.runtimeImage,
              imagePullPolicy: settings.imagePullPolicy,
              env: runtimeEnv(fn, settings),
              ports: [{ name: 'http', containerPort: RUNTIME_PORT, protocol: 'TCP' }],
              resources: {
                requests: { cpu: cpu.request, memory: limit },
                limits: { cpu: cpu.limit, memory: limit },
              },
              securityContext: containerSecurityContext(),
              // A stopping pod keeps listening a moment (the kubelet's own sleep: the image needs no
              // binary): the EndpointSlice says it is terminating and the gateway stops sending it
              // calls before its runtime closes the port. Without it, a call in that window was
              // refused (the gateway now passes such a pod over, but a pooled connection can still break).
              ...(settings.runtimeStopDelaySeconds > 0 ? { lifecycle: { preStop: { sleep: { seconds: settings.runtimeStopDelaySeconds } } } } : {}),
              // Readiness follows /healthz, which answers 503 while the module
              // cannot load. Liveness only checks that the server accepts
              // connections: restarting cannot fix user code, and would turn a
              // load error into CrashLoopBackOff instead of a clear 500.
              // Probed every second: a pod scaled up from zero serves the call the
              // gateway holds as soon as the kubelet sees it ready (P5b), and one
              // local HTTP GET a second is nothing next to a runtime's idle cost.
              // No startup probe: readiness would wait for it to pass first (up to
              // a second more, measured), and the runtime listens within a second,
              // far inside the liveness probe's 5 s delay and three misses.
              readinessProbe: { httpGet: { path: '/healthz', port: 'http' }, periodSeconds: 1, timeoutSeconds: 2, failureThreshold: 3 },
              livenessProbe: { tcpSocket: { port: 'http' }, initialDelaySeconds: 5, periodSeconds: 10, timeoutSeconds: 3, failureThreshold: 3 },
              volumeMounts: [
                { name: 'code', mountPath: CODE_MOUNT_PATH, readOnly: true },
                { name: 'tmp', mountPath: '/tmp' },
              ],
            },
          ],
          volumes: [
            { name: 'code', configMap: { name: names.configMap } },
            { name: 'tmp', emptyDir: { sizeLimit: tmpSizeLimit(fn) } },
          ],
        },
      },
    },
  };
}
