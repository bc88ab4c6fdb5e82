import { limits } from '@fnhost/core';
import { functionIdOf } from '@fnhost/core/function-identity.ts';
import { API_VERSION, KIND } from '@fnhost/core/function-resource.ts';
import type { FunctionResource, OwnerReference } from '@fnhost/core/function-resource.ts';

// Names of what a Function owns. The CRD limits a Function's name to
// MAX_FUNCTION_NAME_LENGTH (40) characters, so `fn-<name>-cron` is at most 48
// characters: within the 52 a CronJob name may have (its Jobs append 11).
// The `fn-` prefix also makes every name a DNS-1035 label (a Service name may
// not start with a digit; a Function name may).

export const FIELD_MANAGER = 'fnhost-operator';
export const FINALIZER = 'fnhost.dev/execution-logs';
export const MANAGED_BY = 'fnhost-operator';
export const LABEL_FUNCTION = 'fnhost.dev/function';
export const LABEL_FUNCTION_ID = 'fnhost.dev/function-id';
/** Which pods of a Function: `runtime` (the Deployment's) or `schedule` (the CronJob's job pods). */
export const LABEL_ROLE = 'fnhost.dev/role';
export const ROLE_RUNTIME = 'runtime';
export const ROLE_SCHEDULE = 'schedule';
export const ANNOTATION_CONFIG_HASH = 'fnhost.dev/config-hash';
export const MAX_CRONJOB_NAME_LENGTH = 52;

export interface OwnedNames {
  configMap: string;
  secret: string;
  deployment: string;
  service: string;
  cronJob: string;
}

export function ownedNames(functionName: string): OwnedNames {
  const base = `fn-${functionName}`;
  return {
    configMap: `${base}-code`,
    secret: `${base}-tokens`,
    deployment: base,
    service: base,
    cronJob: `${base}-cron`,
  };
}

/** True when every owned name fits Kubernetes' limits. */
export function nameFits(functionName: string): boolean {
  return functionName.length <= limits.MAX_FUNCTION_NAME_LENGTH && ownedNames(functionName).cronJob.length <= MAX_CRONJOB_NAME_LENGTH;
}

// The id derivation is shared with the cluster-mode gateway (core/src/function-identity.ts).
export { FUNCTION_ID_NAMESPACE, derivedFunctionId, functionIdOf, uuidV5 } from '@fnhost/core/function-identity.ts';

export function keyOf(namespace: string | undefined, name: string): string {
  return `${namespace ?? ''}/${name}`;
}

export function splitKey(key: string): { namespace: string; name: string } {
  const slash = key.indexOf('/');
  return { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

export function ownerReference(fn: FunctionResource): OwnerReference {
  if (!fn.metadata.uid) throw new Error(`Function ${fn.metadata.namespace}/${fn.metadata.name} has no uid: it must be read from the API server`);
  return { apiVersion: API_VERSION, kind: KIND, name: fn.metadata.name, uid: fn.metadata.uid, controller: true, blockOwnerDeletion: true };
}

export function labelsFor(fn: FunctionResource): Record<string, string> {
  return {
    'app.kubernetes.io/name': 'fnhost-function',
    'app.kubernetes.io/instance': fn.metadata.name,
    'app.kubernetes.io/managed-by': MANAGED_BY,
    [LABEL_FUNCTION]: fn.metadata.name,
    [LABEL_FUNCTION_ID]: functionIdOf(fn),
  };
}

/** The Deployment's selector: only the name, because a selector cannot change later. */
export function selectorFor(fn: FunctionResource): Record<string, string> {
  return { 'app.kubernetes.io/managed-by': MANAGED_BY, [LABEL_FUNCTION]: fn.metadata.name };
}

/**
 * The Service's selector: the runtime pods only. The CronJob's job pods carry
 * the same name labels (they match selectorFor, though no ReplicaSet adopts
 * them: a Job owns them), and a running job pod is Ready, so without the role
 * the Service (and its EndpointSlices) would send invocations to it.
 */
export function runtimePodSelector(fn: FunctionResource): Record<string, string> {
  return { ...selectorFor(fn), [LABEL_ROLE]: ROLE_RUNTIME };
}
