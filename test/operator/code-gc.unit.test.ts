import { expect } from 'chai';
import type { CodeBlobInfo } from '@fnhost/core';
import { API_VERSION, KIND, type FunctionResource } from '@fnhost/core/function-resource.ts';
import { CodeCollector, digestsInUse, type ReplicaSetView } from '../../operator/src/code-gc.ts';
import { ANNOTATION_CODE_DIGEST } from '../../operator/src/builders/deployment.ts';

// Code GC in cluster mode (docs/cluster-mode.md "Large code"): what any Function of any namespace
// references, what a ReplicaSet with pods still runs (a rolling update) and what is younger than
// the grace period is kept; the rest is deleted; a failed listing deletes nothing.

const d = (c: string) => `sha256:${c.repeat(64)}`;
const HOUR = 3_600_000;
const NOW = 1_800_000_000_000;
const fn = (ns: string, digest?: string, labels?: Record<string, string>): FunctionResource => ({
  apiVersion: API_VERSION, kind: KIND, metadata: { name: 'f', namespace: ns, ...(labels ? { labels } : {}) }, spec: digest ? { codeRef: { digest, size: 10 } } : { code: 'x' },
});
const rs = (digest: string, replicas: number, statusReplicas = replicas): ReplicaSetView => ({ spec: { replicas, template: { metadata: { annotations: { [ANNOTATION_CODE_DIGEST]: digest } } } }, status: { replicas: statusReplicas } });

function collector(blobs: CodeBlobInfo[], functions: () => Promise<FunctionResource[]>, replicaSets: () => Promise<ReplicaSetView[]>) {
  const deleted: string[] = [];
  const before: number[] = [];
  const c = new CodeCollector({
    store: { list: async () => blobs, delete: async (digest, uploadedBefore) => (deleted.push(digest), before.push(uploadedBefore), true) },
    listFunctions: functions,
    listReplicaSets: replicaSets,
    clock: { now: () => NOW, setTimeout: () => 0, clearTimeout: () => undefined },
    log: { info() {}, warn() {}, error() {}, debug() {} } as never,
    graceMs: HOUR,
  });
  return { c, deleted, before };
}

describe('operator: code GC', () => {
  it('keeps digests any Function of any namespace names (throwaways included) and those of ReplicaSets with pods', () => {
    const used = digestsInUse(
      [fn('team-a', d('a')), fn('team-b', d('b'), { 'fnhost.dev/throwaway': 'true' }), fn('team-c')],
      [rs(d('c'), 0, 1), rs(d('e'), 1), rs(d('f'), 0, 0)],
    );
    expect([...used].sort()).to.deep.equal([d('a'), d('b'), d('c'), d('e')]);
  });

  it('deletes an old unreferenced blob, keeps a referenced one, one an old ReplicaSet still runs and a young one', async () => {
    const blobs = [
      { digest: d('1'), size: 5, uploadedAt: NOW - 2 * HOUR }, // unreferenced, old: collected
      { digest: d('2'), size: 5, uploadedAt: NOW - 2 * HOUR }, // a Function names it
      { digest: d('3'), size: 5, uploadedAt: NOW - 2 * HOUR }, // a rolling update's old pods run it
      { digest: d('4'), size: 5, uploadedAt: NOW - HOUR / 2 }, // unreferenced but young (an upload before its apply)
    ];
    const { c, deleted, before } = collector(blobs, async () => [fn('team-a', d('2'))], async () => [rs(d('3'), 1)]);
    expect(await c.runOnce()).to.deep.equal([d('1')]);
    expect(deleted).to.deep.equal([d('1')]);
    // The store deletes it only when not uploaded or used again since the grace began.
    expect(before).to.deep.equal([NOW - HOUR]);
  });

  it('deletes nothing when the Functions or the ReplicaSets cannot be listed', async () => {
    const blobs = [{ digest: d('1'), size: 5, uploadedAt: NOW - 2 * HOUR }];
    const failing = collector(blobs, async () => { throw new Error('503'); }, async () => []);
    await failing.c.runOnce().then(() => expect.fail('a pass on partial knowledge'), (err: Error) => expect(err.message).to.equal('503'));
    expect(failing.deleted).to.deep.equal([]);
    const rsFailing = collector(blobs, async () => [], async () => { throw new Error('forbidden'); });
    await rsFailing.c.runOnce().catch(() => undefined);
    expect(rsFailing.deleted).to.deep.equal([]);
  });
});
