import { expect } from 'chai';
import { cpuTicksOfStat, processCpuMs, progressVerdict } from './progress.ts';

describe('test helper: deadlines on a process\'s progress (issue 30)', () => {
  it('reads utime, stime, cutime and cstime from /proc/<pid>/stat, a comm with spaces and parentheses included', () => {
    const stat = '4242 (node (x) y) S 1 4242 4242 0 -1 4194304 100 0 0 0 150 25 7 3 20 0 11 0 12345 0 0';
    expect(cpuTicksOfStat(stat)).to.equal(150 + 25 + 7 + 3);
    expect(() => cpuTicksOfStat('garbage')).to.throw(/not a \/proc\/<pid>\/stat line/);
  });

  it('reads this process\'s CPU time, and nothing for a process that is gone', () => {
    expect(processCpuMs(process.pid)).to.be.a('number').and.greaterThan(0);
    expect(processCpuMs(2 ** 22 + 1)).to.equal(undefined);
  });

  it('finds a process stuck when it spins, waits on nothing, or passes the ceiling; never while it progresses slowly', () => {
    const bounds = { cpuMs: 30_000, stallMs: 30_000, ceilingMs: 300_000 };
    // A start at load average 30: 2 s of CPU over 60 s of wall time, still moving.
    expect(progressVerdict(bounds, 60_000, 2_000, 100)).to.equal(undefined);
    expect(progressVerdict(bounds, 40_000, 30_000, 0)).to.match(/used 30000 ms of CPU/);
    expect(progressVerdict(bounds, 45_000, 1_500, 30_000)).to.match(/used no CPU for 30000 ms/);
    expect(progressVerdict(bounds, 300_000, 5_000, 10)).to.match(/took 300000 ms/);
  });
});
