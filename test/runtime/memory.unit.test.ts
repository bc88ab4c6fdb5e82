import { expect } from 'chai';
import { IDLE_AFTER_MS, isIdle } from '../../runtime-image/src/memory.ts';

// When a process-isolated runtime's checks slow down (runtime-image/src/memory.ts): IDLE_AFTER_MS
// after the last call, never with a call in flight or waiting for the load.

describe('runtime: when a runtime counts as idle', () => {
  it('idle IDLE_AFTER_MS after the last call, with nothing in flight', () => {
    expect(isIdle({ now: 10_000 + IDLE_AFTER_MS, lastBusyAt: 10_000, inFlight: 0 })).to.equal(true);
    expect(isIdle({ now: 10_000 + IDLE_AFTER_MS - 1, lastBusyAt: 10_000, inFlight: 0 }), 'not idle long enough').to.equal(false);
    expect(isIdle({ now: 10_000 + IDLE_AFTER_MS * 10, lastBusyAt: 10_000, inFlight: 1 }), 'a call in flight').to.equal(false);
    expect(isIdle({ now: 300, lastBusyAt: 0, inFlight: 0 }, 200), 'its own delay').to.equal(true);
  });
});
