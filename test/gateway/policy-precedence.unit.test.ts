import { expect } from 'chai';
import type { NetworkPolicy } from '@fnhost/core';
import { decisionOf, explain, type Policies } from '../../gateway/src/egress/decision.ts';
import { MachineAddresses, MachineProtection } from '../../gateway/src/policy/machine.ts';
import { PlatformRanges } from '../../gateway/src/policy/match.ts';

// The precedence table of docs/gateway.md "Network policies", one row per example there, run
// through the pure decision the egress proxy and `policy:check` use (explain). Keep the two in
// step: a row added there gets its line here.

const p = (x: Partial<NetworkPolicy>): NetworkPolicy => ({ default: 'allow', allow: [], deny: [], ...x });
// The machine of these examples: one interface address besides loopback; the platform's ranges of a cluster.
const machine = new MachineProtection(['127.0.0.1', '::1', '192.0.2.10'], new PlatformRanges(['10.96.0.0/12']));
const ADMIN_PORT = 8081;

interface Row {
  row: string;
  global?: Partial<NetworkPolicy>;
  fn?: Partial<NetworkPolicy>;
  host: string;
  port?: number;
  /** What the name resolves to (a name only). */
  resolves?: string[];
  answer: 'allowed' | 'denied';
  scope: 'global' | 'function';
  rule: string;
  subject?: string;
}

const TABLE: Row[] = [
  { row: '1 function deny', global: { allow: ['*'] }, fn: { deny: ['evil.example'] }, host: 'evil.example', answer: 'denied', scope: 'function', rule: 'evil.example' },
  { row: '2 function allow', global: { deny: ['10.0.0.0/8'] }, fn: { allow: ['10.1.2.3'] }, host: '10.1.2.3', answer: 'allowed', scope: 'function', rule: '10.1.2.3' },
  { row: '3 global deny, of one port', global: { deny: ['mail.example:25'] }, host: 'mail.example', port: 25, resolves: ['203.0.113.25'], answer: 'denied', scope: 'global', rule: 'mail.example:25' },
  { row: '3 global deny, of one port: other ports pass', global: { deny: ['mail.example:25'] }, host: 'mail.example', port: 443, resolves: ['203.0.113.25'], answer: 'allowed', scope: 'global', rule: 'default' },
  { row: '3 global deny', global: { deny: ['*.ads.example'] }, host: 'x.ads.example', answer: 'denied', scope: 'global', rule: '*.ads.example' },
  { row: '4 global allow', global: { default: 'deny', allow: ['api.example'] }, host: 'api.example', resolves: ['203.0.113.80'], answer: 'allowed', scope: 'global', rule: 'api.example' },
  { row: '5 the machine: loopback', host: '127.0.0.1', answer: 'denied', scope: 'global', rule: 'host' },
  { row: '5 the machine: an IPv4-mapped spelling', host: '::ffff:127.0.0.1', answer: 'denied', scope: 'global', rule: 'host' },
  { row: '5 the machine: an interface address', host: '192.0.2.10', answer: 'denied', scope: 'global', rule: 'host' },
  { row: '5 the machine: a catch-all does not open it', global: { allow: ['*', '0.0.0.0/0'] }, host: '127.0.0.1', answer: 'denied', scope: 'global', rule: 'host' },
  { row: '5 the machine: an allow naming it opens it', global: { allow: ['127.0.0.1'] }, host: '127.0.0.1', port: 3000, answer: 'allowed', scope: 'global', rule: '127.0.0.1' },
  { row: '5 the machine: a port narrows the allow (that port)', global: { allow: ['127.0.0.1:3000'] }, host: '127.0.0.1', port: 3000, answer: 'allowed', scope: 'global', rule: '127.0.0.1:3000' },
  { row: '5 the machine: a port narrows the allow (another port)', global: { allow: ['127.0.0.1:3000'] }, host: '127.0.0.1', port: 5432, answer: 'denied', scope: 'global', rule: 'host' },
  { row: '5 the machine: never its platform listeners', global: { allow: ['127.0.0.1'] }, host: '127.0.0.1', port: ADMIN_PORT, answer: 'denied', scope: 'global', rule: 'listener' },
  { row: '6 link-local and metadata', global: { allow: ['0.0.0.0/0'] }, host: '169.254.169.254', answer: 'denied', scope: 'global', rule: 'protected' },
  { row: '7 the platform\'s ranges', host: '10.96.0.1', answer: 'denied', scope: 'global', rule: 'platform' },
  { row: '8 function default', global: { default: 'allow' }, fn: { default: 'deny' }, host: 'other.example', answer: 'denied', scope: 'function', rule: 'default' },
  { row: '9 global default', global: { default: 'deny' }, host: 'other.example', answer: 'denied', scope: 'global', rule: 'default' },
  { row: '9 global default, no policy at all', host: 'other.example', resolves: ['203.0.113.9'], answer: 'allowed', scope: 'global', rule: 'default' },
  // How a name's addresses are decided.
  { row: 'a name: its addresses take its allow', fn: { default: 'deny', allow: ['*.api.example'] }, host: 'eu.api.example', resolves: ['203.0.113.80', '2001:db8::80'], answer: 'allowed', scope: 'function', rule: '*.api.example' },
  { row: 'a name: a deny rule on an address refuses it', global: { default: 'deny', allow: ['db.example'], deny: ['10.0.0.0/8'] }, host: 'db.example', resolves: ['203.0.113.5', '10.0.0.5'], answer: 'denied', scope: 'global', rule: '10.0.0.0/8', subject: '10.0.0.5' },
  { row: 'a name: a global deny on an address holds against a function allow of the name', global: { deny: ['10.0.0.0/8'] }, fn: { default: 'deny', allow: ['db.example'] }, host: 'db.example', resolves: ['10.0.0.5'], answer: 'denied', scope: 'global', rule: '10.0.0.0/8', subject: '10.0.0.5' },
  { row: 'a name: a protected address is not opened by a name', global: { default: 'deny', allow: ['localhost', 'rebind.example'] }, host: 'rebind.example', resolves: ['127.0.0.1'], answer: 'denied', scope: 'global', rule: 'host', subject: '127.0.0.1' },
  { row: 'a name allowed on one port: that port', global: { default: 'deny', allow: ['api.example:443'] }, host: 'api.example', port: 443, resolves: ['203.0.113.80'], answer: 'allowed', scope: 'global', rule: 'api.example:443' },
  { row: 'a name allowed on one port: another port', global: { default: 'deny', allow: ['api.example:443'] }, host: 'api.example', port: 80, answer: 'denied', scope: 'global', rule: 'default' },
  { row: 'a name: an address allowed on its own stays allowed', global: { default: 'deny', allow: ['db.example', '10.0.0.0/8'] }, host: 'db.example', resolves: ['10.0.0.5'], answer: 'allowed', scope: 'global', rule: 'db.example' },
];

describe('network policies: the precedence table of docs/gateway.md, row by row', () => {
  for (const r of TABLE) {
    it(`${r.row}: ${r.host}${r.port === undefined ? '' : `:${r.port}`} is ${r.answer} (${r.scope} rule ${r.rule})`, () => {
      const policies: Policies = { global: r.global === undefined ? null : p(r.global), fn: r.fn === undefined ? null : p(r.fn), platform: machine };
      const e = explain(r.host, r.resolves, policies, { port: r.port ?? 443, isMachine: (a) => machine.isMachine(a), ports: [ADMIN_PORT] });
      expect({ allowed: e.allowed, scope: e.scope, rule: e.rule }).to.deep.equal({ allowed: r.answer === 'allowed', scope: r.scope, rule: r.rule });
      if (r.subject !== undefined) expect(e.subject).to.equal(r.subject);
      if (r.resolves !== undefined && e.name?.allowed !== false) expect(e.addresses.map((a) => a.address)).to.deep.equal(r.resolves);
    });
  }
});

describe('patterns with a port', () => {
  it('a DNS question (no port) may resolve a name allowed on one port, and is not refused by a deny of one port', () => {
    const policies: Policies = { global: p({ default: 'deny', allow: ['api.example:443'], deny: ['mail.example:25'] }), fn: null };
    expect(decisionOf('api.example', policies).allowed).to.equal(true);
    expect(decisionOf('mail.example', policies)).to.deep.equal({ allowed: false, scope: 'global', rule: 'default' });
    expect(decisionOf('mail.example', { ...policies, global: p({ deny: ['mail.example:25'] }) }).allowed).to.equal(true);
  });
});

describe('the machine\'s own addresses, kept current', () => {
  it('reads the interfaces again once the reading is older than the refresh, and keeps one object while nothing changed', () => {
    let t = 0;
    let addresses = ['192.0.2.10'];
    const m = new MachineAddresses({ now: () => t, interfaces: () => ({ eth0: addresses.map((address) => ({ address, netmask: '255.255.255.0', family: 'IPv4', mac: '00:00:00:00:00:00', internal: false, cidr: null })) }) as never, extra: ['198.51.100.7'] });
    const first = m.current();
    expect(first.ruleFor('192.0.2.10')).to.equal('host');
    expect(first.ruleFor('198.51.100.7'), 'the node address').to.equal('host');
    expect(first.ruleFor('192.0.2.11')).to.equal(undefined);
    addresses = ['192.0.2.10', '192.0.2.11'];
    expect(m.current(), 'within the refresh: the last reading').to.equal(first);
    t += 5_000;
    const second = m.current();
    expect(second).to.not.equal(first);
    expect(second.ruleFor('192.0.2.11')).to.equal('host');
    t += 5_000;
    expect(m.current(), 'nothing changed: the same object (a key of the remembered decisions)').to.equal(second);
  });
});
