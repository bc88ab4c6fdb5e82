import { expect } from 'chai';
import { functionIdOwner } from '@fnhost/core/function-identity.ts';
import { FunctionIdIndex } from '../../operator/src/identities.ts';
import { derivedFunctionId } from '../../operator/src/names.ts';
import { fnResource } from './fixtures.ts';

// spec.functionId can name any id: the older Function owns it, in any namespace, and a later one
// naming it gets nothing of it (operator/src/identities.ts, core's functionIdOwner).

const owner = fnResource({}, { namespace: 'team-a', name: 'pay', creationTimestamp: '2026-11-20T10:00:00Z' });
const OWNED_ID = derivedFunctionId('team-a', 'pay');
const thief = fnResource({ functionId: OWNED_ID }, { namespace: 'team-b', name: 'steal', creationTimestamp: '2026-11-25T10:00:00Z' });

describe('functionId ownership', () => {
  it('the oldest claimant owns the id; creation ties go to namespace/name order; a claimant without a timestamp comes last', () => {
    expect(functionIdOwner([thief, owner])).to.equal(owner);
    const twin = fnResource({ functionId: OWNED_ID }, { namespace: 'team-0', name: 'pay', creationTimestamp: '2026-11-20T10:00:00Z' });
    expect(functionIdOwner([owner, twin])).to.equal(twin);
    const unwritten = fnResource({ functionId: OWNED_ID }, { namespace: 'team-0', name: 'early', creationTimestamp: undefined });
    expect(functionIdOwner([unwritten, thief])).to.equal(thief);
    expect(functionIdOwner([])).to.equal(undefined);
  });

  it('the index gives the id to its owner whatever order the watch saw them in, and to the next one when the owner goes', () => {
    const index = new FunctionIdIndex();
    index.put(thief);
    index.put(owner);
    expect(index.owner(OWNED_ID)).to.equal(owner);
    // The owner deleted: its rival is named to be reconciled again, and owns the id now.
    expect(index.remove('team-a/pay')).to.deep.equal(['team-b/steal']);
    expect(index.owner(OWNED_ID)).to.equal(thief);
    expect(index.remove('team-b/steal')).to.deep.equal([]);
    expect(index.owner(OWNED_ID)).to.equal(undefined);
  });

  it('throwaway versions (replay --code) are no claimants', () => {
    const index = new FunctionIdIndex();
    const throwaway = fnResource({ functionId: OWNED_ID }, { namespace: 'team-a', name: 'pay-rp-abcde', creationTimestamp: '2026-11-01T00:00:00Z', labels: { 'fnhost.dev/throwaway': 'replay', 'fnhost.dev/replay-of': 'pay' } });
    index.put(throwaway);
    index.put(owner);
    expect(index.owner(OWNED_ID)).to.equal(owner);
  });
});
