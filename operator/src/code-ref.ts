import { isDigest, limits } from '@fnhost/core';
import type { FunctionResource } from '@fnhost/core/function-resource.ts';

// spec.codeRef (docs/cluster-mode.md "Large code"): a Function's code held in the platform's code
// store by digest instead of inline. The operator checks its shape (an older CRD may not), and that
// the digest was uploaded by the Function's own namespace (the store answers a digest another
// namespace uploaded exactly as a missing one: tenancy by namespace). A missing digest is
// Ready=False CodeMissing: no Deployment is started for it (a pod could only fail to fetch it),
// the last good objects keep running, its calls get a 503 at once, and the reconcile looks again
// on a backoff (CODE_MISSING_RECHECK_MS), so the Function converges once the digest is uploaded.

/** Why a spec cannot run (validate.ts's CodeProblem, the same shape). */
export interface CodeProblem {
  reason: string;
  message: string;
}

/** Whether `namespace` may use `digest`: it uploaded it and it is still stored (CodeStore.stat). */
export type CodePresence = (namespace: string, digest: string) => Promise<boolean>;

/** How soon a Function whose code is missing looks again: soon at first (an upload right after the apply), then every minute. */
export function codeMissingRecheckMs(missingForMs: number): number {
  return Math.min(60_000, Math.max(5_000, Math.floor(missingForMs / 4)));
}

/** Exactly one of spec.code and spec.codeRef, and a well-formed reference. */
export function checkCodeSource(fn: FunctionResource): CodeProblem | null {
  const { code, codeRef } = fn.spec;
  if (codeRef != null && code != null) {
    return { reason: 'InvalidCode', message: 'spec.code and spec.codeRef are both set: give the module inline (code) or by reference (codeRef), not both' };
  }
  if (codeRef == null) return null;
  if (!isDigest(codeRef.digest)) {
    return { reason: 'InvalidCode', message: `spec.codeRef.digest ${JSON.stringify(codeRef.digest)} is malformed: expected "sha256:" and 64 lowercase hex digits` };
  }
  if (!Number.isInteger(codeRef.size) || codeRef.size < 1 || codeRef.size > limits.MAX_CODE_REF_BYTES) {
    return { reason: 'CodeTooLarge', message: `spec.codeRef.size is ${codeRef.size}; it must be from 1 to ${limits.MAX_CODE_REF_BYTES} bytes` };
  }
  return null;
}

/** Ready=False CodeMissing naming the digest, or null when the namespace has it (or the code is inline). */
export async function codeMissing(fn: FunctionResource, presence: CodePresence | undefined): Promise<CodeProblem | null> {
  const ref = fn.spec.codeRef;
  if (ref == null) return null;
  const namespace = fn.metadata.namespace ?? 'default';
  if (presence !== undefined && (await presence(namespace, ref.digest))) return null;
  return {
    reason: 'CodeMissing',
    message: presence === undefined
      ? `spec.codeRef names ${ref.digest}, but this operator has no code store (MONGODB_URL unset), so referenced code cannot run`
      : `spec.codeRef names ${ref.digest}, which namespace ${namespace} has not uploaded (or it was collected): upload it with fnhost bundle <file> --push -n ${namespace} (or PUT /api/v1/code/${ref.digest}); the Function starts once it is there`,
  };
}

/** status.code, the Code column: `inline`, or the digest's first 12 hex digits (as `docker images` shortens ids). */
export function codeLabel(fn: FunctionResource): string {
  const ref = fn.spec.codeRef;
  return ref == null ? 'inline' : `${ref.digest.slice(0, 'sha256:'.length + 12)}`;
}
