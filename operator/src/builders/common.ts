import { createHash } from 'node:crypto';
import { limits } from '@fnhost/core';
import { functionIdOf, labelsFor, ownerReference } from '../names.ts';
import type { FunctionResource } from '@fnhost/core/function-resource.ts';
import type { KubeObject, Settings } from '../types.ts';

/** Metadata every owned object carries: labels and the controller owner reference. */
export function ownedMeta(fn: FunctionResource, name: string, extraLabels: Record<string, string> = {}): KubeObject['metadata'] {
  return {
    name,
    namespace: fn.metadata.namespace,
    labels: { ...labelsFor(fn), ...extraLabels },
    ownerReferences: [ownerReference(fn)],
  };
}

/** The spec with every default the CRD schema applies, so builders never guess. */
export interface EffectiveSpec {
  functionId: string;
  /** Inline code; '' when the code is referenced (codeRef). */
  code: string;
  codeRef: { digest: string; size: number } | null;
  routes: string[];
  env: NonNullable<FunctionResource['spec']['env']>;
  timeoutSeconds: number;
  memoryMiB: number;
  active: boolean;
  replicas: number;
  schedule: { cron: string; timezone: string; suspend: boolean } | null;
}

export function effectiveSpec(fn: FunctionResource): EffectiveSpec {
  const s = fn.spec;
  return {
    functionId: functionIdOf(fn),
    code: s.code ?? '',
    codeRef: s.codeRef ?? null,
    routes: s.routes ?? [],
    env: s.env ?? [],
    timeoutSeconds: s.timeoutSeconds ?? limits.DEFAULT_TIMEOUT_SECONDS,
    memoryMiB: s.memoryMiB ?? limits.DEFAULT_MEMORY_MIB,
    active: s.active ?? true,
    replicas: s.replicas ?? 1,
    schedule: s.schedule ? { cron: s.schedule.cron, timezone: s.schedule.timezone ?? 'UTC', suspend: s.schedule.suspend ?? false } : null,
  };
}

/**
 * What the running pod depends on besides its own spec: the code (mounted from
 * a ConfigMap, which the runtime reads once) and the env and token key. A
 * change of this hash changes the pod template, so the Deployment rolls.
 */
export function configHash(fn: FunctionResource, settings: Settings): string {
  const e = effectiveSpec(fn);
  return createHash('sha256')
    .update(JSON.stringify({ code: e.code, ...(e.codeRef === null ? {} : { codeRef: e.codeRef.digest }), env: e.env, routes: e.routes, tokenKey: createHash('sha256').update(settings.tokenKey).digest('hex') }))
    .digest('hex')
    .slice(0, 32);
}

/**
 * The gateway's addresses in the pod's /etc/hosts (settings.gatewayHostAliases):
 * function pods have no DNS under the operator's NetworkPolicy. Nothing when empty.
 */
export function hostAliasesOf(settings: Settings): { hostAliases?: Array<{ ip: string; hostnames: string[] }> } {
  if (settings.gatewayHostAliases.length === 0) return {};
  return { hostAliases: settings.gatewayHostAliases.map((a) => ({ ip: a.ip, hostnames: [...a.hostnames] })) };
}

/**
 * Checks of the policy scanner (checkov, charts/scan.sh) decided against for the
 * function's Deployment and CronJob, each with its reason, as annotations the
 * scanner reads (docs/install.md, Security posture). Without a pod template's
 * change: adding them rolls no pod.
 */
export const SCAN_SKIPS: Record<string, string> = {
  'checkov.io/skip1': 'CKV_K8S_43=the runtime image is named by the operator setting FNHOST_RUNTIME_IMAGE (the chart gives repository@digest when runtimeImage.digest is set); the test cluster\'s locally built images have no registry digest',
  'checkov.io/skip2': 'CKV_K8S_15=the pull policy is the setting FNHOST_IMAGE_PULL_POLICY (IfNotPresent by default: a pod scaled up from zero does not wait for the registry; Never for local test images)',
};

/** Security context shared by the runtime and the schedule job. */
export function podSecurityContext(settings: Settings) {
  return {
    runAsNonRoot: true,
    runAsUser: settings.runAsUser,
    runAsGroup: settings.runAsUser,
    seccompProfile: { type: 'RuntimeDefault' },
  };
}

export function containerSecurityContext() {
  return {
    allowPrivilegeEscalation: false,
    readOnlyRootFilesystem: true,
    capabilities: { drop: ['ALL'] },
  };
}
