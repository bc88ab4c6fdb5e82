import { expect } from 'chai';
import type { ExchangeStore, FunctionRecord, RecordedExchange } from '@fnhost/core';
import { keepsBodies, RecordedQuota, REFRESH_MS } from '../../gateway/src/quotas/recorded.ts';
import { Metrics } from '../../gateway/src/metrics.ts';
import { recordedLimitFor, kvSettingsFrom } from '../../gateway/src/kv/settings.ts';

// Recorded-request bytes per namespace (gateway/src/quotas/recorded.ts), with
// a stand-in ExchangeStore whose total the test sets.

function exchange(bodyChars: number): RecordedExchange {
  const body = { encoding: 'utf8' as const, data: 'x'.repeat(bodyChars), size: bodyChars, truncated: false };
  return {
    request: { method: 'POST', path: '/', query: '', headers: { 'content-type': 'text/plain' }, body },
    response: { status: 200, headers: {}, body: null },
  };
}

const fn = { function_id: 'f1', name: 'pay', namespace: 'team-a' } as FunctionRecord;

describe('recorded-request bytes per namespace', () => {
  it('keepsBodies: whole while the namespace has room, also with no quota', () => {
    expect(keepsBodies(0, 100, 100)).to.equal(true);
    expect(keepsBodies(1, 100, 100)).to.equal(false);
    expect(keepsBodies(10 ** 12, 100, undefined)).to.equal(true);
  });

  it('stores an exchange whole below the quota, without its bodies (saying why) past it, counts the refusal, and re-measures after the interval', async () => {
    let stored = 3000; // stored before this gateway started
    let asked = 0;
    const exchanges = { recordedBytes: async () => (asked++, stored) } as unknown as ExchangeStore;
    let now = 1_000_000;
    const metrics = new Metrics();
    const quota = new RecordedQuota({ exchanges, limitOf: () => 5000, functionsOf: () => [fn], now: () => now, metrics });
    // Judged before the first measure came back (0 known): kept, 2024 bytes counted.
    expect(quota.admit(fn, exchange(1000))).to.deep.equal(exchange(1000));
    await quota.settled();
    expect(asked).to.equal(1);
    const cut = quota.admit(fn, exchange(1000));
    expect(cut.request.body).to.deep.include({ data: '', size: 1000 });
    expect(cut.request.body!.omitted).to.equal('namespace team-a stores 5024 of 5000 bytes of recorded requests (namespace_recorded_bytes), so this body was not kept');
    expect(cut.response).to.deep.include({ status: 200 });
    expect(metrics.refusedCount('namespace_recorded_bytes')).to.equal(1);
    // The sweep deleted old exchanges: the next measure after the interval gives room again.
    stored = 0;
    now += REFRESH_MS;
    quota.admit(fn, exchange(10));
    await quota.settled();
    expect(asked).to.equal(2);
    expect(quota.admit(fn, exchange(1000)).request.body!.data).to.have.length(1000);
  });

  it('a failing measure is counted and the calls go on, judged on the last measure', async () => {
    const exchanges = { recordedBytes: async () => { throw new Error('store down'); } } as unknown as ExchangeStore;
    const metrics = new Metrics();
    const quota = new RecordedQuota({ exchanges, limitOf: () => 5000, functionsOf: () => [fn], now: () => 0, metrics });
    expect(quota.admit(fn, exchange(10)).request.body!.data).to.have.length(10);
    await quota.settled();
    expect(metrics.render({ logQueueDepth: 0, logRecordsDropped: 0, recordedBodiesDropped: 0, logRecordsWritten: 0, logWriteFailures: 0, runningRuntimes: 0 })).to.contain('fnhost_background_failures_total{task="recorded_bytes_measure"} 1');
  });

  it('settings: every namespace\'s total and per-namespace overrides (0: none)', () => {
    const s = kvSettingsFrom({ FNHOST_NAMESPACE_RECORDED_MAX_BYTES: '1000', FNHOST_NAMESPACE_RECORDED_QUOTAS: '{"big": 9000, "free": 0}' });
    expect(recordedLimitFor('a', s)).to.equal(1000);
    expect(recordedLimitFor('big', s)).to.equal(9000);
    expect(recordedLimitFor('free', s)).to.equal(undefined);
    expect(recordedLimitFor('a', kvSettingsFrom({}))).to.equal(undefined);
  });
});
