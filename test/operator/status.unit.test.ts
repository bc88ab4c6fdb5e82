import { expect } from 'chai';
import { desiredStatus, statusChanged } from '../../operator/src/status.ts';

const T0 = new Date('2026-11-22T10:00:00.000Z');
const T1 = new Date('2026-11-22T10:05:00.000Z');
const base = { functionId: 'f-1', url: 'https://fn.example.com/invoke/f-1', generation: 3 };

describe('operator status', () => {
  it('builds Ready with observedGeneration on the status and the condition', () => {
    const s = desiredStatus(undefined, { ...base, ready: { status: 'True', reason: 'Available', message: '1 of 1' } }, T0);
    expect(s).to.deep.equal({
      functionId: 'f-1',
      url: 'https://fn.example.com/invoke/f-1',
      observedGeneration: 3,
      conditions: [{ type: 'Ready', status: 'True', reason: 'Available', message: '1 of 1', observedGeneration: 3, lastTransitionTime: '2026-11-22T10:00:00Z' }],
    });
  });

  it('keeps lastTransitionTime while the status stays the same, and moves it when it flips', () => {
    const first = desiredStatus(undefined, { ...base, ready: { status: 'False', reason: 'Progressing', message: 'a' } }, T0);
    const same = desiredStatus(first, { ...base, ready: { status: 'False', reason: 'RuntimeNotReady', message: 'b' } }, T1);
    expect(same.conditions![0]!.lastTransitionTime).to.equal('2026-11-22T10:00:00Z');
    const flipped = desiredStatus(same, { ...base, ready: { status: 'True', reason: 'Available', message: 'c' } }, T1);
    expect(flipped.conditions![0]!.lastTransitionTime).to.equal('2026-11-22T10:05:00Z');
  });

  it('reports no change when nothing but key order differs, so nothing is written', () => {
    const s = desiredStatus(undefined, { ...base, ready: { status: 'True', reason: 'Available', message: 'ok' } }, T0);
    const stored = JSON.parse(JSON.stringify({ conditions: s.conditions, observedGeneration: 3, url: s.url, functionId: 'f-1' }));
    const again = desiredStatus(stored, { ...base, ready: { status: 'True', reason: 'Available', message: 'ok' } }, T1);
    expect(statusChanged(stored, again)).to.equal(false);
  });

  it('reports a change of generation, reason or message', () => {
    const s = desiredStatus(undefined, { ...base, ready: { status: 'True', reason: 'Available', message: 'ok' } }, T0);
    expect(statusChanged(s, desiredStatus(s, { ...base, generation: 4, ready: { status: 'True', reason: 'Available', message: 'ok' } }, T0))).to.equal(true);
    expect(statusChanged(s, desiredStatus(s, { ...base, ready: { status: 'True', reason: 'Inactive', message: 'ok' } }, T0))).to.equal(true);
    expect(statusChanged(s, desiredStatus(s, { ...base, ready: { status: 'True', reason: 'Available', message: 'other' } }, T0))).to.equal(true);
    expect(statusChanged(undefined, s)).to.equal(true);
  });

  it('keeps conditions of other types', () => {
    const current = { conditions: [{ type: 'Other', status: 'True' as const, reason: 'X', message: '', lastTransitionTime: '2026-01-01T00:00:00Z' }] };
    const s = desiredStatus(current, { ...base, ready: { status: 'True', reason: 'Available', message: 'ok' } }, T0);
    expect(s.conditions!.map((c) => c.type)).to.deep.equal(['Ready', 'Other']);
  });
});

describe('operator re-check of Functions that are not ready', () => {
  it('looks again after 10 s at first, slows down for long-stuck Functions, never beyond 2 min', async () => {
    const { progressRecheckMs } = await import('../../operator/src/reconciler.ts');
    expect(progressRecheckMs(0)).to.equal(10_000);
    expect(progressRecheckMs(60_000)).to.equal(15_000);
    expect(progressRecheckMs(10 * 60_000)).to.equal(120_000);
    expect(progressRecheckMs(-5000)).to.equal(10_000);
  });
});
