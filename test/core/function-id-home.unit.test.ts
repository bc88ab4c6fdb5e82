import { expect } from 'chai';
import { derivedFunctionId } from '../../core/src/function-identity.ts';
import { ANNOTATION_ID_HOME, claimOf, decideClaim, hasDerivedForm, mayServe, type FunctionIdHome, type IdClaim } from '../../core/src/function-id-home.ts';
import type { FunctionResource } from '../../core/src/function-resource.ts';

// The rule of docs/security.md "Tenancy": an id stays with the namespace it was first given to.

const A_ID = derivedFunctionId('team-a', 'hello-a');
const IMPORTED = '3f2b8c1e-9d4a-4b6f-8e2d-1a2b3c4d5e6f'; // a one-machine id: random, version 4

function claim(fields: Partial<IdClaim>): IdClaim {
  return { functionId: A_ID, namespace: 'team-a', name: 'hello-a', derived: true, served: false, ...fields };
}
function home(fields: Partial<FunctionIdHome>): FunctionIdHome {
  return { function_id: A_ID, namespace: 'team-a', name: 'hello-a', how: 'derived', at: 1, ...fields };
}
const thief = claim({ namespace: 'team-b', name: 'steal', derived: false });

describe('functionId homes: the rule', () => {
  it('a derived id: recorded at its first claim, its own thereafter', () => {
    expect(decideClaim(claim({}), null, true)).to.deep.equal({ kind: 'record', how: 'derived' });
    expect(decideClaim(claim({}), home({}), true)).to.deep.equal({ kind: 'own' });
  });

  it('another namespace naming the id is refused while the home\'s Function exists and while it is absent alike (the rule never looks at who is present)', () => {
    const d = decideClaim(thief, home({}), true);
    expect(d.kind).to.equal('refuse');
    if (d.kind !== 'refuse') return;
    expect(d.reason).to.equal('FunctionIdTaken');
    expect(d.message).to.include('team-a').and.to.include(ANNOTATION_ID_HOME);
  });

  it('a derived-form id never given is refused to an explicit claim (it may be another namespace\'s future name); a random one-machine id is recorded as claimed', () => {
    expect(decideClaim(thief, null, true)).to.deep.include({ kind: 'refuse', reason: 'FunctionIdUnknown' });
    expect(decideClaim(claim({ functionId: IMPORTED, namespace: 'team-b', name: 'imported', derived: false }), null, true)).to.deep.equal({ kind: 'record', how: 'claimed' });
    // A Function an earlier operator already serves under the id keeps it at the upgrade (its first recorded claim).
    expect(decideClaim({ ...thief, served: true }, null, true)).to.deep.equal({ kind: 'record', how: 'claimed' });
  });

  it('the derived id\'s own namespace/name takes it back from an ungranted claim, never from a granted move', () => {
    expect(decideClaim(claim({}), home({ namespace: 'team-b', how: 'claimed' }), true)).to.deep.equal({ kind: 'move', from: 'team-b', how: 'derived' });
    expect(decideClaim(claim({}), home({ namespace: 'team-b', how: 'moved' }), true)).to.deep.include({ kind: 'refuse', reason: 'FunctionIdTaken' });
  });

  it('a grant naming the home moves it; naming another namespace is a mismatch; without the admission policy a grant moves nothing', () => {
    const granted = { ...thief, grantFrom: 'team-a' };
    expect(decideClaim(granted, home({}), true)).to.deep.equal({ kind: 'move', from: 'team-a', how: 'moved' });
    expect(decideClaim({ ...thief, grantFrom: 'team-c' }, home({}), true)).to.deep.include({ kind: 'refuse', reason: 'FunctionIdHomeMismatch' });
    const off = decideClaim(granted, home({}), false);
    expect(off).to.deep.include({ kind: 'refuse', reason: 'FunctionIdTaken' });
    expect(off.kind === 'refuse' && off.message).to.include('functions.idGrants');
    // After the move the id is team-b's: the old derived Function is refused, and moves it back only by a grant.
    const moved = home({ namespace: 'team-b', name: 'steal', how: 'moved' });
    expect(decideClaim(granted, moved, true)).to.deep.equal({ kind: 'own' });
    expect(decideClaim(claim({ grantFrom: 'team-b' }), moved, true)).to.deep.equal({ kind: 'move', from: 'team-b', how: 'derived' });
  });

  it('claimOf reads the id, whether it is derived, the grant and whether an earlier operator served it', () => {
    const res: FunctionResource = {
      apiVersion: 'fnhost.dev/v1alpha1', kind: 'Function',
      metadata: { name: 'steal', namespace: 'team-b', annotations: { [ANNOTATION_ID_HOME]: 'team-a' } },
      spec: { code: 'x', functionId: A_ID },
      status: { functionId: A_ID, conditions: [{ type: 'Ready', status: 'False', reason: 'FunctionIdTaken', message: '', lastTransitionTime: '2026-01-01T00:00:00Z' }] },
    };
    expect(claimOf(res)).to.deep.equal({ functionId: A_ID, namespace: 'team-b', name: 'steal', derived: false, grantFrom: 'team-a', served: false });
    const own: FunctionResource = { ...res, metadata: { name: 'hello-a', namespace: 'team-a', annotations: { [ANNOTATION_ID_HOME]: 'team-a' } }, spec: { code: 'x', functionId: A_ID } };
    expect(claimOf(own)).to.deep.include({ derived: true, grantFrom: undefined, served: false });
    const serving: FunctionResource = { ...res, status: { functionId: A_ID, conditions: [{ type: 'Ready', status: 'True', reason: 'Available', message: '', lastTransitionTime: '2026-01-01T00:00:00Z' }] } };
    expect(claimOf(serving).served).to.equal(true);
  });

  it('mayServe: a known home serves its namespace only; no home or not read yet serves only the derived owner', () => {
    expect(mayServe({ namespace: 'team-a', derived: true }, 'team-a')).to.equal(true);
    expect(mayServe({ namespace: 'team-b', derived: false }, 'team-a')).to.equal(false);
    expect(mayServe({ namespace: 'team-b', derived: false }, 'team-b')).to.equal(true);
    expect(mayServe({ namespace: 'team-a', derived: true }, 'team-b')).to.equal(false);
    for (const unknown of [null, undefined]) {
      expect(mayServe({ namespace: 'team-a', derived: true }, unknown)).to.equal(true);
      expect(mayServe({ namespace: 'team-b', derived: false }, unknown)).to.equal(false);
    }
  });

  it('hasDerivedForm: UUIDv5 only', () => {
    expect(hasDerivedForm(A_ID)).to.equal(true);
    expect(hasDerivedForm(IMPORTED)).to.equal(false);
  });
});
