import { expect } from 'chai';
import { superviseWatch, WATCH_STABLE_MS } from '../../operator/src/controller.ts';
import { FakeClock } from './fixtures.ts';

class FakeInformer {
  starts = 0;
  #onError: Array<(err?: unknown) => void> = [];
  on(_verb: 'error', cb: (err?: unknown) => void) {
    this.#onError.push(cb);
  }
  async start() {
    this.starts++;
  }
  fail(err: unknown = new Error('watch closed: 500')) {
    for (const cb of this.#onError) cb(err);
  }
}

describe('operator watch supervision', () => {
  it('restarts a failed watch after a capped, doubling delay', () => {
    const clock = new FakeClock();
    const informer = new FakeInformer();
    const delays: number[] = [];
    superviseWatch(informer, { clock, stopped: () => false, onRestartScheduled: (_e, d) => delays.push(d) });
    for (let i = 0; i < 8; i++) {
      informer.fail();
      clock.advance(delays[delays.length - 1]! - 1);
      expect(informer.starts, `restart ${i} not before its delay`).to.equal(i);
      clock.advance(1);
      expect(informer.starts).to.equal(i + 1);
    }
    expect(delays).to.deep.equal([500, 1000, 2000, 4000, 8000, 16000, 30000, 30000]);
  });

  it('starts from the base delay again after a quiet minute', () => {
    const clock = new FakeClock();
    const informer = new FakeInformer();
    const delays: number[] = [];
    superviseWatch(informer, { clock, stopped: () => false, onRestartScheduled: (_e, d) => delays.push(d) });
    informer.fail();
    clock.advance(500);
    informer.fail();
    clock.advance(WATCH_STABLE_MS + 1);
    informer.fail();
    expect(delays).to.deep.equal([500, 1000, 500]);
  });

  it('errors while a restart is pending schedule no second restart', () => {
    const clock = new FakeClock();
    const informer = new FakeInformer();
    const delays: number[] = [];
    superviseWatch(informer, { clock, stopped: () => false, onRestartScheduled: (_e, d) => delays.push(d) });
    informer.fail();
    informer.fail();
    informer.fail();
    clock.advance(10_000);
    expect(informer.starts).to.equal(1);
    expect(delays).to.deep.equal([500]);
  });

  it('does not restart once the controller is stopped', () => {
    const clock = new FakeClock();
    const informer = new FakeInformer();
    let stopped = false;
    superviseWatch(informer, { clock, stopped: () => stopped });
    informer.fail();
    stopped = true;
    clock.advance(60_000);
    informer.fail();
    clock.advance(60_000);
    expect(informer.starts).to.equal(0);
  });
});
