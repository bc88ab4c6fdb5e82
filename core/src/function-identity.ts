import { createHash, createHmac } from 'node:crypto';
import type { FunctionResource } from './function-resource.ts';

// What the operator and the cluster-mode gateway must compute alike without
// talking to each other (they meet only through the API server): a Function's
// stable id and its per-function credentials. One copy here, used by both.

/** fnhost's own namespace UUID for name-based ids, fixed forever: changing it would change every derived functionId. */
export const FUNCTION_ID_NAMESPACE = '5b0f2a7e-3c1d-5e8a-9f4b-6d2c1a0e7b93';

/** RFC 4122 name-based UUID, version 5 (SHA-1). */
export function uuidV5(name: string, namespaceUuid: string): string {
  const ns = Buffer.from(namespaceUuid.replace(/-/g, ''), 'hex');
  const bytes = createHash('sha1').update(ns).update(name, 'utf8').digest().subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x50;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The derived identity of a Function: the same namespace/name always gives the same id (kubectl apply, restore, GitOps re-sync). */
export function derivedFunctionId(namespace: string, name: string): string {
  return uuidV5(`${namespace}/${name}`, FUNCTION_ID_NAMESPACE);
}

/** A Function's id: spec.functionId (set once, for imported functions) wins over the derived id. */
export function functionIdOf(res: FunctionResource): string {
  return res.spec.functionId ?? derivedFunctionId(res.metadata.namespace ?? 'default', res.metadata.name);
}

type Claimant = Pick<FunctionResource, 'metadata'>;

/**
 * Of the Functions that claim one functionId, the one it belongs to: the oldest (creation time,
 * then namespace and name, so every replica of the operator and the gateway picks the same).
 * spec.functionId can name any id, so without this a Function in another namespace could take
 * over a function's id: its /invoke route, and with it the runtime token, KV and logs the id
 * carries. Throwaway versions (replay-throwaway.ts) share their original's id by design and are
 * checked apart: give only the others.
 */
export function functionIdOwner<T extends Claimant>(claimants: readonly T[]): T | undefined {
  let owner: T | undefined;
  for (const c of claimants) if (owner === undefined || claimsFirst(c, owner)) owner = c;
  return owner;
}

function claimsFirst(a: Claimant, b: Claimant): boolean {
  const at = Date.parse(a.metadata.creationTimestamp ?? '');
  const bt = Date.parse(b.metadata.creationTimestamp ?? '');
  // A claimant not yet created (no timestamp: a write in flight) comes after every created one.
  const ak = Number.isNaN(at) ? Infinity : at;
  const bk = Number.isNaN(bt) ? Infinity : bt;
  if (ak !== bk) return ak < bk;
  const an = `${a.metadata.namespace ?? 'default'}/${a.metadata.name}`;
  const bn = `${b.metadata.namespace ?? 'default'}/${b.metadata.name}`;
  return an < bn;
}

export type TokenPurpose = 'runtime' | 'schedule' | 'pool';

/**
 * A per-function credential: HMAC-SHA256 of the purpose and the functionId
 * under FNHOST_TOKEN_KEY. Every operator replica derives the same token (no
 * fight over a Secret's contents), and the gateway verifies one with the same
 * key without reading Secrets. Rotating the key rotates every token.
 */
export function deriveToken(key: string, purpose: TokenPurpose, functionId: string): string {
  return createHmac('sha256', key).update(`fnhost/${purpose}/${functionId}`).digest('base64url');
}
