import { deriveToken } from './function-identity.ts';

// The names the operator and the cluster-mode gateway share about the pool of generic runtime
// pods (docs/cluster-mode.md "Idle scale to zero", issue 32): the operator keeps one Deployment
// `fnhost-pool` per namespace that holds Functions; the gateway claims one of its pods for a cold
// call and specializes it over the pod network with the namespace's pool key.

export const POOL_NAME = 'fnhost-pool';
/** The Secret in each pool namespace: its POOL_KEY_FIELD is the pool pods' FNHOST_SPECIALIZE_TOKEN. */
export const POOL_SECRET_NAME = 'fnhost-pool-key';
export const POOL_KEY_FIELD = 'specialize-token';
/** app.kubernetes.io/name of pool pods, generic or specialized (not a function's: `fnhost-function`). */
export const POOL_APP_NAME = 'fnhost-pool';
/** fnhost.dev/role of a generic pool pod (the pool ReplicaSet's selector) ... */
export const ROLE_POOL = 'pool';
/** ... and of one claimed by a function: out of the pool's selector (its ReplicaSet makes a new one), never back in. */
export const ROLE_SPECIALIZED = 'specialized';
/**
 * The function a specialized pod serves, by name. Deliberately not fnhost.dev/function: that label
 * is in the function Deployment's selector, and its ReplicaSet would adopt the pod and count it.
 */
export const LABEL_POOL_FUNCTION = 'fnhost.dev/pool-function';
/** When the gateway claimed the pod (ms since the epoch): the operator spares it a grace period. */
export const ANNOTATION_CLAIMED_AT = 'fnhost.dev/claimed-at';
/** The Function's metadata.generation the pod was specialized for: another one means stale code. */
export const ANNOTATION_GENERATION = 'fnhost.dev/specialized-generation';
/** What a generic pool pod can hold (its pod template's annotations; the gateway falls back beyond). */
export const ANNOTATION_POOL_MEMORY_MIB = 'fnhost.dev/pool-memory-mib';
export const ANNOTATION_POOL_CPU = 'fnhost.dev/pool-cpu';
export const ANNOTATION_POOL_CODE_BYTES = 'fnhost.dev/pool-code-bytes';

/**
 * The pool key of a namespace: HMAC of the platform's token key, as the per-function tokens are
 * (function-identity.ts). The operator writes it into the namespace's Secret; the gateway computes
 * it without reading Secrets. One namespace's key opens no other namespace's pool.
 */
export function poolKeyOf(tokenKey: string, namespace: string): string {
  return deriveToken(tokenKey, 'pool', namespace);
}
