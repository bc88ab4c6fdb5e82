import { expect } from 'chai';
import type { NetworkPolicy } from '@fnhost/core';
import { PlatformRanges, decide, isProtectedHost, patternMatches, validatePattern, validatePolicy } from '../../gateway/src/policy/match.ts';

const policy = (p: Partial<NetworkPolicy>): NetworkPolicy => ({ default: 'allow', allow: [], deny: [], ...p });

describe('gateway policy matching', () => {
  it('matches exact hosts, wildcards (subdomains only), IPs and CIDRs', () => {
    expect(patternMatches('example.com', 'example.com')).to.equal(true);
    expect(patternMatches('example.com', 'EXAMPLE.com.')).to.equal(true);
    expect(patternMatches('example.com', 'api.example.com')).to.equal(false);
    expect(patternMatches('*.example.com', 'api.example.com')).to.equal(true);
    expect(patternMatches('*.example.com', 'a.b.example.com')).to.equal(true);
    expect(patternMatches('*.example.com', 'example.com')).to.equal(false);
    expect(patternMatches('*.example.com', 'badexample.com')).to.equal(false);
    expect(patternMatches('10.0.0.0/8', '10.2.3.4')).to.equal(true);
    expect(patternMatches('10.0.0.0/8', '11.2.3.4')).to.equal(false);
    expect(patternMatches('10.0.0.0/8', 'ten.example')).to.equal(false);
    expect(patternMatches('fd00::/8', 'fd12::1')).to.equal(true);
    expect(patternMatches('fd00::/8', '[fd12::1]')).to.equal(true);
    expect(patternMatches('127.0.0.1', '127.0.0.1')).to.equal(true);
    expect(patternMatches('::1', '0:0:0:0:0:0:0:1')).to.equal(true);
    expect(patternMatches('*', 'anything.example')).to.equal(true);
  });

  it('rejects malformed patterns naming them', () => {
    expect(() => validatePattern('10.0.0.0/33')).to.throw(/10\.0\.0\.0\/33/);
    expect(() => validatePattern('exa mple.com')).to.throw(/exa mple\.com/);
    expect(() => validatePattern('-bad.com')).to.throw(/-bad\.com/);
    expect(() => validatePattern('')).to.throw(/pattern/);
    expect(validatePattern('*.Example.COM')).to.equal('*.example.com');
    expect(() => validatePolicy({ default: 'maybe' })).to.throw(/"maybe"/);
    expect(() => validatePolicy({ default: 'deny', allow: 'x' })).to.throw(/allow must be an array/);
    expect(() => validatePolicy({ default: 'deny', other: [] })).to.throw(/unknown field "other"/);
    expect(validatePolicy({ default: 'deny', allow: ['a.com'] })).to.deep.equal({ default: 'deny', allow: ['a.com'], deny: [] });
  });

  it('applies function deny > function allow > global deny > global allow > default', () => {
    const global = policy({ default: 'deny', allow: ['*.example.com'], deny: ['bad.example.com'] });
    expect(decide('api.example.com', global, null)).to.deep.equal({ allowed: true, rule: '*.example.com', scope: 'global' });
    expect(decide('bad.example.com', global, null)).to.deep.equal({ allowed: false, rule: 'bad.example.com', scope: 'global' });
    expect(decide('other.org', global, null)).to.deep.equal({ allowed: false, rule: 'default', scope: 'global' });
    // function allow beats global deny
    const fnAllow = policy({ default: 'deny', allow: ['bad.example.com'] });
    expect(decide('bad.example.com', global, fnAllow)).to.deep.equal({ allowed: true, rule: 'bad.example.com', scope: 'function' });
    // function deny beats everything
    const fnDeny = policy({ deny: ['api.example.com'], allow: ['api.example.com'] });
    expect(decide('api.example.com', global, fnDeny)).to.deep.equal({ allowed: false, rule: 'api.example.com', scope: 'function' });
    // a function policy's default applies before the global default
    expect(decide('other.org', global, policy({ default: 'allow' }))).to.deep.equal({ allowed: true, rule: 'default', scope: 'function' });
    // no policy at all: allow
    expect(decide('other.org', null, null)).to.deep.equal({ allowed: true, rule: 'default', scope: 'global' });
  });

  it('denies link-local and cloud-metadata addresses unless a specific allow names them', () => {
    for (const host of ['169.254.169.254', '169.254.1.1', 'fe80::1', 'fd00:ec2::254', 'metadata.google.internal', '::ffff:169.254.169.254', '[fe80::2]']) {
      expect(isProtectedHost(host), host).to.equal(true);
      expect(decide(host, null, null).allowed, host).to.equal(false);
      expect(decide(host, policy({ allow: ['*', '0.0.0.0/0', '::/0'] }), null).allowed, host).to.equal(false);
    }
    expect(isProtectedHost('8.8.8.8')).to.equal(false);
    expect(decide('169.254.169.254', policy({ allow: ['169.254.169.254'] }), null)).to.deep.equal({ allowed: true, rule: '169.254.169.254', scope: 'global' });
    expect(decide('169.254.169.254', null, policy({ allow: ['169.254.0.0/16'] })).allowed).to.equal(true);
  });
});

describe('gateway policy matching: the platform ranges (FNHOST_EGRESS_PLATFORM_CIDRS)', () => {
  const platform = new PlatformRanges(['10.244.0.0/24', '10.96.0.0/16', 'fd00:10::1']);

  it('denies an address in them under the rule "platform", even when the policies allow everything', () => {
    const allowAll: NetworkPolicy = { default: 'allow', allow: ['*', '0.0.0.0/0'], deny: [] };
    expect(decide('10.244.0.1', allowAll, allowAll, platform)).to.deep.equal({ allowed: false, rule: 'platform', scope: 'global' });
    expect(decide('10.96.0.1', null, null, platform)).to.deep.equal({ allowed: false, rule: 'platform', scope: 'global' });
    expect(decide('fd00:10::1', null, null, platform)).to.deep.equal({ allowed: false, rule: 'platform', scope: 'global' });
    // Another spelling of the same address is the same address.
    expect(decide('::ffff:10.244.0.9', null, null, platform).allowed).to.equal(false);
  });

  it('allows one when an allow pattern names it specifically, and leaves other addresses alone', () => {
    const named: NetworkPolicy = { default: 'deny', allow: ['10.244.0.7'], deny: [] };
    expect(decide('10.244.0.7', null, named, platform)).to.deep.equal({ allowed: true, rule: '10.244.0.7', scope: 'function' });
    expect(decide('10.244.0.8', null, named, platform).rule).to.equal('platform');
    expect(decide('192.0.2.10', null, null, platform)).to.deep.equal({ allowed: true, rule: 'default', scope: 'global' });
    expect(decide('10.244.0.1', null, null)).to.deep.equal({ allowed: true, rule: 'default', scope: 'global' });
  });

  it('refuses a range that is not a CIDR or an address', () => {
    expect(() => new PlatformRanges(['10.0.0.0/33'])).to.throw(/"10.0.0.0\/33" is not a CIDR or an IP address/);
    expect(() => new PlatformRanges(['cluster.local'])).to.throw(/not a CIDR/);
  });
});
