import { expect } from 'chai';
import { functionIdOwner } from '@fnhost/core/function-identity.ts';
import { ANNOTATION_ID_HOME } from '@fnhost/core/function-id-home.ts';
import { FunctionIdHomes, FunctionIdIndex, MemoryFunctionIdHomeStore } from '../../operator/src/identities.ts';
import { derivedFunctionId } from '../../operator/src/names.ts';
import { FakeClock, fnResource } from './fixtures.ts';
import type { FunctionResource } from '@fnhost/core/function-resource.ts';

// Who may hold a functionId (operator/src/identities.ts): the id's stored home namespace, then the
// oldest claimant of that namespace. The sequence of issue 28: a claim from team-b while team-a's
// Function exists, team-a's Function deleted and re-applied, team-b's claimant still there.

const owner = fnResource({}, { namespace: 'team-a', name: 'pay', uid: 'uid-pay', creationTimestamp: '2026-11-20T10:00:00Z' });
const OWNED_ID = derivedFunctionId('team-a', 'pay');
const thief = fnResource({ functionId: OWNED_ID }, { namespace: 'team-b', name: 'steal', uid: 'uid-steal', creationTimestamp: '2026-11-25T10:00:00Z' });

function setup(grants = true) {
  const index = new FunctionIdIndex();
  const store = new MemoryFunctionIdHomeStore();
  const homes = new FunctionIdHomes({ store, index, clock: new FakeClock(), grants });
  const see = (...fns: FunctionResource[]) => fns.forEach((f) => index.put(f));
  return { index, store, homes, see };
}

describe('functionId ownership', () => {
  it('functionIdOwner: the oldest claimant; creation ties go to namespace/name order; a claimant without a timestamp comes last', () => {
    expect(functionIdOwner([thief, owner])).to.equal(owner);
    const twin = fnResource({ functionId: OWNED_ID }, { namespace: 'team-0', name: 'pay', creationTimestamp: '2026-11-20T10:00:00Z' });
    expect(functionIdOwner([owner, twin])).to.equal(twin);
    const unwritten = fnResource({ functionId: OWNED_ID }, { namespace: 'team-0', name: 'early', creationTimestamp: undefined });
    expect(functionIdOwner([unwritten, thief])).to.equal(thief);
    expect(functionIdOwner([])).to.equal(undefined);
  });

  it('issue 28: a claim from another namespace is refused before, while and after the owner is deleted and re-applied; the owner holds its id again', async () => {
    const { index, homes, store, see } = setup();
    see(owner);
    expect(await homes.hold(owner)).to.deep.include({ held: true });
    expect(await store.get(OWNED_ID)).to.deep.include({ namespace: 'team-a', name: 'pay', how: 'derived' });
    see(thief);
    const refused = await homes.hold(thief);
    expect(refused.held).to.equal(false);
    if (!refused.held) expect(refused.problem.reason).to.equal('FunctionIdTaken');
    // team-a deletes pay (a GitOps replace): the claimant is looked at again, and still refused.
    expect(index.remove('team-a/pay')).to.deep.equal(['team-b/steal']);
    expect((await homes.hold(thief)).held).to.equal(false);
    expect(await homes.holds(thief)).to.equal(false);
    // Re-applied (a new uid and a later creation time than the claimant's): it is pay's again.
    const again = fnResource({}, { namespace: 'team-a', name: 'pay', uid: 'uid-pay-2', creationTimestamp: '2026-11-26T10:00:00Z' });
    see(again);
    expect((await homes.hold(again)).held).to.equal(true);
    expect((await homes.hold(thief)).held).to.equal(false);
    expect(await store.get(OWNED_ID)).to.deep.include({ namespace: 'team-a' });
  });

  it('a granted move (the annotation names the home) moves the home: the old Function is refused then, and only the holder cleans the id\'s logs', async () => {
    const { homes, store, see } = setup();
    see(owner);
    await homes.hold(owner);
    const mover = fnResource({ functionId: OWNED_ID }, { namespace: 'team-b', name: 'pay', uid: 'uid-mover', creationTimestamp: '2026-11-27T10:00:00Z', annotations: { [ANNOTATION_ID_HOME]: 'team-a' } });
    see(mover);
    const moved = await homes.hold(mover);
    expect(moved.held).to.equal(true);
    if (moved.held) expect(moved.moved).to.deep.include({ namespace: 'team-b', how: 'moved' });
    expect(await store.get(OWNED_ID)).to.deep.include({ namespace: 'team-b' });
    const old = await homes.hold(owner);
    expect(old.held).to.equal(false);
    if (!old.held) expect(old.problem.message).to.include('granted move');
    expect(await homes.holds(owner)).to.equal(false);
    expect(await homes.holds(mover)).to.equal(true);
  });

  it('an ungranted move, a grant naming another namespace, and a grant without the admission policy are refused; the home stays', async () => {
    for (const [annotations, grants, reason] of [[undefined, true, 'FunctionIdTaken'], [{ [ANNOTATION_ID_HOME]: 'team-c' }, true, 'FunctionIdHomeMismatch'], [{ [ANNOTATION_ID_HOME]: 'team-a' }, false, 'FunctionIdTaken']] as const) {
      const { homes, store, see } = setup(grants);
      see(owner);
      await homes.hold(owner);
      const mover = fnResource({ functionId: OWNED_ID }, { namespace: 'team-b', name: 'pay', creationTimestamp: '2026-11-27T10:00:00Z', annotations });
      see(mover);
      const got = await homes.hold(mover);
      expect(got.held).to.equal(false);
      if (!got.held) expect(got.problem.reason).to.equal(reason);
      expect(await store.get(OWNED_ID)).to.deep.include({ namespace: 'team-a' });
    }
  });

  it('a claim of a derived-form id nobody was given is refused (FunctionIdUnknown), and nothing is recorded', async () => {
    const { homes, store, see } = setup();
    see(thief);
    const got = await homes.hold(thief);
    expect(got.held).to.equal(false);
    if (!got.held) expect(got.problem.reason).to.equal('FunctionIdUnknown');
    expect(await store.get(OWNED_ID)).to.equal(null);
    // The derived owner, created later, holds it.
    see(owner);
    expect((await homes.hold(owner)).held).to.equal(true);
  });

  it('two writers racing on a first claim store one home; the loser is decided against the winner', async () => {
    const { homes, store, see } = setup();
    const imported = '3f2b8c1e-9d4a-4b6f-8e2d-1a2b3c4d5e6f';
    const a = fnResource({ functionId: imported }, { namespace: 'team-a', name: 'imp', creationTimestamp: '2026-11-20T10:00:00Z' });
    const b = fnResource({ functionId: imported }, { namespace: 'team-b', name: 'imp', creationTimestamp: '2026-11-20T09:00:00Z' });
    see(a, b);
    const [ga, gb] = await Promise.all([homes.hold(a), homes.hold(b)]);
    expect([ga.held, gb.held].filter(Boolean)).to.have.length(1);
    const stored = await store.get(imported);
    expect((ga.held ? 'team-a' : 'team-b')).to.equal(stored!.namespace);
  });

  it('within the home namespace, the older of two Functions naming one id holds it', async () => {
    const { homes, see } = setup();
    const second = fnResource({ functionId: OWNED_ID }, { namespace: 'team-a', name: 'pay-2', creationTimestamp: '2026-11-25T10:00:00Z' });
    see(owner, second);
    expect((await homes.hold(owner)).held).to.equal(true);
    const got = await homes.hold(second);
    expect(got.held).to.equal(false);
    if (!got.held) expect(got.problem.message).to.include('team-a/pay');
  });

  it('throwaway versions (replay --code) are no claimants', () => {
    const index = new FunctionIdIndex();
    const throwaway = fnResource({ functionId: OWNED_ID }, { namespace: 'team-a', name: 'pay-rp-abcde', creationTimestamp: '2026-11-01T00:00:00Z', labels: { 'fnhost.dev/throwaway': 'replay', 'fnhost.dev/replay-of': 'pay' } });
    index.put(throwaway);
    index.put(owner);
    expect(index.owner(OWNED_ID)).to.equal(owner);
    expect(index.claimants(OWNED_ID)).to.deep.equal(['team-a/pay']);
  });
});
