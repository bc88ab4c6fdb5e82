import { limits } from '@fnhost/core';
import {
  ANNOTATION_CLAIMED_AT,
  ANNOTATION_GENERATION,
  ANNOTATION_POOL_CODE_BYTES,
  ANNOTATION_POOL_CPU,
  ANNOTATION_POOL_MEMORY_MIB,
  LABEL_POOL_FUNCTION,
  ROLE_SPECIALIZED,
} from '@fnhost/core/cluster-pool.ts';
import { API_VERSION, KIND, type FunctionResource } from '@fnhost/core/function-resource.ts';
import { functionIdOf } from '@fnhost/core/function-identity.ts';
import { servedNameOf } from '@fnhost/core/replay-throwaway.ts';

// The pure parts of a cold call served from the pool (issue 32; docs/cluster-mode.md "Idle scale
// to zero"): which functions a generic pool pod can serve, which pool pod to try, the patch that
// claims it, and the specialization request. The I/O is claimer.ts.

/** Why a cold call took the Deployment path instead of the pool (fnhost_cluster_pool_fallbacks_total{reason}). */
export const FALLBACK_REASONS = ['pool_empty', 'size', 'env_from', 'code_size', 'claim_lost', 'specialize_failed', 'load_failed'] as const;
export type FallbackReason = (typeof FALLBACK_REASONS)[number];

/** The fields of a pod the pool reads. */
export interface PoolPod {
  metadata: { name: string; namespace?: string; uid?: string; resourceVersion?: string; deletionTimestamp?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  status?: { podIP?: string; phase?: string; conditions?: Array<{ type: string; status: string }> };
}

/** A generic pool pod that can take a claim now: running, ready (listening), with an address, not going. */
export function claimable(pod: PoolPod): boolean {
  if (pod.metadata.deletionTimestamp !== undefined || !pod.status?.podIP || pod.status.phase !== 'Running') return false;
  return (pod.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}

/**
 * Why the function cannot be specialized in this pool pod, or undefined when it can. The pod's
 * size is fixed when it starts (memory limit, CPU, its /tmp), and it has no Secret or ConfigMap
 * mounts: such functions take the Deployment path.
 */
export function fallbackReason(fn: FunctionResource, pod: PoolPod): FallbackReason | undefined {
  const a = pod.metadata.annotations ?? {};
  if (String(fn.spec.memoryMiB ?? limits.DEFAULT_MEMORY_MIB) !== a[ANNOTATION_POOL_MEMORY_MIB]) return 'size';
  if (fn.spec.cpu != null) {
    const [request, limit] = (a[ANNOTATION_POOL_CPU] ?? '').split('/');
    if ((fn.spec.cpu.request !== undefined && fn.spec.cpu.request !== request) || (fn.spec.cpu.limit !== undefined && fn.spec.cpu.limit !== limit)) return 'size';
  }
  if ((fn.spec.env ?? []).some((v) => v.valueFrom != null)) return 'env_from';
  if (fn.spec.codeRef != null && fn.spec.codeRef.size > Number(a[ANNOTATION_POOL_CODE_BYTES] ?? 0)) return 'code_size';
  return undefined;
}

/** The pods to try, in a random order: gateway replicas claiming at once mostly pick different pods. */
export function claimOrder<T>(pods: readonly T[], random: () => number = Math.random): T[] {
  const out = [...pods];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/**
 * The merge patch that claims `pod` for `fn`. Its resourceVersion makes it conditional: of
 * replicas patching the same pod at once exactly one succeeds, the others get 409. The new role
 * takes it out of the pool ReplicaSet's selector (which makes a new generic pod), and the
 * controller owner reference to the Function stops any ReplicaSet from adopting it and deletes it
 * with the Function. It never carries fnhost.dev/function (the function Deployment's selector).
 */
export function claimPatch(pod: PoolPod, fn: FunctionResource, now: number): Record<string, unknown> {
  if (!fn.metadata.uid) throw new Error(`Function ${fn.metadata.namespace}/${fn.metadata.name} has no uid`);
  return {
    metadata: {
      resourceVersion: pod.metadata.resourceVersion,
      labels: { 'fnhost.dev/role': ROLE_SPECIALIZED, [LABEL_POOL_FUNCTION]: fn.metadata.name, 'fnhost.dev/function-id': functionIdOf(fn) },
      annotations: { [ANNOTATION_CLAIMED_AT]: String(now), [ANNOTATION_GENERATION]: String(fn.metadata.generation ?? 0) },
      // blockOwnerDeletion false: setting it true needs update rights on functions/finalizers.
      ownerReferences: [{ apiVersion: API_VERSION, kind: KIND, name: fn.metadata.name, uid: fn.metadata.uid, controller: true, blockOwnerDeletion: false }],
    },
  };
}

/**
 * The remote specialization's body (runtime-image/src/specialize-remote.ts): the environment the
 * operator gives the function's pods (operator/src/builders/deployment.ts runtimeEnv) minus what
 * the pool pod has of its own (PORT, HOST, the gateway URL and egress proxy, the code file), with
 * the runtime token derived here; the inline code in the request, referenced code by digest.
 * Only literal env values: fallbackReason has sent a function with valueFrom to the Deployment path.
 */
export function specializationBody(fn: FunctionResource, runtimeToken: string): { env: Record<string, string>; code?: string } {
  const spec = fn.spec;
  const env: Record<string, string> = {};
  if (spec.codeRef != null) {
    env.FNHOST_CODE_DIGEST = spec.codeRef.digest;
    env.FNHOST_CODE_SIZE = String(spec.codeRef.size);
  }
  env.FNHOST_FUNCTION_ID = functionIdOf(fn);
  env.FNHOST_FUNCTION_NAME = servedNameOf(fn);
  env.FNHOST_ROUTES = JSON.stringify(spec.routes ?? []);
  env.FNHOST_TIMEOUT_MS = String((spec.timeoutSeconds ?? limits.DEFAULT_TIMEOUT_SECONDS) * 1000);
  env.FNHOST_MEMORY_MIB = String(spec.memoryMiB ?? limits.DEFAULT_MEMORY_MIB);
  env.FNHOST_RUNTIME_TOKEN = runtimeToken;
  for (const v of spec.env ?? []) env[v.name] = v.value ?? '';
  return spec.codeRef != null ? { env } : { env, code: spec.code ?? '' };
}

/** http://<pod IP>:<port> (IPv6 in brackets). */
export function podOrigin(ip: string, port: number): string {
  return ip.includes(':') ? `http://[${ip}]:${port}` : `http://${ip}:${port}`;
}
