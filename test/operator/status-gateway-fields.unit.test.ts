import { expect } from 'chai';
import { desiredStatus, statusChanged } from '../../operator/src/status.ts';

// The gateway writes status.lastInvocationTime and status.errorRate (invocation
// feedback, gateway/src/cluster/status.ts): the operator's status must keep
// them and must not see them as a change (or every gateway write would cause a
// second, empty write by the operator).
describe('operator status keeps the gateway’s fields', () => {
  it('carries lastInvocationTime and errorRate over and reports no change', () => {
    const base = { functionId: 'id', url: 'http://gw/invoke/id', generation: 3, ready: { status: 'True' as const, reason: 'Available', message: 'ok' } };
    const first = desiredStatus(undefined, base, new Date('2026-11-23T10:00:00Z'));
    const stored = { ...first, lastInvocationTime: '2026-11-23T10:05:00Z', errorRate: '2%' };
    const next = desiredStatus(stored, base, new Date('2026-11-23T10:06:00Z'));
    expect(next).to.include({ lastInvocationTime: '2026-11-23T10:05:00Z', errorRate: '2%' });
    expect(statusChanged(stored, next)).to.equal(false);
  });
});
