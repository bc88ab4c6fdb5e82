import { expect } from 'chai';
import { FULL_HINT_MS, FullQueueHints, stillFull } from '../../gateway/src/async/full-hint.ts';

// gateway/src/async/full-hint.ts: the store's "full", taken as true for FULL_HINT_MS, refuses only
// what would not fit by what the store said, per function, and lapses on its own.

describe('async full-queue hint (unit)', () => {
  const full = { bound: 'function' as const, used: 2000, limit: 2048, at: 10_000 };

  it('refuses a call that would not fit by what the store said, within FULL_HINT_MS only', () => {
    expect(stillFull(full, 100, 10_000)).to.equal(true);
    expect(stillFull(full, 100, 10_000 + FULL_HINT_MS - 1)).to.equal(true);
    expect(stillFull(full, 100, 10_000 + FULL_HINT_MS)).to.equal(false);
    // A smaller call that fits in what was left is for the store to judge.
    expect(stillFull(full, 48, 10_000)).to.equal(false);
    expect(stillFull(undefined, 100, 10_000)).to.equal(false);
  });

  it('keeps a hint per function and forgets a lapsed one', () => {
    const hints = new FullQueueHints();
    hints.noteFull('a', full);
    expect(hints.refusing('a', 100, 10_500)).to.deep.equal(full);
    expect(hints.refusing('b', 100, 10_500)).to.equal(undefined);
    expect(hints.refusing('a', 100, 10_000 + FULL_HINT_MS)).to.equal(undefined);
    // Lapsed and dropped: a later note starts afresh.
    expect(hints.refusing('a', 100, 10_500)).to.equal(undefined);
    hints.noteFull('a', { ...full, at: 20_000 });
    expect(hints.refusing('a', 100, 20_100)?.at).to.equal(20_000);
  });
});
