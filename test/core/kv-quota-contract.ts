import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type { KvQuota, RecordedExchange, Stores, StoredLog } from '@fnhost/core';

// The KV usage counters and quotas of every store (core/src/kv-quota.ts,
// KvStore.set/usage/groupUsage): part of the store contract suite
// (./store-contract.ts), so SQLite and MongoDB (the stand-in) meet the same
// rules. The clock is the contract's year-2100 one, so a real server's
// background deletion never runs behind a test's back.

const T0 = Date.UTC(2100, 0, 1) + 5 * 86_400_000;
const big: KvQuota = { maxBytes: 1 << 30, maxKeys: 1 << 20 };

function ns(): string {
  return 'q-' + randomUUID();
}

/** Bytes of a key: UTF-8 key + JSON value. */
function b(key: string, json: string): number {
  return Buffer.byteLength(key) + Buffer.byteLength(json);
}

export function describeKvQuotaContract(stores: () => Stores): void {
  describe('KvStore usage and quotas', () => {
    it('counts keys and bytes (UTF-8 key + JSON value); an overwrite changes the bytes, a delete takes the key off', async () => {
      const kv = stores().kv;
      const n = ns();
      expect(await kv.usage(n, T0)).to.deep.equal({ keys: 0, bytes: 0 });
      expect(await kv.set(n, 'é', '"✓✓"', null, T0)).to.deep.equal({ stored: true });
      await kv.set(n, 'k2', '12345', null, T0, big);
      expect(await kv.usage(n, T0)).to.deep.equal({ keys: 2, bytes: b('é', '"✓✓"') + b('k2', '12345') });
      await kv.set(n, 'k2', '1', null, T0, big);
      expect(await kv.usage(n, T0)).to.deep.equal({ keys: 2, bytes: b('é', '"✓✓"') + b('k2', '1') });
      expect(await kv.delete(n, 'é')).to.equal(true);
      expect(await kv.delete(n, 'é')).to.equal(false);
      expect(await kv.usage(n, T0)).to.deep.equal({ keys: 1, bytes: b('k2', '1') });
      await kv.deleteNamespace(n);
      expect(await kv.usage(n, T0)).to.deep.equal({ keys: 0, bytes: 0 });
    });

    it('expired keys do not count, before and after a sweep; a key set again after it expired counts once', async () => {
      const kv = stores().kv;
      const n = ns();
      await kv.set(n, 'short', '"aaaa"', 10, T0, big);
      await kv.set(n, 'stays', '1', null, T0, big);
      expect(await kv.usage(n, T0 + 9_999)).to.deep.equal({ keys: 2, bytes: b('short', '"aaaa"') + b('stays', '1') });
      expect(await kv.usage(n, T0 + 10_000)).to.deep.equal({ keys: 1, bytes: b('stays', '1') });
      await kv.set(n, 'short', '"bb"', 10, T0 + 20_000, big);
      expect(await kv.usage(n, T0 + 20_000)).to.deep.equal({ keys: 2, bytes: b('short', '"bb"') + b('stays', '1') });
      await kv.sweep(T0 + 40_000);
      expect(await kv.usage(n, T0 + 40_000)).to.deep.equal({ keys: 1, bytes: b('stays', '1') });
      // A delete of a key that expired (and may still be stored) leaves the count right.
      await kv.set(n, 'gone', '1', 1, T0 + 50_000, big);
      await kv.delete(n, 'gone');
      expect(await kv.usage(n, T0 + 60_000)).to.deep.equal({ keys: 1, bytes: b('stays', '1') });
    });

    it('refuses a write past the byte or key quota, naming it with what is used, and stores nothing', async () => {
      const kv = stores().kv;
      const n = ns();
      const quota: KvQuota = { maxBytes: 100, maxKeys: 3 };
      const v40 = JSON.stringify('x'.repeat(38)); // 40 bytes
      expect(await kv.set(n, 'a', v40, null, T0, quota)).to.deep.equal({ stored: true }); // 41
      expect(await kv.set(n, 'b', v40, null, T0, quota)).to.deep.equal({ stored: true }); // 82
      expect(await kv.set(n, 'c', v40, null, T0, quota)).to.deep.equal({ stored: false, quota: 'kv_bytes', used: 82, limit: 100 });
      expect(await kv.has(n, 'c', T0)).to.equal(false);
      expect(await kv.set(n, 'c', '1', null, T0, quota)).to.deep.equal({ stored: true }); // 84, 3 keys
      expect(await kv.set(n, 'd', '1', null, T0, quota)).to.deep.equal({ stored: false, quota: 'kv_keys', used: 3, limit: 3 });
      // Growing an existing key past the quota is refused; shrinking one, or the same size, is not.
      expect(await kv.set(n, 'c', JSON.stringify('x'.repeat(30)), null, T0, quota)).to.include({ stored: false, quota: 'kv_bytes' });
      expect(await kv.set(n, 'a', '2', null, T0, quota)).to.deep.equal({ stored: true });
      expect(await kv.usage(n, T0)).to.deep.equal({ keys: 3, bytes: 2 + 41 + 2 });
      // A lowered quota: shrinking writes still go through, growing ones do not.
      const lowered: KvQuota = { maxBytes: 10, maxKeys: 1 };
      expect(await kv.set(n, 'b', '0', null, T0, lowered)).to.deep.equal({ stored: true });
      expect(await kv.set(n, 'e', '0', null, T0, lowered)).to.include({ stored: false, quota: 'kv_keys' });
      // A delete makes room.
      await kv.delete(n, 'c');
      expect(await kv.set(n, 'd', '1', null, T0, quota)).to.deep.equal({ stored: true });
    });

    it('an expired key frees its room for new writes before any sweep', async () => {
      const kv = stores().kv;
      const n = ns();
      const quota: KvQuota = { maxBytes: 1000, maxKeys: 2 };
      await kv.set(n, 'a', '1', 5, T0, quota);
      await kv.set(n, 'b', '1', 5, T0, quota);
      expect(await kv.set(n, 'c', '1', null, T0 + 4_999, quota)).to.include({ stored: false, quota: 'kv_keys' });
      expect(await kv.set(n, 'c', '1', null, T0 + 5_000, quota)).to.deep.equal({ stored: true });
      expect(await kv.set(n, 'd', '1', null, T0 + 5_000, quota)).to.deep.equal({ stored: true });
      expect(await kv.usage(n, T0 + 5_000)).to.deep.equal({ keys: 2, bytes: 4 });
    });

    it('concurrent writers of new keys never pass the quota: exactly as many as fit are stored', async () => {
      const kv = stores().kv;
      const n = ns();
      const quota: KvQuota = { maxBytes: 1 << 20, maxKeys: 10 };
      const results = await Promise.all(Array.from({ length: 30 }, (_, i) => kv.set(n, `k${i}`, '1', null, T0, quota)));
      expect(results.filter((r) => r.stored).length).to.equal(10);
      const keys = await kv.list(n, '', 100, T0);
      expect(keys).to.have.length(10);
      expect(await kv.usage(n, T0)).to.deep.equal({ keys: 10, bytes: keys.reduce((sum, k) => sum + b(k, '1'), 0) });
      // Concurrent overwrites of one key leave one key with the last value's bytes.
      const m = ns();
      await Promise.all(Array.from({ length: 20 }, (_, i) => kv.set(m, 'same', String(i % 2 === 0 ? 1 : 22), null, T0, quota)));
      const value = (await kv.get(m, 'same', T0))!;
      expect(await kv.usage(m, T0)).to.deep.equal({ keys: 1, bytes: b('same', value) });
    });

    it('a group (a Kubernetes namespace) totals its functions, and its quota refuses growth past it', async () => {
      const kv = stores().kv;
      const group = 'team-' + randomUUID().slice(0, 8);
      const a = ns();
      const c = ns();
      const v = JSON.stringify('x'.repeat(48)); // 50 bytes
      expect(await kv.set(a, 'k', v, null, T0, { ...big, group: { id: group } })).to.deep.equal({ stored: true });
      expect(await kv.set(c, 'k', v, 10, T0, { ...big, group: { id: group } })).to.deep.equal({ stored: true });
      expect(await kv.groupUsage(group, T0)).to.deep.equal({ keys: 2, bytes: 102 });
      const limited: KvQuota = { ...big, group: { id: group, maxBytes: 150 } };
      expect(await kv.set(a, 'k2', v, null, T0, limited)).to.deep.equal({ stored: false, quota: 'namespace_kv_bytes', used: 102, limit: 150 });
      // c's key expires: the group's room comes back before any sweep.
      expect(await kv.groupUsage(group, T0 + 10_000)).to.deep.equal({ keys: 1, bytes: 51 });
      expect(await kv.set(a, 'k2', v, null, T0 + 10_000, limited)).to.deep.equal({ stored: true });
      expect(await kv.groupUsage(group, T0 + 10_000)).to.deep.equal({ keys: 2, bytes: 103 });
    });
  });

  describe('ExchangeStore.recordedBytes (a namespace\'s recorded-request total)', () => {
    const exchange = (req: number, res: number): RecordedExchange => ({
      request: { method: 'POST', path: '/', query: '', headers: {}, body: { encoding: 'utf8', data: 'q'.repeat(req), size: req, truncated: false } },
      response: { status: 200, headers: {}, body: res === 0 ? null : { encoding: 'utf8', data: 'r'.repeat(res), size: res, truncated: false } },
    });
    const record = (functionId: string, at: number, ex?: RecordedExchange): StoredLog => ({
      id: 'log_' + randomUUID().replaceAll('-', '').slice(0, 20), function_id: functionId, status_code: 200, execution_time_ms: 1,
      error_message: null, executed_at: new Date(at).toISOString(), trigger: 'http', expires_at: null, ...(ex === undefined ? {} : { exchange: ex }),
    });

    it('sums the bodies of the functions\' stored exchanges plus 1 KiB each, and nothing of others or of records without one', async () => {
      const s = stores();
      const a = randomUUID();
      const c = randomUUID();
      const other = randomUUID();
      await s.logs.insert([record(a, T0, exchange(100, 50)), record(a, T0 + 1), record(c, T0 + 2, exchange(7, 0)), record(other, T0 + 3, exchange(999, 999))]);
      expect(await s.exchanges.recordedBytes([a, c], T0 + 10)).to.equal(150 + 1024 + 7 + 1024);
      expect(await s.exchanges.recordedBytes([], T0 + 10)).to.equal(0);
      await s.logs.deleteFunction(a);
      expect(await s.exchanges.recordedBytes([a, c], T0 + 10)).to.equal(7 + 1024);
    });
  });
}
