import { createHash } from 'node:crypto';
import { limits } from '@fnhost/core';
import { API_VERSION, KIND } from './types.ts';
import type { FunctionResource, OwnerReference } from './types.ts';

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

// RFC 4122 name-based UUID (version 5, SHA-1). The namespace UUID is fnhost's
// own, fixed forever: changing it would change every derived functionId.
export const FUNCTION_ID_NAMESPACE = '5b0f2a7e-3c1d-5e8a-9f4b-6d2c1a0e7b93';

export function uuidV5(name: string, namespaceUuid: string): string {
  const ns = Buffer.from(namespaceUuid.replace(/-/g, ''), 'hex');
  const hash = createHash('sha1').update(ns).update(name, 'utf8').digest();
  const bytes = hash.subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x50;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The derived identity of a Function: the same namespace/name always gives the same id. */
export function derivedFunctionId(namespace: string, name: string): string {
  return uuidV5(`${namespace}/${name}`, FUNCTION_ID_NAMESPACE);
}

/** spec.functionId (set once, for imported functions) wins over the derived id. */
export function functionIdOf(fn: FunctionResource): string {
  return fn.spec.functionId ?? derivedFunctionId(fn.metadata.namespace ?? 'default', fn.metadata.name);
}

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
