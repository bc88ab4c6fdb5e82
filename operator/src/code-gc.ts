import { collectableCode, type CodeBlobInfo, type CodeStore } from '@fnhost/core';
import type { Clock } from '@fnhost/core/clock.ts';
import type { FunctionResource } from '@fnhost/core/function-resource.ts';
import { ANNOTATION_CODE_DIGEST } from './builders/deployment.ts';
import type { Logger } from './log.ts';

// Code GC in cluster mode (docs/cluster-mode.md "Large code"): the operator's leader deletes the
// stored code blobs nothing uses any more, with core's pure decision (collectableCode, the same as
// one machine's). A blob is kept while any Function of any namespace names it in spec.codeRef
// (replay throwaways are Functions too), while any ReplicaSet of a function's Deployment that
// still has pods names it in its pod template's annotation (a rolling update's old pods, which
// may restart), and for the grace period after its last upload (an upload made just before its
// create or a GitOps apply). A run that cannot list Functions or ReplicaSets deletes nothing.
// Only an operator that watches every namespace collects: one that watches one namespace cannot
// see the others' references.

export const DEFAULT_CODE_GC_INTERVAL_MS = 10 * 60_000;

/** The fields of a ReplicaSet read here. */
export interface ReplicaSetView {
  spec?: { replicas?: number; template?: { metadata?: { annotations?: Record<string, string> } } };
  status?: { replicas?: number };
}

/** Every digest in use: Functions' spec.codeRef, and the pod templates of ReplicaSets that still have (or want) pods. */
export function digestsInUse(functions: readonly FunctionResource[], replicaSets: readonly ReplicaSetView[]): Set<string> {
  const used = new Set<string>();
  for (const fn of functions) if (fn.spec?.codeRef?.digest) used.add(fn.spec.codeRef.digest);
  for (const rs of replicaSets) {
    if ((rs.spec?.replicas ?? 0) === 0 && (rs.status?.replicas ?? 0) === 0) continue;
    const digest = rs.spec?.template?.metadata?.annotations?.[ANNOTATION_CODE_DIGEST];
    if (digest) used.add(digest);
  }
  return used;
}

export interface CodeCollectorDeps {
  store: Pick<CodeStore, 'list' | 'delete'>;
  listFunctions(): Promise<FunctionResource[]>;
  listReplicaSets(): Promise<ReplicaSetView[]>;
  clock: Clock;
  log: Logger;
  graceMs: number;
}

export class CodeCollector {
  readonly #d: CodeCollectorDeps;
  deleted = 0;
  failures = 0;
  constructor(deps: CodeCollectorDeps) {
    this.#d = deps;
  }

  /** One pass: the digests deleted. Throws (deleting nothing) when a listing fails. */
  async runOnce(): Promise<string[]> {
    // The blobs first: a blob uploaded and referenced after this listing is not in it.
    const blobs: CodeBlobInfo[] = await this.#d.store.list();
    const [functions, replicaSets] = await Promise.all([this.#d.listFunctions(), this.#d.listReplicaSets()]);
    const used = digestsInUse(functions, replicaSets);
    const now = this.#d.clock.now();
    const doomed = collectableCode(blobs.map((b) => ({ digest: b.digest, uploadedAt: b.uploadedAt })), used, now, this.#d.graceMs);
    const gone: string[] = [];
    for (const digest of doomed) {
      // Only if not uploaded (or used by a write) again since the listing: the store checks it in the same step.
      if (await this.#d.store.delete(digest, now - this.#d.graceMs)) gone.push(digest);
    }
    this.deleted += gone.length;
    if (gone.length > 0) this.#d.log.info('unreferenced code collected', { deleted: gone, kept: blobs.length - gone.length });
    return gone;
  }

  /** Runs every `intervalMs` until the returned stop is called; a failed pass is logged and counted, never fatal. */
  start(intervalMs: number): () => void {
    let stopped = false;
    let timer: unknown;
    const tick = async () => {
      try {
        await this.runOnce();
      } catch (err) {
        this.failures++;
        this.#d.log.warn('code GC pass failed; nothing deleted, tried again at the next interval', { error: (err as Error).message });
      }
      if (!stopped) timer = this.#d.clock.setTimeout(() => void tick(), intervalMs);
    };
    timer = this.#d.clock.setTimeout(() => void tick(), Math.min(intervalMs, 60_000));
    return () => {
      stopped = true;
      this.#d.clock.clearTimeout(timer);
    };
  }
}
