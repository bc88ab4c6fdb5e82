import { expect } from 'chai';
import { cachedIsoTimestamp } from '../../gateway/src/invoke/execution-record.ts';

describe('executed_at from a cached second (execution-record.ts)', () => {
  it('prints exactly what toISOString prints, across seconds, in any order', () => {
    const base = Date.UTC(2026, 10, 29, 0, 31, 5, 0);
    // Within one second, at its edges, the next second, back to an earlier one, a day later.
    const times = [base, base + 1, base + 7, base + 999, base + 1000, base + 1001, base + 998, base - 1, base - 1000, base + 86_400_000 + 42, base + 5];
    for (let i = 0; i < 3000; i++) times.push(base + Math.floor(Math.random() * 5000) - 2500);
    for (const ms of times) expect(cachedIsoTimestamp(ms), String(ms)).to.equal(new Date(ms).toISOString());
  });

  it('prints times outside the four-digit years and before 1970 as toISOString does', () => {
    for (const ms of [0, -1, -999, -1000, -1001, 8.64e15 - 2, -8.64e15, -62198755200000, 253402300799999, 253402300800000, 1.5e12 + 0.5]) {
      expect(cachedIsoTimestamp(ms), String(ms)).to.equal(new Date(ms).toISOString());
      expect(cachedIsoTimestamp(ms + 1), String(ms + 1)).to.equal(new Date(ms + 1).toISOString());
    }
  });
});
