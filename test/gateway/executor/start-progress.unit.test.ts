import { expect } from 'chai';
import { cpuTicksOfStat, startBoundsOf, startVerdict, treeCpuMs } from '../../../gateway/src/executor/start-progress.ts';

describe('a runtime start bounded by its progress (gateway/src/executor/start-progress.ts)', () => {
  const bounds = startBoundsOf(15_000);

  it('takes a stall of the start timeout and a ceiling of four times it, at least a minute', () => {
    expect(bounds).to.deep.equal({ stallMs: 15_000, ceilingMs: 60_000 });
    expect(startBoundsOf(30_000)).to.deep.equal({ stallMs: 30_000, ceilingMs: 120_000 });
  });

  it('lets a start that keeps using CPU go on past the old 15 s deadline, up to the ceiling', () => {
    expect(startVerdict(bounds, 40_000, 200, 900)).to.equal(undefined);
    expect(startVerdict(bounds, 60_000, 200, 900)).to.equal('did not start within 60000 ms (900 ms of CPU)');
  });

  it('ends a start whose process tree used no CPU for the stall bound, naming it', () => {
    expect(startVerdict(bounds, 16_000, 15_000, 120)).to.equal('did not start: it used no CPU for 15000 ms (bound 15000 ms)');
    expect(startVerdict(bounds, 14_000, 14_000, undefined)).to.equal(undefined);
  });

  it('reads utime + stime from a stat line whose command holds spaces and parentheses', () => {
    const fields = ['S', ...Array.from({ length: 10 }, () => '0'), '7', '5', '100', '100'];
    expect(cpuTicksOfStat(`4242 (node (x) y) ${fields.join(' ')}`)).to.equal(12);
    expect(() => cpuTicksOfStat('4242 (node) S')).to.throw(/not a \/proc\/<pid>\/stat line/);
  });

  it('sums the CPU of a live process tree, and knows nothing of a process that is gone', () => {
    expect(treeCpuMs(process.pid)).to.be.a('number').and.to.be.greaterThan(0);
    expect(treeCpuMs(2 ** 22 + 1)).to.equal(undefined);
  });
});
