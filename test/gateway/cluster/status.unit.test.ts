import { expect } from 'chai';
import { ERROR_WINDOW_MS, StatusFeedback, errorRate, rfc3339, statusFieldsFor, type StatusFields } from '../../../gateway/src/cluster/status.ts';
import { FakeClock, MemoryLogger, settle } from './fakes.ts';

class FakeWriter {
  writes: Array<{ at: number; id: string; fields: StatusFields }> = [];
  failNext = 0;
  readonly clock: FakeClock;
  constructor(clock: FakeClock) {
    this.clock = clock;
  }
  async write(id: string, fields: StatusFields): Promise<boolean> {
    if (this.failNext > 0) {
      this.failNext--;
      throw new Error('apiserver unavailable');
    }
    this.writes.push({ at: this.clock.now(), id, fields });
    return true;
  }
}

describe('cluster mode: status feedback (last invocation, error rate)', () => {
  it('pure parts', () => {
    expect(rfc3339(Date.UTC(2026, 10, 23, 10, 0, 0, 456))).to.equal('2026-11-23T10:00:00Z');
    expect(errorRate(0, 10)).to.equal('0%');
    expect(errorRate(1, 3)).to.equal('33%');
    expect(errorRate(1, 200)).to.equal('0.5%');
    expect(errorRate(0, 0)).to.equal('0%');
    expect(statusFieldsFor(undefined)).to.equal(null);
    expect(statusFieldsFor({ total: 0, errors: 0, last: 0, wake: false })).to.equal(null);
    expect(statusFieldsFor({ total: 4, errors: 1, last: 0, wake: false })).to.deep.equal({ lastInvocationTime: '1970-01-01T00:00:00Z', errorRate: '25%' });
    expect(statusFieldsFor({ total: 0, errors: 0, last: 0, wake: true })).to.deep.equal({ lastInvocationTime: '1970-01-01T00:00:00Z' });
  });

  it('turns any invocation load into at most one write per function per interval, and none when idle', async () => {
    const clock = new FakeClock();
    const writer = new FakeWriter(clock);
    const fb = new StatusFeedback({ writer, clock, intervalMs: 10_000, logger: new MemoryLogger() });
    // 10 seconds of load: 1,000 calls of f1, 10 of f2 with errors.
    for (let s = 0; s < 10; s++) {
      for (let i = 0; i < 100; i++) fb.record('f1', 200);
      fb.record('f2', s % 2 === 0 ? 500 : 200);
      await clock.advance(1000);
    }
    const byFn = (id: string) => writer.writes.filter((w) => w.id === id);
    // First calls write at once (nothing written before), then one per interval.
    expect(byFn('f1').length).to.be.at.most(2);
    expect(byFn('f2').length).to.be.at.most(2);
    for (const id of ['f1', 'f2']) {
      const times = byFn(id).map((w) => w.at);
      for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).to.be.at.least(10_000);
    }
    await clock.advance(10_000);
    const last2 = byFn('f2')[byFn('f2').length - 1]!;
    expect(last2.fields.errorRate).to.match(/%$/);
    const count = writer.writes.length;
    // Idle for a minute: no writes at all.
    await clock.advance(60_000);
    expect(writer.writes.length).to.equal(count);
    expect(fb.writes).to.equal(count);
  });

  it('a wake writes at once when the function was quiet, and within the interval rule otherwise', async () => {
    const clock = new FakeClock();
    const writer = new FakeWriter(clock);
    const fb = new StatusFeedback({ writer, clock, intervalMs: 10_000, logger: new MemoryLogger() });
    fb.wake('f');
    await clock.advance(0);
    expect(writer.writes).to.have.length(1);
    expect(writer.writes[0]!.fields).to.deep.equal({ lastInvocationTime: rfc3339(clock.now()) });
    fb.wake('f');
    await clock.advance(9_999);
    expect(writer.writes).to.have.length(1);
    await clock.advance(1);
    expect(writer.writes).to.have.length(2);
  });

  it('retries a failed write at the next interval, keeping the counts', async () => {
    const clock = new FakeClock();
    const writer = new FakeWriter(clock);
    const logger = new MemoryLogger();
    const fb = new StatusFeedback({ writer, clock, intervalMs: 10_000, logger });
    writer.failNext = 1;
    fb.record('f', 500);
    await clock.advance(0);
    expect(writer.writes).to.have.length(0);
    expect(logger.lines.some((l) => l.level === 'warn' && l.msg.includes('invocation status'))).to.equal(true);
    fb.record('f', 200);
    await clock.advance(10_000);
    expect(writer.writes).to.have.length(1);
    expect(writer.writes[0]!.fields.errorRate).to.equal('50%');
  });

  it('close() writes what is pending at once', async () => {
    const clock = new FakeClock();
    const writer = new FakeWriter(clock);
    const fb = new StatusFeedback({ writer, clock, intervalMs: 10_000, logger: new MemoryLogger() });
    fb.record('f', 200);
    await clock.advance(0);
    fb.record('f', 200);
    await fb.close();
    await settle();
    expect(writer.writes).to.have.length(2);
  });

  describe('the error rate over a window (the last 5 minutes, every replica)', () => {
    // Two gateway replicas share one log store (what LogStore.recentCounts counts) and write one
    // Function's status (merged, as a merge patch is). The case: 3 of 16 calls failed,
    // and seconds later the column said 0% because it covered only the calls since the last write.
    function twoReplicas() {
      const clock = new FakeClock();
      const stored: Array<{ at: number; status: number }> = [];
      const status: StatusFields = {};
      const writes: StatusFields[] = [];
      const writer = { async write(_id: string, fields: StatusFields) { Object.assign(status, fields); writes.push(fields); return true; } };
      const window = { ms: ERROR_WINDOW_MS, counts: async (_id: string, since: number) => {
        const inWindow = stored.filter((r) => r.at >= since);
        return { total: inWindow.length, errors: inWindow.filter((r) => r.status >= 400).length };
      } };
      const replicas = [0, 1].map(() => new StatusFeedback({ writer, clock, intervalMs: 10_000, logger: new MemoryLogger(), window }));
      const call = (replica: number, code: number) => {
        replicas[replica]!.record('f', code);
        stored.push({ at: clock.now(), status: code });
      };
      return { clock, status, writes, call, replicas };
    }

    it('states the rate of the whole window, over both replicas, not of the last interval', async () => {
      const { clock, status, call } = twoReplicas();
      // 16 calls over 20 s, alternating replicas; the 3 failures come first.
      for (let i = 0; i < 16; i++) {
        call(i % 2, i < 3 ? 500 : 200);
        await clock.advance(1250);
      }
      await clock.advance(10_000);
      expect(status.errorRate).to.equal(errorRate(3, 16)).and.to.equal('19%');
      // More successes later, still within 5 minutes of the failures: they still count.
      await clock.advance(60_000);
      call(0, 200);
      await clock.advance(10_000);
      expect(status.errorRate).to.equal(errorRate(3, 17));
    });

    it('drops calls that left the window, and sets 0% once the window has passed the last call', async () => {
      const { clock, status, writes, call } = twoReplicas();
      call(0, 500);
      call(1, 500);
      await clock.advance(1000);
      expect(status.errorRate).to.equal('100%');
      await clock.advance(4 * 60_000);
      call(0, 200);
      await clock.advance(1000);
      expect(status.errorRate).to.equal(errorRate(2, 3));
      // 2 minutes later the failures are out of the window, the success still in it.
      await clock.advance(2 * 60_000);
      call(1, 200);
      await clock.advance(11_000);
      expect(status.errorRate).to.equal('0%');
      const lastInvocation = status.lastInvocationTime;
      // Past the window: one closing write of the rate alone (the last invocation time stays).
      await clock.advance(ERROR_WINDOW_MS + 5000);
      expect(status.errorRate).to.equal('0%');
      expect(status.lastInvocationTime).to.equal(lastInvocation);
      expect(writes.at(-1)).to.deep.equal({ errorRate: '0%' });
      const count = writes.length;
      await clock.advance(30 * 60_000);
      expect(writes.length).to.equal(count);
    });

    it('takes what this replica saw as a floor when its own records are not stored yet, or the store fails', async () => {
      const clock = new FakeClock();
      const writes: StatusFields[] = [];
      const writer = { async write(_id: string, fields: StatusFields) { writes.push(fields); return true; } };
      let fail = false;
      const fb = new StatusFeedback({ writer, clock, intervalMs: 10_000, logger: new MemoryLogger(), window: { ms: ERROR_WINDOW_MS, counts: async () => { if (fail) throw new Error('store down'); return { total: 0, errors: 0 }; } } });
      fb.record('f', 500);
      await clock.advance(100);
      expect(writes.at(-1)!.errorRate).to.equal('100%');
      fail = true;
      fb.record('f', 200);
      await clock.advance(10_000);
      expect(writes.at(-1)!.errorRate).to.equal('0%');
    });
  });
});
