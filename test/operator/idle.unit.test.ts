import { expect } from 'chai';
import { idleDecision, lastActivityMs } from '../../operator/src/idle.ts';
import { fnResource } from './fixtures.ts';

const T0 = Date.parse('2026-11-23T10:00:00Z');
const iso = (ms: number) => new Date(ms).toISOString();

describe('operator idle scale to zero (pure)', () => {
  it('does nothing for a function without spec.scaleToZero, or an inactive one', () => {
    const fn = fnResource({}, { creationTimestamp: iso(T0 - 86_400_000) });
    expect(idleDecision(fn, T0)).to.deep.equal({ idle: false });
    const inactive = fnResource({ active: false, scaleToZero: { idleSeconds: 30 } }, { creationTimestamp: iso(T0 - 86_400_000) });
    expect(idleDecision(inactive, T0)).to.deep.equal({ idle: false });
  });

  it('gives a new function a full window from its creation', () => {
    const fn = fnResource({ scaleToZero: { idleSeconds: 60 } }, { creationTimestamp: iso(T0) });
    expect(idleDecision(fn, T0 + 10_000)).to.deep.equal({ idle: false, idleInMs: 50_000, sinceMs: T0 });
    expect(idleDecision(fn, T0 + 60_000)).to.deep.equal({ idle: true, sinceMs: T0 });
  });

  it('counts from the last invocation the gateway reported, so a wake write scales it back up', () => {
    const fn = fnResource({ scaleToZero: { idleSeconds: 60 } }, { creationTimestamp: iso(T0) });
    fn.status = { lastInvocationTime: '2026-11-23T10:05:00Z' };
    const last = Date.parse('2026-11-23T10:05:00Z');
    expect(idleDecision(fn, last + 59_000).idle).to.equal(false);
    expect(idleDecision(fn, last + 59_000).idleInMs).to.equal(1_000);
    expect(idleDecision(fn, last + 61_000)).to.deep.equal({ idle: true, sinceMs: last });
    // The gateway's wake: a newer lastInvocationTime.
    fn.status = { lastInvocationTime: iso(last + 120_000) };
    expect(idleDecision(fn, last + 121_000).idle).to.equal(false);
  });

  it('treats a time in the future (clock skew) as now, and unparsable times as absent', () => {
    const fn = fnResource({ scaleToZero: { idleSeconds: 30 } }, { creationTimestamp: 'not a time' });
    fn.status = { lastInvocationTime: iso(T0 + 3_600_000) };
    expect(lastActivityMs(fn, T0)).to.equal(T0);
    expect(idleDecision(fn, T0)).to.deep.equal({ idle: false, idleInMs: 30_000, sinceMs: T0 });
    fn.status = {};
    expect(lastActivityMs(fn, T0)).to.equal(T0);
  });

  it('counts from the newer of creation and last invocation', () => {
    const fn = fnResource({ scaleToZero: { idleSeconds: 30 } }, { creationTimestamp: iso(T0 + 5_000) });
    fn.status = { lastInvocationTime: iso(T0) };
    expect(lastActivityMs(fn, T0 + 10_000)).to.equal(T0 + 5_000);
  });
});
