import type { CodeRef } from './digest.ts';

// Which stored code may go (one machine's background task, the cluster's GC): the pure decision,
// so both modes decide alike.

/** A stored blob as GC sees it: its newest upload time (ms), of any namespace. */
export interface CodeBlobAge {
  digest: string;
  uploadedAt: number;
}

/** By default a blob nothing references is kept this long after its last upload: an upload made just before its create (or a GitOps apply) is not collected in between. */
export const DEFAULT_CODE_GC_GRACE_MS = 60 * 60 * 1000;

/**
 * The digests to delete: blobs no function (current code, a rolling update's, a replay
 * throwaway's) references, last uploaded at least `graceMs` before `now`. An upload time in the
 * future (a clock step) counts as now: kept.
 */
export function collectableCode(blobs: readonly CodeBlobAge[], referenced: ReadonlySet<string>, now: number, graceMs: number): string[] {
  return blobs.filter((b) => !referenced.has(b.digest) && now - b.uploadedAt >= graceMs).map((b) => b.digest);
}

/** The digests the given code references name. */
export function referencedDigests(refs: Iterable<CodeRef | undefined | null>): Set<string> {
  const out = new Set<string>();
  for (const ref of refs) if (ref) out.add(ref.digest);
  return out;
}
