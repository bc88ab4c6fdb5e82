import { expect } from 'chai';
import { ClientCounts, clientKey, deriveBounds, MAX_CONNECTIONS_CAP } from '../../gateway/src/http/connection-bounds.ts';
import { BodyBudget } from '../../gateway/src/invoke/body-budget.ts';
import { nofilePlan, parseNofile } from '../../gateway/src/resources/descriptors.ts';
import { Refusals } from '../../gateway/src/resources/refusals.ts';
import { loadResourceSettings } from '../../gateway/src/resources/settings.ts';
import { silentLogger } from '../../gateway/src/log.ts';

// The pure parts of the gateway's bounds on connections, descriptors and body memory (issue 27).

const defaults = loadResourceSettings({});

describe('gateway resources: settings', () => {
  it('has the documented defaults', () => {
    expect(defaults).to.deep.equal({
      nofileTarget: 65_536, fdReserve: undefined, maxConnections: undefined, maxConnectionsPerClient: undefined,
      adminMaxConnections: 128, adminMaxConnectionsPerClient: 32, headersTimeoutMs: 10_000, requestTimeoutMs: 300_000,
      bodyIdleTimeoutMs: 20_000, bodyMemoryBytes: 256 * 1024 * 1024,
    });
  });

  it('refuses a bad value naming the variable', () => {
    expect(() => loadResourceSettings({ FNHOST_MAX_CONNECTIONS: 'lots' })).to.throw('FNHOST_MAX_CONNECTIONS="lots" is not an integer');
    expect(() => loadResourceSettings({ FNHOST_BODY_MEMORY_BYTES: '1024' })).to.throw('FNHOST_BODY_MEMORY_BYTES=1024 is out of range');
    expect(() => loadResourceSettings({ FNHOST_REQUEST_TIMEOUT_MS: '5000' })).to.throw('FNHOST_REQUEST_TIMEOUT_MS=5000 is below FNHOST_HEADERS_TIMEOUT_MS=10000');
  });
});

describe('gateway resources: descriptors', () => {
  const limits = 'Limit                     Soft Limit           Hard Limit           Units     \nMax open files            1024                 4096                 files     \n';

  it('reads the limits from /proc/self/limits', () => {
    expect(parseNofile(limits)).to.deep.equal({ soft: 1024, hard: 4096 });
    expect(parseNofile(limits.replace('4096', 'unlimited')).hard).to.equal(Infinity);
    expect(() => parseNofile('nothing')).to.throw('Max open files');
  });

  it('raises as root only, never lowers, and FNHOST_NOFILE=0 keeps the limits', () => {
    expect(nofilePlan({ soft: 1024, hard: 4096 }, 65_536, true)).to.deep.equal({ raiseTo: 65_536 });
    expect(nofilePlan({ soft: 1024, hard: 4096 }, 65_536, false)).to.have.property('keep').that.includes('not root');
    expect(nofilePlan({ soft: 1_048_576, hard: 1_048_576 }, 65_536, true)).to.have.property('keep');
    expect(nofilePlan({ soft: 1024, hard: 1024 }, 0, true)).to.have.property('keep');
  });
});

describe('gateway resources: connection bounds', () => {
  it('keeps a quarter of the limit (at least 256) for the gateway and gives callers the rest, capped', () => {
    const small = deriveBounds(1024, defaults, false);
    expect([small.reserve, small.main.maxConnections, small.main.perClient, small.admin.maxConnections]).to.deep.equal([256, 768, 256, 64]);
    const large = deriveBounds(65_536, defaults, false);
    expect([large.reserve, large.main.maxConnections]).to.deep.equal([16_384, MAX_CONNECTIONS_CAP]);
    expect(deriveBounds(Infinity, defaults, false).main.maxConnections).to.equal(MAX_CONNECTIONS_CAP);
  });

  it('behind a trusted proxy there is no per-client bound unless one is set', () => {
    expect(deriveBounds(65_536, defaults, true).main.perClient).to.equal(0);
    expect(deriveBounds(65_536, { ...defaults, maxConnectionsPerClient: 5000 }, true).main.perClient).to.equal(5000);
  });

  it('a setting past what the limit allows is brought down, with a warning', () => {
    const b = deriveBounds(1024, { ...defaults, maxConnections: 5000, fdReserve: 1000 }, false);
    expect(b.reserve).to.equal(768);
    expect(b.main.maxConnections).to.equal(256);
    expect(b.warnings).to.have.length(2);
  });

  it('counts IPv4 peers by address and IPv6 peers by their /64', () => {
    expect(clientKey('127.0.0.1')).to.equal('127.0.0.1');
    expect(clientKey('::ffff:10.1.2.3')).to.equal('10.1.2.3');
    expect(clientKey('2001:db8:0:1::5')).to.equal(clientKey('2001:0db8:0000:0001:ffff:1:2:3'));
    expect(clientKey('2001:db8:0:1::5')).to.equal('2001:db8:0:1::/64');
    expect(clientKey('::1')).to.equal('0:0:0:0::/64');
    expect(clientKey('2001:db8:0:2::5')).to.not.equal(clientKey('2001:db8:0:1::5'));
  });

  it('admits a client up to its bound and again once a connection left', () => {
    const c = new ClientCounts();
    expect([c.admit('a', 2), c.admit('a', 2), c.admit('a', 2), c.admit('b', 2)]).to.deep.equal([true, true, false, true]);
    c.leave('a');
    expect(c.admit('a', 2)).to.equal(true);
    expect(c.admit('z', 0)).to.equal(true); // 0: no bound
  });

  it('counts every refusal and logs one line per reason per interval', () => {
    let now = 0;
    const counted: string[] = [];
    const lines: unknown[] = [];
    const r = new Refusals({ metrics: { refused: (reason) => counted.push(reason) }, logger: { ...silentLogger, warn: (_m, f) => lines.push(f) }, now: () => now });
    for (let i = 0; i < 1000; i++) r.refused('connections_per_client', 'refused');
    now += 10_000;
    r.refused('connections_per_client', 'refused');
    expect(counted).to.have.length(1001);
    expect(lines).to.deep.equal([{ reason: 'connections_per_client', refused_since_last_line: 1 }, { reason: 'connections_per_client', refused_since_last_line: 1000 }]);
  });
});

describe('gateway resources: the body memory budget', () => {
  it('leases what a body declares, grows a chunked one, refuses past the budget and takes it back once', () => {
    const budget = new BodyBudget(100);
    const a = budget.lease(60)!;
    expect(budget.lease(50)).to.equal(undefined);
    const b = budget.lease(0)!;
    expect(b.cover(30)).to.equal(true);
    expect(b.cover(41)).to.equal(false);
    expect(budget.used).to.equal(90);
    a.release();
    a.release();
    expect(budget.used).to.equal(30);
    b.release();
    expect(budget.used).to.equal(0);
  });
});
