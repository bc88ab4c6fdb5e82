import { expect } from 'chai';
import { IDLE_GC_MS, shouldCollect } from '../../runtime-image/src/memory.ts';

// When an idle process-isolated runtime collects (runtime-image/src/memory.ts): once, IDLE_GC_MS
// after its last activity, never with a call in flight.

describe('runtime: the idle collection decision', () => {
  it('collects once idle for IDLE_GC_MS after activity not yet collected after', () => {
    expect(shouldCollect({ now: 10_000 + IDLE_GC_MS, lastBusyAt: 10_000, dirty: true, inFlight: 0 })).to.equal(true);
    expect(shouldCollect({ now: 10_000 + IDLE_GC_MS - 1, lastBusyAt: 10_000, dirty: true, inFlight: 0 }), 'not yet idle long enough').to.equal(false);
    expect(shouldCollect({ now: 10_000 + IDLE_GC_MS * 10, lastBusyAt: 10_000, dirty: false, inFlight: 0 }), 'already collected since').to.equal(false);
    expect(shouldCollect({ now: 10_000 + IDLE_GC_MS * 10, lastBusyAt: 10_000, dirty: true, inFlight: 1 }), 'a call in flight').to.equal(false);
    expect(shouldCollect({ now: 300, lastBusyAt: 0, dirty: true, inFlight: 0 }, 200), 'its own delay').to.equal(true);
  });
});
