import { expect } from 'chai';
import { isIP } from 'node:net';
import { ValidationError } from '@fnhost/core';
import { hostPatternProblem, ipFamily, quotePattern, validateHostPattern, validateNetworkPolicy } from '@fnhost/core/netpattern.ts';
import type { SessionStore } from '@fnhost/core';
import { openSqliteStores } from '@fnhost/core/store/sqlite/index.ts';
import {
  DEFAULT_IDLE_MS, DEFAULT_MAX_AGE_MS, MAX_SESSIONS, PanelSessions, clearedCookie, expiresAt, isPanelCookieName, originAllowed, readSessionCookies, sameToken, sessionCookie,
  sessionIdHash, shouldTouch, touchIntervalMs,
} from '../../gateway/src/admin/session.ts';
import { CONTENT_SECURITY_POLICY, sessionTimesFromEnv } from '../../gateway/src/admin/router.ts';
import { bucketLogs, bucketWidth, p95Runs, percentile, ticks } from '../../admin/src/stats.ts';

// Pure parts of the admin panel: session expiry and touch rules (and the
// sessions over an in-memory SQLite store, counting its writes), cookie, Origin check, the pattern
// validator the panel shares with the gateway (its IP parsing must agree with
// node:net, which the browser bundle cannot use), and the chart's statistics.

const outcome = (f: () => unknown) => {
  try {
    return { ok: f() };
  } catch (err) {
    expect(err).to.be.instanceOf(ValidationError);
    return { error: (err as Error).message };
  }
};

describe('admin: shared network-policy pattern validator (core/src/netpattern.ts)', () => {
  const addresses = [
    '1.2.3.4', '255.255.255.255', '256.1.1.1', '01.2.3.4', '1.2.3', '1.2.3.4.5', '0.0.0.0', '10.0.0.1 ',
    '::', '::1', 'fe80::1', 'fe80::1%eth0', '2001:db8::', '2001:db8:0:0:0:0:0:1', '2001:db8:0:0:0:0:0:0:1', '1:2:3:4:5:6:7::', '::ffff:1.2.3.4',
    '::ffff:300.1.1.1', '1::2::3', 'g::1', '12345::', ':1', '1:', 'fd00:ec2::254', '1:2:3:4:5:6:1.2.3.4', '1:2:3:4:5:6:7:1.2.3.4', 'example.com', '',
  ];
  it('classifies IP literals exactly as node:net isIP', () => {
    for (const a of addresses) expect(ipFamily(a), a).to.equal(isIP(a));
  });

  it('accepts hosts, wildcards, IPs and CIDRs, normalised', () => {
    const accepted: Array<[string, string]> = [
      ['example.com', 'example.com'], ['EXAMPLE.com.', 'example.com'], ['*.example.com', '*.example.com'], ['*', '*'], ['*.', '*'],
      ['a'.repeat(63) + '.com', 'a'.repeat(63) + '.com'], ['10.0.0.0/8', '10.0.0.0/8'], ['fd00::/8', 'fd00::/8'], ['[::1]', '::1'], ['::1', '::1'],
      ['169.254.169.254', '169.254.169.254'], ['::ffff:169.254.169.254', '169.254.169.254'], ['localhost', 'localhost'], ['0.0.0.0/0', '0.0.0.0/0'], ['::/0', '::/0'],
      // A port narrows a host, a wildcard or an address to it (issue 29).
      ['127.0.0.1:3000', '127.0.0.1:3000'], ['[::1]:3000', '[::1]:3000'], ['DB.example.com:5432', 'db.example.com:5432'], ['*.example.com:443', '*.example.com:443'], ['[::ffff:127.0.0.1]:80', '127.0.0.1:80'],
    ];
    for (const [raw, normalised] of accepted) expect(validateHostPattern(raw), raw).to.equal(normalised);
  });

  it('refuses anything else with a message that names the pattern', () => {
    const refused: unknown[] = ['*.*.com', 'ex_ample.com', '-bad.com', 'bad-.com', 'a'.repeat(64) + '.com', 'bad host!', ' ', '', 42, null];
    for (const p of refused) {
      const result = outcome(() => validateHostPattern(p));
      expect(result, String(p)).to.have.property('error');
      expect((result as { error: string }).error, String(p)).to.contain(typeof p === 'string' && p.trim() !== '' ? quotePattern(p) : JSON.stringify(p)).and.match(/is invalid: /);
    }
    for (const p of ['ex_ample.com', '-bad.com', 'bad host!', '', 42]) expect((outcome(() => validateHostPattern(p)) as { error: string }).error, String(p)).to.contain('use a host (example.com)');
  });

  it('says what a refused pattern is instead: a URL, a host with a path or a port, markup, a bad CIDR', () => {
    const said: [string, string][] = [
      ['http://example.com', 'is invalid: a URL; give a host name (example.com) or a CIDR (10.0.0.0/8)'],
      ['https://example.com/path', 'is invalid: a URL; give a host name'],
      ['example.com/x', 'is invalid: a host with a path; give the host alone (example.com) or a CIDR (10.0.0.0/8)'],
      ['<script>alert(1)</script>', 'is invalid: markup or a script, not a host'],
      ['10.0.0.0/33', 'is invalid: not a valid CIDR: the prefix length of an IPv4 network is a number from 0 to 32, got "33"'],
      ['10.0.0.0/x', 'is invalid: not a valid CIDR: the prefix length of an IPv4 network is a number from 0 to 32, got "x"'],
      ['fd00::/129', 'is invalid: not a valid CIDR: the prefix length of an IPv6 network is a number from 0 to 128, got "129"'],
      ['10.0.0.300/8', 'is invalid: not a valid CIDR: "10.0.0.300" is not an IP address'],
      ['example.com:0', 'is invalid: the port of a pattern is a number from 1 to 65535, got "0"'],
      ['*:80', 'is invalid: a port goes with a host, a wildcard or an address, not with the catch-all *'],
      ['[example.com]:3000', 'is invalid: brackets hold an IPv6 address ([::1]:3000)'],
      ['a.*.com', 'is invalid: a wildcard stands only for the first labels (*.example.com)'],
      ['bad host!', `is invalid: a host name has letters, digits, '-' and '.' only, not " ", "!"`],
    ];
    for (const [raw, message] of said) expect((outcome(() => validateHostPattern(raw)) as { error: string }).error, raw).to.contain(`network policy pattern ${JSON.stringify(raw)} ${message}`);
  });

  it('repeats at most 60 characters of a long pattern, and its length', () => {
    const long = 'a'.repeat(5000);
    const { error } = outcome(() => validateHostPattern(long)) as { error: string };
    expect(error).to.equal(`network policy pattern "${'a'.repeat(60)}"… (5000 characters) is invalid: longer than 300 characters (a host name has at most 253); use a host (example.com), a wildcard (*.example.com), an IP or a CIDR (10.0.0.0/8)`);
    expect(hostPatternProblem(`http://${long}`)!.length).to.be.below(300);
  });

  it('validates whole policies: default, allow and deny lists, unknown fields, the size cap', () => {
    expect(validateNetworkPolicy({ default: 'deny', allow: ['127.0.0.0/8'] })).to.deep.equal({ default: 'deny', allow: ['127.0.0.0/8'], deny: [] });
    expect(outcome(() => validateNetworkPolicy({ default: 'allow', deny: ['bad host!'] }))).to.have.property('error').that.contains('"bad host!"');
    expect(outcome(() => validateNetworkPolicy({ default: 'maybe' }))).to.deep.equal({ error: 'network policy default must be "allow" or "deny", got "maybe"' });
    expect(outcome(() => validateNetworkPolicy({ default: 'allow', extra: 1 }))).to.deep.equal({ error: 'network policy has unknown field "extra"; the fields are default, allow, deny' });
    expect(outcome(() => validateNetworkPolicy({ default: 'allow', allow: 'x' }))).to.deep.equal({ error: 'network policy allow must be an array of patterns' });
    expect(outcome(() => validateNetworkPolicy([]))).to.have.property('error').that.contains('must be an object');
    expect(outcome(() => validateNetworkPolicy({ default: 'allow', deny: Array.from({ length: 501 }, (_, i) => `h${i}.com`) }))).to.deep.equal({ error: 'network policy deny has 501 patterns; at most 500 are allowed' });
  });

  it('gives a form message naming the pattern, or null', () => {
    expect(hostPatternProblem('api.example.com')).to.equal(null);
    expect(hostPatternProblem('bad host!')).to.contain('"bad host!"');
  });
});

describe('admin: session expiry and touch rules (pure)', () => {
  const times = { idleMs: 1000, maxAgeMs: 2500 };

  it('ends a session at the idle time after its last use, capped by its maximum age', () => {
    expect(expiresAt({ createdAt: 0, lastSeenAt: 0 }, times)).to.equal(1000);
    expect(expiresAt({ createdAt: 0, lastSeenAt: 1200 }, times)).to.equal(2200);
    expect(expiresAt({ createdAt: 0, lastSeenAt: 1600 }, times)).to.equal(2500);
    expect(expiresAt({ createdAt: 100, lastSeenAt: 9000 }, times)).to.equal(2600);
  });

  it('writes last-seen at most once per tenth of the idle window, and only when that moves the end', () => {
    expect(touchIntervalMs(times)).to.equal(100);
    expect(touchIntervalMs({ idleMs: DEFAULT_IDLE_MS, maxAgeMs: DEFAULT_MAX_AGE_MS })).to.equal(3 * 60_000);
    const s = { createdAt: 0, lastSeenAt: 500 };
    expect(shouldTouch(s, 500, times)).to.equal(false);
    expect(shouldTouch(s, 599, times)).to.equal(false);
    expect(shouldTouch(s, 600, times)).to.equal(true);
    expect(shouldTouch(s, 1400, times)).to.equal(true);
    // From 1500 on the end is the maximum age (2500) whatever last-seen is: no write.
    expect(shouldTouch({ createdAt: 0, lastSeenAt: 1500 }, 1700, times)).to.equal(false);
    expect(shouldTouch({ createdAt: 0, lastSeenAt: 1450 }, 1550, times)).to.equal(true); // 2450 -> 2500
  });

  it('compares tokens in constant time by digest', () => {
    expect(sameToken('abc', 'abc')).to.equal(true);
    expect(sameToken('abc', 'abd')).to.equal(false);
    expect(sameToken('', 'abc')).to.equal(false);
  });
});

/** A SessionStore (SQLite in memory) that counts its writes. */
function countingStore(): { store: SessionStore; writes: { create: number; touch: number; delete: number }; close(): Promise<void> } {
  const stores = openSqliteStores({ path: ':memory:' });
  const inner = stores.sessions;
  const writes = { create: 0, touch: 0, delete: 0 };
  const store: SessionStore = {
    create: (s, keep) => (writes.create++, inner.create(s, keep)),
    get: (h, now) => inner.get(h, now),
    touch: (h, l, e) => (writes.touch++, inner.touch(h, l, e)),
    delete: (h) => (writes.delete++, inner.delete(h)),
    sweep: (now) => inner.sweep(now),
  };
  return { store, writes, close: () => stores.close() };
}

describe('admin: panel sessions over a store, with a fake clock', () => {
  let t: number;
  let counted: ReturnType<typeof countingStore>;
  beforeEach(() => {
    t = 1_000_000;
    counted = countingStore();
  });
  afterEach(() => counted.close());
  const sessions = (idleMs?: number, maxAgeMs?: number) => new PanelSessions({ store: counted.store, now: () => t, idleMs, maxAgeMs });

  it('expires after the idle time and after the maximum age, and a use extends only the idle time', async () => {
    const panel = sessions(1000, 2500);
    const { id, session } = await panel.create();
    expect(session.csrf).to.have.length.greaterThan(40);
    t += 900;
    expect((await panel.get(id))?.csrf).to.equal(session.csrf);
    t += 900;
    expect((await panel.get(id))?.csrf).to.equal(session.csrf);
    t += 600; // 2400 in all, used 600 ago
    expect((await panel.get(id))?.csrf).to.equal(session.csrf);
    t += 200; // 2600: over the maximum age
    expect(await panel.get(id)).to.equal(undefined);
    const other = await panel.create();
    t += 1000;
    expect(await panel.get(other.id)).to.equal(undefined);
    expect(await counted.store.sweep(t)).to.equal(2); // hidden by the store's read once past their stored end, deleted by the sweep
  });

  it('writes last-seen once per tenth of the idle window however many requests come', async () => {
    const panel = sessions(1000, 100_000);
    const { id } = await panel.create();
    // A request every 10 ms for 5 s: 500 requests, 5 idle windows.
    for (let i = 0; i < 500; i++) {
      t += 10;
      expect(await panel.get(id), `request ${i}`).not.to.equal(undefined);
    }
    expect(counted.writes.touch).to.equal(50);
    // What the store holds lags the last use by less than the interval, so the session
    // ends between 90 % and 100 % of the idle time after its last use.
    const stored = (await counted.store.get(sessionIdHash(id), t))!;
    expect(t - stored.lastSeenAt).to.be.within(0, 99);
    t = stored.lastSeenAt + 999;
    expect(await panel.get(id)).not.to.equal(undefined);
    expect(counted.writes.touch).to.equal(51);
    t += 1000;
    expect(await panel.get(id)).to.equal(undefined);
  });

  it('keeps only a digest of the id; unknown, empty and oversized ids find nothing', async () => {
    const panel = sessions();
    const { id, session } = await panel.create();
    expect(session.idHash).to.equal(sessionIdHash(id)).and.to.match(/^[0-9a-f]{64}$/);
    expect(Object.values(session)).not.to.include(id);
    expect(await counted.store.get(session.idHash, t)).to.deep.equal(session);
    expect(await panel.get(id.slice(0, -1) + (id.endsWith('A') ? 'B' : 'A'))).to.equal(undefined);
    expect(await panel.get('')).to.equal(undefined);
    expect(await panel.get(undefined)).to.equal(undefined);
    expect(await panel.get('x'.repeat(200))).to.equal(undefined);
    await panel.destroy(id);
    expect(await panel.get(id)).to.equal(undefined);
  });

  it('a session ended through another gateway (same store) is refused, also when a use would touch it', async () => {
    const a = sessions(1000);
    const b = sessions(1000);
    const { id } = await a.create();
    t += 500;
    expect(await b.get(id)).not.to.equal(undefined);
    await b.destroy(id);
    t += 200;
    expect(await a.get(id)).to.equal(undefined);
  });

  it('applies its own shorter lifetimes to a session another gateway made', async () => {
    const long = sessions(10_000);
    const short = sessions(1000);
    const { id } = await long.create();
    t += 2000;
    expect(await short.get(id)).to.equal(undefined);
    expect(await long.get(id)).to.equal(undefined); // removed from the store
  });

  it('drops the oldest sessions beyond the cap', async () => {
    const panel = sessions();
    const first = await panel.create();
    t += 1;
    const second = await panel.create();
    for (let i = 0; i < MAX_SESSIONS - 1; i++) await panel.create();
    expect(await panel.get(first.id)).to.equal(undefined);
    expect(await panel.get(second.id)).not.to.equal(undefined);
  });

  it('sweeps expired sessions', async () => {
    const panel = sessions(10);
    await panel.create();
    await panel.create();
    t += 20;
    expect(await panel.sweep()).to.equal(2);
  });
});

describe('admin: cookie, Origin and CSP', () => {
  it('plain HTTP: HttpOnly, SameSite=Strict, Path=/admin (never sent to /invoke); TLS: __Host- prefix, Secure, Path=/', () => {
    expect(sessionCookie('id1', { secure: false, maxAgeSeconds: 60 })).to.equal('fnhost_admin=id1; Path=/admin; HttpOnly; SameSite=Strict; Max-Age=60');
    expect(sessionCookie('id1', { secure: true, maxAgeSeconds: 60 })).to.equal('__Host-fnhost_admin=id1; Path=/; HttpOnly; SameSite=Strict; Max-Age=60; Secure');
    expect(clearedCookie(false)).to.contain('Max-Age=0');
    expect(clearedCookie(true)).to.match(/^__Host-fnhost_admin=; .*Max-Age=0; Secure$/);
  });

  it('reads every panel cookie among others (a planted one cannot hide the real one), at most four', () => {
    expect(readSessionCookies('a=1; fnhost_admin=xyz; b=2')).to.deep.equal(['xyz']);
    expect(readSessionCookies('fnhost_admin=planted; fnhost_admin=real; __Host-fnhost_admin=tls')).to.deep.equal(['planted', 'real', 'tls']);
    expect(readSessionCookies('fnhost_admin_other=1')).to.deep.equal([]);
    expect(readSessionCookies(undefined)).to.deep.equal([]);
    expect(readSessionCookies(Array.from({ length: 50 }, (_, i) => `fnhost_admin=${i}`).join('; '))).to.have.length(4);
    expect(['fnhost_admin', '__Host-fnhost_admin', 'fnhost_admin2', '__Secure-fnhost_admin'].map(isPanelCookieName)).to.deep.equal([true, true, false, false]);
  });

  it('accepts no Origin or this gateway, refuses any other', () => {
    expect(originAllowed(undefined, 'http', '127.0.0.1:8080')).to.equal(true);
    expect(originAllowed('http://127.0.0.1:8080', 'http', '127.0.0.1:8080')).to.equal(true);
    expect(originAllowed('https://fn.example.com', 'http', 'fn.example.com')).to.equal(true);
    expect(originAllowed('http://fn.example.com', 'https', 'fn.example.com')).to.equal(false);
    expect(originAllowed('http://evil.example', 'http', '127.0.0.1:8080')).to.equal(false);
    expect(originAllowed('null', 'http', '127.0.0.1:8080')).to.equal(false);
    expect(originAllowed('http://127.0.0.1:8081', 'http', '127.0.0.1:8080')).to.equal(false);
  });

  it('has a CSP without inline script or style, and no other host', () => {
    expect(CONTENT_SECURITY_POLICY).not.to.match(/unsafe-inline|unsafe-eval|https?:/);
    expect(CONTENT_SECURITY_POLICY).to.contain("frame-ancestors 'none'");
  });

  it('reads session lifetimes from the environment and names a bad value', () => {
    expect(sessionTimesFromEnv({ FNHOST_ADMIN_SESSION_IDLE_SECONDS: '60' })).to.deep.equal({ idleMs: 60_000, maxAgeMs: undefined });
    expect(() => sessionTimesFromEnv({ FNHOST_ADMIN_SESSION_MAX_SECONDS: '1h' })).to.throw(/FNHOST_ADMIN_SESSION_MAX_SECONDS="1h"/);
    expect(() => sessionTimesFromEnv({ FNHOST_ADMIN_SESSION_IDLE_SECONDS: '0' })).to.throw(/IDLE/);
  });
});

describe('admin: chart statistics', () => {
  it('computes the nearest-rank p95', () => {
    expect(percentile([], 95)).to.equal(null);
    expect(percentile([7], 95)).to.equal(7);
    expect(percentile(Array.from({ length: 100 }, (_, i) => 100 - i), 95)).to.equal(95);
    expect(percentile([1, 2, 3, 4, 1000], 95)).to.equal(1000);
  });

  it('picks a readable bucket width', () => {
    expect(bucketWidth(10_000, 24)).to.equal(1_000);
    expect(bucketWidth(3_600_000, 24)).to.equal(5 * 60_000);
    expect(bucketWidth(1e12, 24)).to.equal(7 * 86_400_000);
  });

  it('buckets executions and errors over time, empty buckets included', () => {
    const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s)).toISOString();
    const logs = [
      { executed_at: at(0), status_code: 200, execution_time_ms: 10 },
      { executed_at: at(0), status_code: 500, execution_time_ms: 30 },
      { executed_at: at(3), status_code: 404, execution_time_ms: 5 },
      { executed_at: at(3), status_code: 302, execution_time_ms: 7 },
    ];
    const buckets = bucketLogs(logs, 24);
    expect(buckets.map((b) => [b.executions, b.errors, b.p95Ms])).to.deep.equal([
      [2, 1, 30],
      [0, 0, null],
      [0, 0, null],
      [2, 1, 7],
    ]);
    expect(bucketLogs([])).to.deep.equal([]);
  });

  it('breaks the p95 line where a bucket is empty: one run per stretch of buckets with a p95', () => {
    const b = (p95Ms: number | null) => ({ start: 0, executions: p95Ms === null ? 0 : 1, errors: 0, p95Ms });
    expect(p95Runs([b(30), b(null), b(null), b(7)])).to.deep.equal([[{ index: 0, p95: 30 }], [{ index: 3, p95: 7 }]]);
    expect(p95Runs([b(1), b(2), b(null), b(3), b(4)])).to.deep.equal([
      [{ index: 0, p95: 1 }, { index: 1, p95: 2 }],
      [{ index: 3, p95: 3 }, { index: 4, p95: 4 }],
    ]);
    expect(p95Runs([b(null)])).to.deep.equal([]);
  });

  it('marks 0, the middle and the top of an axis in whole numbers', () => {
    expect(ticks(1)).to.deep.equal([0, 1]);
    expect(ticks(2)).to.deep.equal([0, 1, 2]);
    expect(ticks(45)).to.deep.equal([0, 23, 45]);
  });
});
