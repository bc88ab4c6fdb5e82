import { expect } from 'chai';
import { decideIdle, IdleRuntimes, type Activity } from '../../gateway/src/executor/idle.ts';
import { loadConfig } from '../../gateway/src/config.ts';
import { FakeClock } from './cluster/fakes.ts';

// Runtimes stopped after FNHOST_RUNTIME_IDLE_SECONDS (gateway/src/executor/idle.ts): the pure
// decision, and the timer around it on a clock that moves only when the test says so.

describe('gateway idle runtimes: the decision', () => {
  const activity = (entries: Record<string, Activity>) => new Map(Object.entries(entries));

  it('stops a function idle for the whole setting, and says when the next one falls due', () => {
    const d = decideIdle(activity({ a: { inflight: 0, lastActiveAt: 0 }, b: { inflight: 0, lastActiveAt: 400 }, c: { inflight: 0, lastActiveAt: 200 } }), 1000, 1000);
    expect(d.stop).to.deep.equal(['a']);
    expect(d.nextCheckAt).to.equal(1200);
  });

  it('never stops a function with a call in flight, however long ago its last activity', () => {
    const d = decideIdle(activity({ busy: { inflight: 1, lastActiveAt: 0 } }), 1_000_000, 1000);
    expect(d).to.deep.equal({ stop: [], nextCheckAt: undefined });
  });

  it('is due exactly at the deadline, not a millisecond before', () => {
    expect(decideIdle(activity({ a: { inflight: 0, lastActiveAt: 0 } }), 999, 1000)).to.deep.equal({ stop: [], nextCheckAt: 1000 });
    expect(decideIdle(activity({ a: { inflight: 0, lastActiveAt: 0 } }), 1000, 1000)).to.deep.equal({ stop: ['a'], nextCheckAt: undefined });
  });

  it('with nothing watched there is nothing to do and no next check', () => {
    expect(decideIdle(new Map(), 5, 1000)).to.deep.equal({ stop: [], nextCheckAt: undefined });
  });
});

describe('gateway idle runtimes: the timer', () => {
  const setup = (idleMs = 60_000) => {
    const clock = new FakeClock();
    const stopped: string[] = [];
    const idle = new IdleRuntimes({ idleMs, clock, stop: (id) => stopped.push(id) });
    return { clock, stopped, idle };
  };

  it('stops a started runtime that gets no call once the setting has passed, once', async () => {
    const { clock, stopped, idle } = setup();
    idle.started('f');
    await clock.advance(59_999);
    expect(stopped).to.deep.equal([]);
    await clock.advance(1);
    expect(stopped).to.deep.equal(['f']);
    await clock.advance(600_000);
    expect(stopped).to.deep.equal(['f']);
    expect(clock.timers).to.have.length(0);
  });

  it('counts idleness from the end of the last call, and a call in flight past the deadline is never cut', async () => {
    const { clock, stopped, idle } = setup();
    idle.started('f');
    await clock.advance(30_000);
    idle.callStarted('f');
    await clock.advance(10 * 60_000);
    expect(stopped, 'in flight through many deadlines').to.deep.equal([]);
    idle.callEnded('f');
    await clock.advance(59_999);
    expect(stopped).to.deep.equal([]);
    await clock.advance(1);
    expect(stopped).to.deep.equal(['f']);
  });

  it('two overlapping calls: idle only once both ended', async () => {
    const { clock, stopped, idle } = setup(1000);
    idle.callStarted('f');
    idle.callStarted('f');
    idle.callEnded('f');
    await clock.advance(5000);
    expect(stopped).to.deep.equal([]);
    idle.callEnded('f');
    await clock.advance(1000);
    expect(stopped).to.deep.equal(['f']);
  });

  it('each function on its own deadline, with one timer armed at a time', async () => {
    const { clock, stopped, idle } = setup(1000);
    idle.started('a');
    await clock.advance(400);
    idle.started('b');
    idle.callStarted('a');
    idle.callEnded('a');
    expect(clock.timers).to.have.length(1);
    await clock.advance(600);
    expect(stopped).to.deep.equal([]);
    await clock.advance(400);
    expect(stopped).to.deep.equal(['a', 'b']);
  });

  it('a forgotten function (deleted, deactivated) is not stopped again; one with a call in flight keeps its count', async () => {
    const { clock, stopped, idle } = setup(1000);
    idle.started('gone');
    idle.forget('gone');
    idle.callStarted('busy');
    idle.forget('busy');
    expect([...idle.watched.keys()]).to.deep.equal(['busy']);
    await clock.advance(5000);
    expect(stopped).to.deep.equal([]);
  });

  it('close() disarms the timer', async () => {
    const { clock, stopped, idle } = setup(1000);
    idle.started('f');
    idle.close();
    expect(clock.timers).to.have.length(0);
    idle.callEnded('f');
    await clock.advance(5000);
    expect(stopped).to.deep.equal([]);
  });
});

describe('gateway config: FNHOST_RUNTIME_IDLE_SECONDS', () => {
  it('defaults to five minutes, takes 0 (never) and refuses what is not a whole number of seconds, naming the value', () => {
    expect(loadConfig({}, '/srv').runtimeIdleSeconds).to.equal(300);
    expect(loadConfig({ FNHOST_RUNTIME_IDLE_SECONDS: '0' }, '/srv').runtimeIdleSeconds).to.equal(0);
    expect(loadConfig({ FNHOST_RUNTIME_IDLE_SECONDS: '2' }, '/srv').runtimeIdleSeconds).to.equal(2);
    expect(() => loadConfig({ FNHOST_RUNTIME_IDLE_SECONDS: '1.5' }, '/srv')).to.throw('FNHOST_RUNTIME_IDLE_SECONDS="1.5"');
    expect(() => loadConfig({ FNHOST_RUNTIME_IDLE_SECONDS: '-1' }, '/srv')).to.throw('FNHOST_RUNTIME_IDLE_SECONDS="-1"');
  });
});
