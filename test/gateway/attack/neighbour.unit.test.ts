import { expect } from 'chai';
import { p95Bound, summarize, type CallStats } from './neighbour.ts';

// The attack suite's p95 rule (./neighbour.ts): 5x the quiet p95 with a floor, plus what a
// control server called meanwhile took, which counts for at most the bound itself.

const quiet = (p95Ms: number): CallStats => ({ calls: 60, ok: 60, failures: {}, p50Ms: p95Ms / 2, p95Ms });

describe('attack suite: the neighbour p95 bound', () => {
  it('is 5x the quiet p95, or 5x the floor when the quiet p95 is below it', () => {
    expect(p95Bound(quiet(40), 25)).to.equal(200);
    expect(p95Bound(quiet(3), 25)).to.equal(125);
  });

  it("adds the control's p95 during the attack", () => {
    expect(p95Bound(quiet(76.6), 25, 214)).to.be.closeTo(383 + 214, 0.001);
  });

  it("counts the control for at most the bound itself: a machine slowed as a whole still fails", () => {
    expect(p95Bound(quiet(12), 25, 5000)).to.equal(250);
  });

  it('summarizes calls: the answered share and the failures by status', () => {
    const s = summarize([{ status: 200, ms: 5 }, { status: 429, ms: 1 }, { status: 'ECONNRESET', ms: 2 }, { status: 200, ms: 9 }]);
    expect(s).to.include({ calls: 4, ok: 2 });
    expect(s.failures).to.deep.equal({ 429: 1, ECONNRESET: 1 });
    expect(s.p95Ms).to.equal(9);
  });
});
