import { expect } from 'chai';
import { Background, backoffMs, logDue, LOG_EVERY_MS, type BackgroundFailures, type BackgroundTask } from '../../gateway/src/background.ts';
import { lastResortHandler, survivable } from '../../gateway/src/last-resort.ts';
import { WarmPool } from '../../gateway/src/executor/pool.ts';
import { IdleRuntimes, IDLE_RETRY_MS } from '../../gateway/src/executor/idle.ts';
import { LocalScheduler, TICK_RETRY_MS } from '../../gateway/src/scheduler/local.ts';
import { LogWriter } from '../../gateway/src/logs/writer.ts';
import { InstanceTracker } from '../../gateway/src/logs/instance.ts';
import type { RuntimeProcess } from '../../gateway/src/executor/process.ts';
import { silentLogger, type Logger } from '../../gateway/src/log.ts';
import type { CounterStore, InstanceStore, LogStore } from '@fnhost/core';
import { FakeClock } from './cluster/fakes.ts';
import { pollUntil } from '../helpers/wait.ts';

// No background task can end the process (issue 27): each one, made to fail through its
// injected seam (EMFILE from a spawn, ENOSPC from a store, a throwing stop), reports the
// failure (counted per task, logged at most once per LOG_EVERY_MS) and tries again.

function errno(code: string, syscall: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${syscall} ${code}`), { code, syscall, errno: -24 });
}

class Reports implements BackgroundFailures {
  readonly seen: Array<{ task: BackgroundTask; code?: string }> = [];
  failed(task: BackgroundTask, err: unknown): void {
    this.seen.push({ task, code: (err as NodeJS.ErrnoException).code });
  }
  count(task: BackgroundTask): number {
    return this.seen.filter((r) => r.task === task).length;
  }
}

function capturingLogger(): Logger & { lines: Array<{ msg: string; fields?: Record<string, unknown> }> } {
  const lines: Array<{ msg: string; fields?: Record<string, unknown> }> = [];
  const push = (msg: string, fields?: Record<string, unknown>) => lines.push({ msg, fields });
  return { lines, info: push, warn: push, error: push };
}

describe('gateway background tasks: the reporter', () => {
  it('backs off from the base, doubling, up to the cap', () => {
    expect([1, 2, 3, 4, 10, 100].map((n) => backoffMs(n, 1000, 30_000))).to.deep.equal([1000, 2000, 4000, 8000, 30_000, 30_000]);
    expect(backoffMs(0, 500, 10_000)).to.equal(500);
  });

  it('counts every failure and logs one line per task per LOG_EVERY_MS, saying how many were not logged', () => {
    let now = 0;
    const counted: string[] = [];
    const logger = capturingLogger();
    const b = new Background({ count: (t) => counted.push(t), logger, now: () => now });
    for (let i = 0; i < 5; i++) b.failed('warm_pool_refill', errno('EMFILE', 'spawn'));
    b.failed('retention_sweep', new Error('disk I/O error'));
    now += LOG_EVERY_MS;
    b.failed('warm_pool_refill', errno('EMFILE', 'spawn'));
    expect(counted.filter((t) => t === 'warm_pool_refill')).to.have.length(6);
    expect(logger.lines.map((l) => [l.fields!.task, l.fields!.code, l.fields!.failures_not_logged])).to.deep.equal([
      ['warm_pool_refill', 'EMFILE', undefined],
      ['retention_sweep', undefined, undefined],
      ['warm_pool_refill', 'EMFILE', 4],
    ]);
    expect(logDue(undefined, 0)).to.equal(true);
  });

  it('guard() catches a timer callback that throws or rejects', async () => {
    const counted: string[] = [];
    const b = new Background({ count: (t) => counted.push(t), logger: silentLogger });
    b.guard('retention_sweep', () => {
      throw errno('ENOSPC', 'write');
    })();
    b.guard('retention_sweep', () => Promise.reject(errno('ENOSPC', 'write')))();
    await pollUntil('the rejection to be reported', async () => counted.length === 2, 2000, 5);
  });
});

describe('gateway background tasks: the last resort', () => {
  it('survives a resource running out at a system call, counted; ends on anything else', () => {
    expect(survivable(errno('EMFILE', 'spawn'))).to.equal(true);
    expect(survivable(errno('ENOSPC', 'write'))).to.equal(true);
    expect(survivable(Object.assign(new Error('x'), { code: 'EMFILE' }))).to.equal(false); // no syscall: not from the OS
    expect(survivable(new TypeError('x is undefined'))).to.equal(false);
    const reports = new Reports();
    const exits: number[] = [];
    const handler = lastResortHandler({ logger: silentLogger, background: () => reports, exit: (c) => exits.push(c) });
    handler(errno('EMFILE', 'pipe'), 'uncaughtException');
    expect(reports.count('uncaught')).to.equal(1);
    expect(exits).to.deep.equal([]);
    handler(new TypeError('cannot read properties of undefined'), 'unhandledRejection');
    expect(exits).to.deep.equal([1]);
  });
});

describe('gateway background tasks: each one fails and carries on', () => {
  it('the warm pool: a refill that meets EMFILE is reported, not thrown, and the pool fills once descriptors are back', async () => {
    const reports = new Reports();
    let failing = 2;
    const spawned: string[] = [];
    const pool = new WarmPool({
      size: 1,
      logger: silentLogger,
      background: reports,
      spawn: (token) => {
        if (failing > 0) {
          failing--;
          throw errno('EMFILE', 'pipe');
        }
        spawned.push(token);
        return { listening: Promise.resolve('http://127.0.0.1:1'), exit: new Promise(() => undefined), exited: false, origin: 'http://127.0.0.1:1', pid: 1, stop: async () => undefined } as unknown as RuntimeProcess;
      },
    });
    expect(() => pool.fill()).not.to.throw();
    expect(reports.count('warm_pool_refill')).to.equal(1);
    // Retried after the backoff (1 s, then 2 s) without anyone calling fill again.
    await pollUntil('the pool to fill after the failures', async () => spawned.length === 1, 10_000, 50);
    expect(reports.count('warm_pool_refill')).to.equal(2);
    expect(pool.take()).to.not.equal(undefined);
    await pool.close();
  });

  it('the idle stopper: a stop that throws is reported and tried again after IDLE_RETRY_MS', async () => {
    const clock = new FakeClock();
    const reports = new Reports();
    const stops: string[] = [];
    let failing = 1;
    const idle = new IdleRuntimes({
      idleMs: 1000, clock, background: reports,
      stop: (id) => {
        if (failing-- > 0) throw errno('EMFILE', 'open');
        stops.push(id);
      },
    });
    idle.started('fn');
    await clock.advance(1000);
    expect(reports.count('idle_stop')).to.equal(1);
    expect(stops).to.deep.equal([]);
    await clock.advance(IDLE_RETRY_MS);
    expect(stops).to.deep.equal(['fn']);
    idle.close();
  });

  it('the scheduler: a fire that throws synchronously and one that rejects are reported; the other schedules keep firing', async () => {
    const clock = new FakeClock();
    const reports = new Reports();
    const fired: string[] = [];
    const scheduler = new LocalScheduler({
      clock, logger: silentLogger, background: reports,
      missed: () => undefined,
      fire: (id) => {
        if (id === 'throws') throw errno('EMFILE', 'socket');
        if (id === 'rejects') return Promise.reject(errno('ENOSPC', 'write'));
        fired.push(id);
        return Promise.resolve();
      },
    });
    const fn = (id: string) => ({ function_id: id, schedule: { cron: '* * * * *', timezone: 'UTC', enabled: true } }) as never;
    for (const id of ['throws', 'rejects', 'ok']) scheduler.sync(fn(id), id);
    await clock.advance(60_000);
    expect(fired).to.deep.equal(['ok']);
    expect(reports.count('scheduler')).to.equal(2);
    await clock.advance(60_000 + TICK_RETRY_MS);
    expect(fired).to.deep.equal(['ok', 'ok']);
    scheduler.stop();
  });

  it('the log writer: a batch the store refuses (ENOSPC) is counted and written on a later try', async () => {
    let failing = 1;
    const stored: unknown[] = [];
    const logs = { insert: async (batch: unknown[]) => {
      if (failing-- > 0) throw errno('ENOSPC', 'write');
      stored.push(...batch);
      return undefined;
    } } as unknown as LogStore;
    const counters = { add: async () => undefined } as unknown as CounterStore;
    let failures = 0;
    const writer = new LogWriter({ logs, counters, intervalMs: 10, logger: silentLogger, countFailure: () => failures++ });
    writer.record({ id: 'l1', function_id: 'f', status_code: 200, execution_time_ms: 1, error_message: null, executed_at: new Date().toISOString(), trigger: 'http' } as never, { type: 'none' } as never);
    await pollUntil('the record to be written after the failure', async () => stored.length === 1, 5000, 10);
    expect(failures).to.equal(1);
    await writer.close();
  });

  it('the instance heartbeat: a store error is counted and the next beat tries again', async () => {
    let failing = 1;
    let beats = 0;
    const store = {
      register: async () => undefined,
      heartbeat: async () => {
        if (failing-- > 0) throw errno('EMFILE', 'open');
        beats++;
        return true;
      },
      claimDead: async () => [],
      end: async () => true,
    } as unknown as InstanceStore;
    const counted: string[] = [];
    let now = 1_000_000;
    const tracker = new InstanceTracker({ store, deadAfterMs: 60_000, timers: false, now: () => now, counts: () => ({ accepted: 0, written: 0 }), countFailure: (t) => counted.push(t) });
    await tracker.start();
    now += tracker.beatIntervalMs;
    await tracker.beat();
    now += tracker.beatIntervalMs;
    await tracker.beat();
    expect(counted).to.deep.equal(['instance_progress']);
    expect(beats).to.equal(1);
  });
});
