import { expect } from 'chai';
import { isoTimestamp, isUuid, logIdTimePrefix, newFunctionId, newLogId } from '../../core/src/ids.ts';

describe('ids', () => {
  it('log ids are log_ followed by 20 URL-safe characters, and do not repeat', () => {
    const ids = Array.from({ length: 2000 }, newLogId);
    for (const id of ids) expect(id).to.match(/^log_[A-Za-z0-9_-]{20}$/);
    expect(new Set(ids).size).to.equal(ids.length);
  });

  it('log ids open with their millisecond in an order-preserving alphabet, so later ids sort later', () => {
    // Byte order is what SQLite's index and MongoDB's compare: plain sort() is that order for these characters.
    const times = [0, 1, 63, 64, 4095, 4096, Date.UTC(2026, 10, 29), Date.UTC(2026, 10, 29) + 1, Date.UTC(2100, 0, 1), 64 ** 7 - 1];
    const prefixes = times.map(logIdTimePrefix);
    for (const p of prefixes) expect(p).to.match(/^[A-Za-z0-9_-]{7}$/);
    expect([...prefixes].sort()).to.deep.equal(prefixes);
    expect(new Set(prefixes).size).to.equal(prefixes.length);
    expect(newLogId(Date.UTC(2026, 10, 29)).slice(4, 11)).to.equal(logIdTimePrefix(Date.UTC(2026, 10, 29)));
    // The random part: 13 characters, different for ids of one millisecond.
    const same = Array.from({ length: 500 }, () => newLogId(1_800_000_000_000));
    expect(new Set(same).size).to.equal(500);
  });

  it('function ids are UUIDs', () => {
    const id = newFunctionId();
    expect(isUuid(id)).to.equal(true);
    expect(newFunctionId()).to.not.equal(id);
  });

  it('isUuid accepts either case and rejects anything else', () => {
    expect(isUuid('5B0F1A1E-1111-4222-8333-944445555666')).to.equal(true);
    expect(isUuid('5b0f1a1e-1111-4222-8333-944445555666')).to.equal(true);
    for (const bad of ['', 'hello', '5b0f1a1e11114222833394444555566', '5b0f1a1e-1111-4222-8333-94444555566', '5b0f1a1e-1111-4222-8333-944445555666x', 'g5b0f1a1-1111-4222-8333-944445555666']) {
      expect(isUuid(bad), bad).to.equal(false);
    }
  });

  it('timestamps are ISO 8601 UTC with milliseconds and Z', () => {
    expect(isoTimestamp(0)).to.equal('1970-01-01T00:00:00.000Z');
    expect(isoTimestamp(Date.UTC(2026, 10, 22, 23, 5, 7, 9))).to.equal('2026-11-22T23:05:07.009Z');
  });
});
