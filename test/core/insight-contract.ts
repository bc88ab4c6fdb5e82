import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type { ConsoleOutput } from '../../core/src/insight.ts';
import type { Stores } from '../../core/src/stores.ts';
import { CONTRACT_EPOCH, log } from './store-contract.ts';

// The InsightStore part of the store contract (core/src/stores.ts): a record by id under the
// retention read filter, console output beside its record and gone with it, latency from the
// histogram kept by LogStore.insert. Registered inside describeStoreContract, so it runs on
// SQLite and on MongoDB.

const MINUTE = 60_000;
const HOUR = 3_600_000;

function output(text: string): ConsoleOutput {
  return { lines: [{ at_ms: 0, stream: 'stdout', text }, { at_ms: 3, stream: 'stderr', text: text + '!' }], dropped_lines: 2, dropped_bytes: 10 };
}

export function describeInsightContract(stores: () => Stores): void {
  // Inside: store-contract.ts (which imports this file) has defined CONTRACT_EPOCH by the time the suite is built.
  const NOW = CONTRACT_EPOCH + 10 * 86_400_000;
  describe('InsightStore', () => {
    it('reads one record by id with cold_start and wait_ms; null for an unknown id or another function\'s', async () => {
      const a = randomUUID();
      const b = randomUUID();
      const rec = log(a, NOW - MINUTE, { cold_start: true, wait_ms: 412 });
      const other = log(b, NOW - MINUTE);
      await stores().logs.insert([rec, other]);
      const { expires_at: _, ...expected } = rec;
      expect(await stores().insight.getLog(a, rec.id, { type: 'none' }, NOW)).to.deep.equal(expected);
      expect(await stores().insight.getLog(a, 'log_unknown000000000000', { type: 'none' }, NOW)).to.equal(null);
      expect(await stores().insight.getLog(a, other.id, { type: 'none' }, NOW)).to.equal(null);
    });

    it('hides a record the retention policy no longer shows, as listings do', async () => {
      const a = randomUUID();
      const old = log(a, NOW - 3 * 86_400_000);
      const recent = [1, 2, 3].map((i) => log(a, NOW - i * MINUTE));
      await stores().logs.insert([old, ...recent]);
      expect(await stores().insight.getLog(a, old.id, { type: 'time', days: 2 }, NOW)).to.equal(null);
      expect(await stores().insight.getLog(a, old.id, { type: 'time', days: 4 }, NOW)).to.not.equal(null);
      expect(await stores().insight.getLog(a, old.id, { type: 'count', count: 3 }, NOW)).to.equal(null);
      expect(await stores().insight.getLog(a, recent[2]!.id, { type: 'count', count: 3 }, NOW)).to.not.equal(null);
      expect(await stores().insight.getLog(a, recent[2]!.id, { type: 'count', count: 2 }, NOW)).to.equal(null);
    });

    it('keeps console output once, only beside a stored record of the same function', async () => {
      const a = randomUUID();
      const b = randomUUID();
      const rec = log(a, NOW - MINUTE);
      await stores().logs.insert([rec]);
      expect(await stores().insight.getConsole(a, rec.id)).to.equal(null);
      expect(await stores().insight.putConsole(a, [{ logId: rec.id, output: output('first') }], null, NOW)).to.deep.equal([true]);
      expect(await stores().insight.putConsole(a, [{ logId: rec.id, output: output('second') }], null, NOW)).to.deep.equal([true]);
      expect(await stores().insight.getConsole(a, rec.id)).to.deep.equal(output('first'));
      // Another function cannot put output on a's record, nor read it; an id of no record stores nothing.
      expect(await stores().insight.putConsole(b, [{ logId: rec.id, output: output('intruder') }], null, NOW)).to.deep.equal([false]);
      expect(await stores().insight.getConsole(b, rec.id)).to.equal(null);
      expect(await stores().insight.putConsole(a, [{ logId: 'log_nosuchrecord0000000', output: output('x') }], null, NOW)).to.deep.equal([false]);
      expect(await stores().insight.getConsole(a, 'log_nosuchrecord0000000')).to.equal(null);
      expect(await stores().insight.getConsole(a, rec.id)).to.deep.equal(output('first'));
      // One post holds several executions: each is stored or not on its own.
      const second = log(a, NOW - MINUTE + 1);
      await stores().logs.insert([second]);
      expect(await stores().insight.putConsole(a, [{ logId: 'log_nosuchrecord0000001', output: output('x') }, { logId: second.id, output: output('second record') }], null, NOW)).to.deep.equal([false, true]);
      expect(await stores().insight.getConsole(a, second.id)).to.deep.equal(output('second record'));
    });

    it('removes console output with its record: applyRetention and deleteFunction', async () => {
      const a = randomUUID();
      const recs = [4, 3, 2, 1].map((i) => log(a, NOW - i * MINUTE));
      await stores().logs.insert(recs);
      for (const r of recs) expect(await stores().insight.putConsole(a, [{ logId: r.id, output: output(r.id) }], null, NOW)).to.deep.equal([true]);
      await stores().logs.applyRetention(a, { type: 'count', count: 2 }, NOW);
      expect(await stores().insight.getConsole(a, recs[0]!.id)).to.equal(null);
      expect(await stores().insight.getConsole(a, recs[1]!.id)).to.equal(null);
      expect(await stores().insight.getConsole(a, recs[3]!.id)).to.deep.equal(output(recs[3]!.id));
      await stores().logs.deleteFunction(a);
      expect(await stores().insight.getConsole(a, recs[3]!.id)).to.equal(null);
    });

    it('counts executions, cold starts and percentiles per window from the histogram', async () => {
      const a = randomUUID();
      const b = randomUUID();
      // Last hour: 100 executions of 1..100 ms, 3 of them cold; 3 hours ago: 10 more of 5,000 ms.
      const hour = Array.from({ length: 100 }, (_, i) => log(a, NOW - 30 * MINUTE + i, { execution_time_ms: i + 1, cold_start: i < 3 }));
      const earlier = Array.from({ length: 10 }, (_, i) => log(a, NOW - 3 * HOUR + i, { execution_time_ms: 5000 }));
      await stores().logs.insert([...hour.slice(0, 50), log(b, NOW - MINUTE, { execution_time_ms: 9 })]);
      await stores().logs.insert([...hour.slice(50), ...earlier]);
      const latency = await stores().insight.latency(a, NOW);
      expect(latency.last_hour.count).to.equal(100);
      expect(latency.last_hour.cold_starts).to.equal(3);
      expect(latency.last_hour.p50_ms).to.be.within(40, 60);
      expect(latency.last_hour.p95_ms).to.be.within(85, 100);
      expect(latency.last_hour.p99_ms).to.be.within(90, 100);
      expect(latency.last_day.count).to.equal(110);
      expect(latency.last_day.p99_ms).to.be.within(3000, 5000);
      // Retention never lowers them: they count executions, not kept records.
      await stores().logs.applyRetention(a, { type: 'count', count: 1 }, NOW);
      expect((await stores().insight.latency(a, NOW)).last_day.count).to.equal(110);
      // A day later the windows are empty.
      expect((await stores().insight.latency(a, NOW + 26 * HOUR)).last_day).to.deep.equal({ count: 0, cold_starts: 0, p50_ms: null, p95_ms: null, p99_ms: null });
      expect((await stores().insight.latency(b, NOW)).last_hour.count).to.equal(1);
    });
  });
}
