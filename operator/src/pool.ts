import { limits } from '@fnhost/core';
import {
  ANNOTATION_CLAIMED_AT,
  ANNOTATION_GENERATION,
  ANNOTATION_POOL_CODE_BYTES,
  ANNOTATION_POOL_CPU,
  ANNOTATION_POOL_MEMORY_MIB,
  POOL_APP_NAME,
  POOL_KEY_FIELD,
  POOL_NAME,
  POOL_SECRET_NAME,
  ROLE_POOL,
  poolKeyOf,
} from '@fnhost/core/cluster-pool.ts';
import { containerSecurityContext, hostAliasesOf, podSecurityContext, SCAN_SKIPS } from './builders/common.ts';
import { RUNTIME_PORT, TMP_SIZE_LIMIT } from './builders/deployment.ts';
import { LABEL_ROLE, MANAGED_BY } from './names.ts';
import type { KubeObject, PoolSettings, Settings } from './types.ts';

export type { PoolSettings } from './types.ts';

// The pool of generic runtime pods (issue 32; docs/cluster-mode.md "Idle scale to zero"): in each
// namespace that holds Functions, a Deployment `fnhost-pool` of `size` pods running the runtime
// image with no function (FNHOST_SPECIALIZE_REMOTE=1), and the Secret with the namespace's pool
// key. The gateway claims a pod for a cold call (a label patch: it leaves this Deployment's
// selector, whose ReplicaSet makes a new one) and specializes it. Both objects are owned by every
// Function of the namespace, as its NetworkPolicy is: the garbage collector removes them with the
// last one. The pods carry app.kubernetes.io/managed-by=fnhost-operator, so the namespace's function
// NetworkPolicy covers them: only the gateway's pods reach them, and they reach only the gateway.

export const DEFAULT_POOL_MAX_PODS = 20;
export const DEFAULT_POOL_CODE_MIB = 50;

export class PoolSettingsError extends Error {
  override name = 'PoolSettingsError';
}

function intVar(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw new PoolSettingsError(`${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(raw)}`);
  return n;
}

/** FNHOST_POOL_SIZE (0: off), FNHOST_POOL_MAX_PODS, FNHOST_POOL_MEMORY_MIB, FNHOST_POOL_CODE_MIB. */
export function loadPoolSettings(env: NodeJS.ProcessEnv): PoolSettings {
  return {
    size: intVar(env, 'FNHOST_POOL_SIZE', 0, 0, 50),
    maxPods: intVar(env, 'FNHOST_POOL_MAX_PODS', DEFAULT_POOL_MAX_PODS, 0, 10_000),
    memoryMiB: intVar(env, 'FNHOST_POOL_MEMORY_MIB', limits.DEFAULT_MEMORY_MIB, limits.MIN_MEMORY_MIB, limits.MAX_MEMORY_MIB),
    maxCodeBytes: intVar(env, 'FNHOST_POOL_CODE_MIB', DEFAULT_POOL_CODE_MIB, 1, 50) * 1024 * 1024,
  };
}

/**
 * How many generic pods a namespace gets: `size`, while the namespaces already given a pool
 * (in the order they were first seen) leave room under `maxPods`; else none.
 */
export function poolReplicas(pool: PoolSettings, namespace: string, given: readonly string[]): number {
  if (pool.size === 0) return 0;
  const index = given.indexOf(namespace);
  const before = index === -1 ? given.length : index;
  return (before + 1) * pool.size <= pool.maxPods ? pool.size : 0;
}

export function poolSecretFor(namespace: string, tokenKey: string): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: POOL_SECRET_NAME, namespace, labels: { 'app.kubernetes.io/name': POOL_APP_NAME, 'app.kubernetes.io/managed-by': MANAGED_BY } },
    type: 'Opaque',
    data: { [POOL_KEY_FIELD]: Buffer.from(poolKeyOf(tokenKey, namespace)).toString('base64') },
  };
}

/** The pool pods' selector: generic ones only (a claimed pod changes its role and leaves it). */
export function poolSelector(): Record<string, string> {
  return { 'app.kubernetes.io/name': POOL_APP_NAME, [LABEL_ROLE]: ROLE_POOL };
}

export function poolDeploymentFor(namespace: string, settings: Settings, pool: PoolSettings, replicas: number): KubeObject {
  const memory = `${pool.memoryMiB + settings.runtimeOverheadMiB}Mi`;
  const labels = { ...poolSelector(), 'app.kubernetes.io/managed-by': MANAGED_BY };
  const tmpMiB = Number.parseInt(TMP_SIZE_LIMIT, 10) + Math.ceil(pool.maxCodeBytes / (1024 * 1024));
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name: POOL_NAME,
      namespace,
      labels: { 'app.kubernetes.io/name': POOL_APP_NAME, 'app.kubernetes.io/managed-by': MANAGED_BY },
      annotations: { ...SCAN_SKIPS, 'checkov.io/skip3': 'CKV_K8S_35=the pool key stays an environment variable: the runtime reads it at start and removes it from its environment before any handler runs' },
    },
    spec: {
      replicas,
      revisionHistoryLimit: 1,
      selector: { matchLabels: poolSelector() },
      template: {
        metadata: {
          labels,
          annotations: {
            [ANNOTATION_POOL_MEMORY_MIB]: String(pool.memoryMiB),
            [ANNOTATION_POOL_CPU]: `${settings.cpuRequest}/${settings.cpuLimit}`,
            [ANNOTATION_POOL_CODE_BYTES]: String(pool.maxCodeBytes),
          },
        },
        spec: {
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          ...hostAliasesOf(settings),
          securityContext: podSecurityContext(settings),
          // A specialized pod may run a call of up to the longest time limit when it is ended.
          terminationGracePeriodSeconds: settings.maxTimeoutSeconds + 5 + settings.runtimeStopDelaySeconds,
          containers: [
            {
              name: 'runtime',
              image: settings.runtimeImage,
              imagePullPolicy: settings.imagePullPolicy,
              env: [
                { name: 'PORT', value: String(RUNTIME_PORT) },
                { name: 'HOST', value: '0.0.0.0' },
                { name: 'FNHOST_SPECIALIZE_REMOTE', value: '1' },
                // The image names a default function file; a generic runtime has none.
                { name: 'FNHOST_FUNCTION_FILE', value: '' },
                { name: 'FNHOST_SPECIALIZE_TOKEN', valueFrom: { secretKeyRef: { name: POOL_SECRET_NAME, key: POOL_KEY_FIELD } } },
                // The handler's worker thread started ahead with the pool's heap limit: the specialization does not wait for it.
                { name: 'FNHOST_WARM_WORKER_MEMORY_MIB', value: String(pool.memoryMiB) },
                { name: 'FNHOST_GATEWAY_URL', value: settings.gatewayUrl },
                ...(settings.egressProxyUrl === undefined ? [] : [{ name: 'FNHOST_EGRESS_PROXY', value: settings.egressProxyUrl }]),
              ],
              ports: [{ name: 'http', containerPort: RUNTIME_PORT, protocol: 'TCP' }],
              resources: { requests: { cpu: settings.cpuRequest, memory }, limits: { cpu: settings.cpuLimit, memory } },
              securityContext: containerSecurityContext(),
              ...(settings.runtimeStopDelaySeconds > 0 ? { lifecycle: { preStop: { sleep: { seconds: settings.runtimeStopDelaySeconds } } } } : {}),
              // A generic runtime answers /healthz 503 ("generic") until specialized: ready means listening.
              readinessProbe: { tcpSocket: { port: 'http' }, periodSeconds: 1, timeoutSeconds: 2, failureThreshold: 3 },
              livenessProbe: { tcpSocket: { port: 'http' }, initialDelaySeconds: 5, periodSeconds: 10, timeoutSeconds: 3, failureThreshold: 3 },
              volumeMounts: [{ name: 'tmp', mountPath: '/tmp' }],
            },
          ],
          volumes: [{ name: 'tmp', emptyDir: { sizeLimit: `${tmpMiB}Mi` } }],
        },
      },
    },
  };
}

/** How long after its claim a specialized pod is kept even when its function has no pod wanted yet (the wake is on its way). */
export const CLAIM_GRACE_MS = 60_000;

export interface SpecializedPodView {
  metadata: { name: string; uid?: string; deletionTimestamp?: string; annotations?: Record<string, string> };
}

/**
 * Why a pod specialized for a function goes now, or undefined to keep it: it served the cold call
 * until the function's own Deployment had a ready pod; it never returns to the pool (it ran user code).
 */
export function specializedPodVerdict(
  pod: SpecializedPodView,
  fn: { generation: number; active: boolean; wantedReplicas: number; readyReplicas: number },
  now: number,
): string | undefined {
  if (pod.metadata.deletionTimestamp !== undefined) return undefined;
  if (!fn.active) return 'the function is inactive';
  const generation = pod.metadata.annotations?.[ANNOTATION_GENERATION];
  if (generation !== undefined && generation !== String(fn.generation)) return `specialized for generation ${generation}, the Function is at ${fn.generation}`;
  if (fn.readyReplicas > 0) return 'the function\'s Deployment has a ready pod';
  const claimedAt = Number(pod.metadata.annotations?.[ANNOTATION_CLAIMED_AT]);
  if (fn.wantedReplicas === 0 && (!Number.isFinite(claimedAt) || now - claimedAt >= CLAIM_GRACE_MS)) return 'the function is idle';
  return undefined;
}
