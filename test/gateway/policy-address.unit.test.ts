import { expect } from 'chai';
import { canonicalCidr, canonicalHost, isLoopbackClass, canonicalIp } from '../../gateway/src/policy/address.ts';
import { decide, isProtectedHost, patternMatches } from '../../gateway/src/policy/match.ts';

// Every spelling of an address that the URL parser or a resolver can give
// the runtime's policy check, and what the matcher compares it as.
const SPELLINGS: Array<[string, string]> = [
  ['127.0.0.1', '127.0.0.1'],
  ['127.1', '127.0.0.1'],
  ['0x7f.1', '127.0.0.1'],
  ['0x7F.0.0.1', '127.0.0.1'],
  ['0177.0.0.1', '127.0.0.1'],
  ['2130706433', '127.0.0.1'],
  ['0x7f000001', '127.0.0.1'],
  ['::ffff:127.0.0.1', '127.0.0.1'],
  ['[::ffff:7f00:1]', '127.0.0.1'],
  ['0:0:0:0:0:FFFF:7F00:0001', '127.0.0.1'],
  ['::127.0.0.1', '127.0.0.1'],
  ['::7f00:1', '127.0.0.1'],
  ['::ffff:0:7f00:1', '127.0.0.1'],
  ['64:ff9b::7f00:1', '127.0.0.1'],
  ['::ffff:169.254.169.254', '169.254.169.254'],
  ['0.0.0.0', '0.0.0.0'],
  ['0', '0.0.0.0'],
  ['::', '::'],
  ['0:0:0:0:0:0:0:0', '::'],
  ['::1', '::1'],
  ['[0:0:0:0:0:0:0:1]', '::1'],
  ['fe80::1%eth0', 'fe80::1'],
  ['2001:DB8:0:0:0:0:0:1', '2001:db8::1'],
  ['Example.COM.', 'example.com'],
  ['localhost', 'localhost'],
];

describe('policy address canonicaliser', () => {
  for (const [spelling, canonical] of SPELLINGS) {
    it(`${spelling} is compared as ${canonical}`, () => {
      expect(canonicalHost(spelling)).to.equal(canonical);
    });
  }

  it('puts 0.0.0.0/8, 127.0.0.0/8, :: and ::1 in the loopback class, and nothing else', () => {
    for (const host of ['0.0.0.0', '0.1.2.3', '127.0.0.1', '127.255.0.9', '::', '::1', '::ffff:127.0.0.1', '[::ffff:0.0.0.0]']) expect(isLoopbackClass(canonicalIp(host)!), host).to.equal(true);
    for (const host of ['10.0.0.1', '128.0.0.1', '1.0.0.0', 'fe80::1', '2001:db8::1']) expect(isLoopbackClass(canonicalIp(host)!), host).to.equal(false);
  });

  it('turns an IPv6 CIDR inside ::ffff:0:0/96 into the IPv4 CIDR it covers', () => {
    expect(canonicalCidr('::ffff:127.0.0.0/104')!.map(String)).to.deep.equal(['127.0.0.0', '8']);
    expect(canonicalCidr('::ffff:0:0/96')!.map(String)).to.deep.equal(['0.0.0.0', '0']);
    expect(canonicalCidr('10.0.0.0/8')!.map(String)).to.deep.equal(['10.0.0.0', '8']);
    expect(canonicalCidr('fd00::/8')!.map(String)).to.deep.equal(['fd00::', '8']);
  });
});

describe('policy matching on canonical addresses', () => {
  const denyLoopback = { default: 'allow' as const, allow: [], deny: ['127.0.0.0/8'] };

  for (const [spelling] of SPELLINGS.filter(([, c]) => c === '127.0.0.1' || c === '0.0.0.0' || c === '::' || c === '::1')) {
    it(`a global deny of 127.0.0.0/8 denies ${spelling}`, () => {
      expect(decide(spelling, denyLoopback, null)).to.deep.equal({ allowed: false, rule: '127.0.0.0/8', scope: 'global' });
    });
  }

  it('a deny of ::1 or 0.0.0.0 denies the IPv4 loopback; a deny of one other address does not spread', () => {
    expect(decide('127.0.0.1', { default: 'allow', allow: [], deny: ['::1'] }, null).allowed).to.equal(false);
    expect(decide('127.0.0.5', { default: 'allow', allow: [], deny: ['0.0.0.0'] }, null).allowed).to.equal(false);
    expect(decide('127.0.0.1', { default: 'allow', allow: ['127.0.0.1'], deny: ['127.0.0.2'] }, null).allowed).to.equal(true);
    expect(decide('10.0.0.1', { default: 'allow', allow: [], deny: ['127.0.0.0/8'] }, null).allowed).to.equal(true);
  });

  it('an allow matches the destination exactly: allowing 127.0.0.0/8 in a deny-by-default policy does not allow ::1 or 0.0.0.0', () => {
    const policy = { default: 'deny' as const, allow: ['127.0.0.0/8'], deny: [] };
    expect(decide('[::ffff:7f00:1]', policy, null).allowed).to.equal(true);
    expect(decide('::1', policy, null).allowed).to.equal(false);
    expect(decide('0.0.0.0', policy, null).allowed).to.equal(false);
  });

  it('patterns written in another spelling match the canonical host', () => {
    expect(patternMatches('::ffff:127.0.0.1', '127.0.0.1')).to.equal(true);
    expect(patternMatches('::ffff:7f00:0/104', '127.9.9.9')).to.equal(true);
    expect(patternMatches('127.0.0.1', '[::ffff:7f00:1]')).to.equal(true);
    expect(patternMatches('10.0.0.0/8', '::ffff:10.1.2.3')).to.equal(true);
    expect(patternMatches('::/0', '127.0.0.1')).to.equal(false);
    expect(patternMatches('example.com', '127.0.0.1')).to.equal(false);
  });

  it('protects link-local and metadata addresses in every spelling', () => {
    for (const host of ['169.254.169.254', '::ffff:169.254.169.254', '[::ffff:a9fe:a9fe]', '0xa9fea9fe', '2852039166', 'fe80::1%eth0', 'fd00:ec2::254', 'metadata.google.internal.']) {
      expect(isProtectedHost(host), host).to.equal(true);
    }
    expect(isProtectedHost('::ffff:10.0.0.1')).to.equal(false);
  });
});
