import { expect } from 'chai';
import { KvQuotaError, KvRateError, KvRateLimiter, checkKvQuota, takeTokens, validateKvQuota, ValidationError } from '@fnhost/core';
import { kvSettingsFrom, parseNamespaceOverrides, quotaFor, KvSettingsError } from '../../gateway/src/kv/settings.ts';

describe('KV quotas (core/src/kv-quota.ts)', () => {
  describe('takeTokens (token bucket)', () => {
    it('starts full, takes tokens, refuses when empty with the wait until enough come back', () => {
      let b = takeTokens(undefined, 3, 10, 5, 0);
      expect(b).to.deep.include({ ok: true, bucket: { tokens: 2, at: 0 } });
      b = takeTokens(b.bucket, 2, 10, 5, 0);
      expect(b.ok).to.equal(true);
      const refused = takeTokens(b.bucket, 1, 10, 5, 0);
      expect(refused).to.deep.equal({ ok: false, bucket: { tokens: 0, at: 0 }, retryAfterMs: 100 });
    });

    it('refills at the rate up to the capacity, never above', () => {
      const empty = { tokens: 0, at: 1000 };
      expect(takeTokens(empty, 1, 10, 5, 1050).ok).to.equal(false); // half a token
      expect(takeTokens(empty, 1, 10, 5, 1100)).to.deep.include({ ok: true, bucket: { tokens: 0, at: 1100 } });
      expect(takeTokens(empty, 1, 10, 5, 100_000)).to.deep.include({ ok: true, bucket: { tokens: 4, at: 100_000 } });
    });

    it('lets a cost above the capacity through from a full bucket (it goes into debt) rather than refusing it forever', () => {
      const r = takeTokens(undefined, 8, 1, 5, 0);
      expect(r).to.deep.include({ ok: true, bucket: { tokens: -3, at: 0 } });
      expect(takeTokens(r.bucket, 1, 1, 5, 3_000).ok).to.equal(false);
      expect(takeTokens(r.bucket, 1, 1, 5, 4_000).ok).to.equal(true);
    });

    it('a clock that goes back adds nothing', () => {
      expect(takeTokens({ tokens: 0, at: 5000 }, 1, 10, 5, 1000).ok).to.equal(false);
    });
  });

  describe('KvRateLimiter', () => {
    it('bounds writes a second per function, each function apart, naming the bound', () => {
      const rate = new KvRateLimiter({ writesPerSecond: 3, bytesPerSecond: 0 });
      for (let i = 0; i < 3; i++) rate.take('a', 'fa', 10, 0);
      expect(() => rate.take('a', 'fa', 10, 0)).to.throw(KvRateError, 'KV write rate exceeded: function fa may write 3 times a second (kv_writes_per_second); retry in 1 s');
      rate.take('b', 'fb', 10, 0);
      rate.take('a', 'fa', 10, 334);
    });

    it('bounds bytes a second with a burst of twice the rate; a refusal by bytes takes no write token', () => {
      const rate = new KvRateLimiter({ writesPerSecond: 100, bytesPerSecond: 1000 });
      rate.take('a', 'fa', 2000, 0);
      const err = (() => {
        try {
          rate.take('a', 'fa', 500, 0);
        } catch (e) {
          return e as KvRateError;
        }
        return null;
      })();
      expect(err).to.be.instanceOf(KvRateError);
      expect(err!.status).to.equal(429);
      expect(err!.message).to.contain('(kv_write_bytes_per_second)');
      expect(err!.retryAfterSeconds).to.equal(1);
      rate.take('a', 'fa', 500, 500);
    });

    it('0 turns a bound off', () => {
      const rate = new KvRateLimiter({ writesPerSecond: 0, bytesPerSecond: 0 });
      for (let i = 0; i < 10_000; i++) rate.take('a', 'fa', 1 << 20, 0);
    });
  });

  describe('checkKvQuota and KvQuotaError', () => {
    const q = { maxBytes: 100, maxKeys: 2 };
    it('refuses growth past either bound, keys first; a write that grows neither always fits', () => {
      expect(checkKvQuota({ keys: 2, bytes: 10 }, 1, 1, q)).to.deep.equal({ quota: 'kv_keys', used: 2, limit: 2 });
      expect(checkKvQuota({ keys: 1, bytes: 90 }, 0, 11, q)).to.deep.equal({ quota: 'kv_bytes', used: 90, limit: 100 });
      expect(checkKvQuota({ keys: 1, bytes: 90 }, 0, 10, q)).to.equal(null);
      expect(checkKvQuota({ keys: 5, bytes: 500 }, 0, -1, q)).to.equal(null);
    });

    it('names the function (or the namespace), what it stores, the quota and its name', () => {
      const e = new KvQuotaError('hello', { quota: 'kv_bytes', used: 104857600, limit: 104857600 });
      expect(e.message).to.equal('KV quota exceeded: function hello stores 104857600 of 104857600 bytes (kv_bytes)');
      expect(e.status).to.equal(413);
      expect(e.code).to.equal('kv_quota_exceeded');
      expect(new KvQuotaError('hello', { quota: 'kv_keys', used: 3, limit: 3 }).message).to.equal('KV quota exceeded: function hello stores 3 of 3 keys (kv_keys)');
      expect(new KvQuotaError('hello', { quota: 'namespace_kv_bytes', used: 7, limit: 9 }, 'team-a').message)
        .to.equal('KV quota exceeded: namespace team-a stores 7 of 9 bytes (namespace_kv_bytes)');
    });
  });

  describe('validateKvQuota (a function\'s kv_quota field)', () => {
    it('takes integers or null (the platform default), keeps fields not named, and stores no nulls', () => {
      expect(validateKvQuota({ max_bytes: 1024 })).to.deep.equal({ max_bytes: 1024 });
      expect(validateKvQuota({ max_keys: 5 }, { max_bytes: 1024 })).to.deep.equal({ max_bytes: 1024, max_keys: 5 });
      expect(validateKvQuota({ max_bytes: null }, { max_bytes: 1024, max_keys: 5 })).to.deep.equal({ max_keys: 5 });
      expect(validateKvQuota(null, { max_bytes: 1024 })).to.deep.equal({});
    });

    it('refuses a bad value or field naming it', () => {
      expect(() => validateKvQuota({ max_bytes: 0 })).to.throw(ValidationError, 'kv_quota.max_bytes must be an integer from 1 to');
      expect(() => validateKvQuota({ max_keys: 1.5 })).to.throw(ValidationError, 'kv_quota.max_keys');
      expect(() => validateKvQuota({ bytes: 1 })).to.throw(ValidationError, 'unknown field "bytes"');
      expect(() => validateKvQuota('1MiB')).to.throw(ValidationError, 'kv_quota must be an object');
    });
  });

  describe('gateway settings (gateway/src/kv/settings.ts)', () => {
    it('defaults: 100 MiB and 100,000 keys per function, 100 writes and 4 MiB a second, no namespace total', () => {
      const s = kvSettingsFrom({});
      expect(s).to.deep.include({ maxBytes: 100 * 1024 * 1024, maxKeys: 100_000, writesPerSecond: 100, writeBytesPerSecond: 4 * 1024 * 1024, namespaceMaxBytes: 0 });
    });

    it('reads the variables and refuses bad values naming them', () => {
      expect(kvSettingsFrom({ FNHOST_KV_MAX_BYTES: '5242880', FNHOST_KV_WRITES_PER_SECOND: '0' })).to.deep.include({ maxBytes: 5242880, writesPerSecond: 0 });
      expect(() => kvSettingsFrom({ FNHOST_KV_MAX_BYTES: '5MiB' })).to.throw(KvSettingsError, 'FNHOST_KV_MAX_BYTES="5MiB" is not an integer');
      expect(() => kvSettingsFrom({ FNHOST_KV_MAX_KEYS: '0' })).to.throw(KvSettingsError, 'FNHOST_KV_MAX_KEYS=0 is out of range');
    });

    it('parses per-namespace totals, refusing what is not a namespace or a byte count', () => {
      expect([...parseNamespaceOverrides('{"team-a": 1024, "team-b": 0}')]).to.deep.equal([['team-a', 1024], ['team-b', 0]]);
      expect(() => parseNamespaceOverrides('{"Team_A": 1}')).to.throw(KvSettingsError, '"Team_A" is not a namespace name');
      expect(() => parseNamespaceOverrides('{"team-a": "1Gi"}')).to.throw(KvSettingsError, 'the quota of "team-a"');
      expect(() => parseNamespaceOverrides('[1]')).to.throw(KvSettingsError, 'must be a JSON object');
    });

    it('quotaFor: the function\'s own fields over the platform\'s; in cluster mode the namespace (its override, 0 lifting the default)', () => {
      const s = kvSettingsFrom({ FNHOST_NAMESPACE_KV_MAX_BYTES: '1000', FNHOST_NAMESPACE_KV_QUOTAS: '{"big": 5000, "free": 0}' });
      expect(quotaFor({ namespace: 'default', kv_quota: { max_keys: 7 } }, s, false)).to.deep.equal({ maxBytes: s.maxBytes, maxKeys: 7 });
      expect(quotaFor({ namespace: 'a' }, s, true).group).to.deep.equal({ id: 'a', maxBytes: 1000 });
      expect(quotaFor({ namespace: 'big' }, s, true).group).to.deep.equal({ id: 'big', maxBytes: 5000 });
      expect(quotaFor({ namespace: 'free' }, s, true).group).to.deep.equal({ id: 'free' });
    });
  });
});
