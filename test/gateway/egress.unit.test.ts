import { expect } from 'chai';
import { MAX_DECISIONS_PER_POLICY, deniedAddress, denialMessage, denialOf } from '../../gateway/src/egress/decision.ts';
import { TargetError, parseConnectTarget, proxyCredential } from '../../gateway/src/egress/target.ts';

describe('egress proxy: CONNECT targets', () => {
  it('takes host:port, lower-cases names and drops a trailing dot', () => {
    expect(parseConnectTarget('Example.COM.:443')).to.deep.equal({ host: 'example.com', port: 443 });
    expect(parseConnectTarget('10.0.0.5:5432')).to.deep.equal({ host: '10.0.0.5', port: 5432 });
    expect(parseConnectTarget('_mongodb._tcp.cluster.test:27017')).to.deep.equal({ host: '_mongodb._tcp.cluster.test', port: 27017 });
  });

  it('takes [IPv6]:port', () => {
    expect(parseConnectTarget('[::1]:8080')).to.deep.equal({ host: '::1', port: 8080 });
    expect(parseConnectTarget('[fe80::1]:1')).to.deep.equal({ host: 'fe80::1', port: 1 });
  });

  it('refuses what is not host:port with port 1-65535, naming the value', () => {
    const cases: Array<[string | undefined, RegExp]> = [
      [undefined, /needs a target host:port/],
      ['', /needs a target host:port/],
      ['example.com', /must be host:port/],
      [':80', /must be host:port/],
      ['example.com:0', /port 0 is out of range 1-65535/],
      ['example.com:65536', /port 65536 is out of range/],
      ['example.com:http', /the port must be a number/],
      ['example.com:-1', /the port must be a number/],
      ['example.com:123456', /the port must be a number/],
      ['::1:80', /write an IPv6 address in brackets/],
      ['[::1]80', /must be \[IPv6\]:port/],
      ['[example.com]:80', /is not an IPv6 address/],
      ['exa mple.com:80', /is not a host name/],
      ['a..b:80', /is not a host name/],
      ['-a.b:80', /is not a host name/],
      ['x'.repeat(64) + '.com:80', /is not a host name/],
      ['user@host:80', /is not a host name/],
      ['host\r\nx-y:80', /is not a host name/],
    ];
    for (const [raw, message] of cases) {
      expect(() => parseConnectTarget(raw), String(raw)).to.throw(TargetError, message);
    }
  });

  it('cuts a long bad value in its message', () => {
    expect(() => parseConnectTarget('a'.repeat(5000))).to.throw(TargetError).with.property('message').that.has.length.below(200);
  });
});

describe('egress proxy: Proxy-Authorization', () => {
  it('reads Bearer and the password of Basic', () => {
    expect(proxyCredential('Bearer abc.def')).to.equal('abc.def');
    expect(proxyCredential('bearer   abc.def ')).to.equal('abc.def');
    expect(proxyCredential('Basic ' + Buffer.from('fn:abc.def').toString('base64'))).to.equal('abc.def');
    expect(proxyCredential('Basic ' + Buffer.from(':abc:def').toString('base64'))).to.equal('abc:def');
  });

  it('gives nothing for an absent, empty or unknown credential', () => {
    for (const h of [undefined, '', 'Bearer', 'Bearer ', 'Token abc', 'Basic ' + Buffer.from('nopassword').toString('base64'), 'Basic ' + Buffer.from('user:').toString('base64')]) {
      expect(proxyCredential(h), String(h)).to.equal(undefined);
    }
  });
});

describe('egress proxy: what the policies are asked', () => {
  const policies = {
    global: { default: 'allow' as const, allow: [], deny: ['10.0.0.0/8', '*.internal.example'] },
    fn: { default: 'allow' as const, allow: ['db.internal.example', '10.1.2.3'], deny: ['evil.example'] },
  };

  it('a name or address: the deciding rule and scope, or nothing when allowed', () => {
    expect(denialOf('evil.example', policies)).to.deep.equal({ scope: 'function', rule: 'evil.example', subject: 'evil.example' });
    expect(denialOf('cache.internal.example', policies)).to.deep.equal({ scope: 'global', rule: '*.internal.example', subject: 'cache.internal.example' });
    expect(denialOf('db.internal.example', policies)).to.equal(undefined);
    expect(denialOf('169.254.169.254', policies)).to.deep.equal({ scope: 'global', rule: 'protected', subject: '169.254.169.254' });
  });

  it('a decision is remembered for its policies only: a changed policy (a new object, as PolicyCache stores a write) decides again', () => {
    const global = { default: 'allow' as const, allow: [], deny: ['10.0.0.0/8'] };
    const before = { global, fn: null };
    expect(denialOf('10.0.0.7', before)).to.deep.equal({ scope: 'global', rule: '10.0.0.0/8', subject: '10.0.0.7' });
    expect(denialOf('127.0.0.1', before), 'the machine is protected with no allow').to.deep.equal({ scope: 'global', rule: 'host', subject: '127.0.0.1' });
    const opened = { global: { ...global, allow: ['127.0.0.1'] }, fn: null };
    expect(denialOf('127.0.0.1', opened), 'an allow naming it opens it').to.equal(undefined);
    const loopbackDenied = { global, fn: { default: 'allow' as const, allow: [], deny: ['127.0.0.0/8'] } };
    expect(denialOf('127.0.0.1', loopbackDenied)).to.deep.equal({ scope: 'function', rule: '127.0.0.0/8', subject: '127.0.0.1' });
    expect(denialOf('::1', loopbackDenied), 'the loopback class').to.deep.equal({ scope: 'function', rule: '127.0.0.0/8', subject: '::1' });
    const globalChanged = { global: { default: 'deny' as const, allow: [], deny: [] }, fn: null };
    expect(denialOf('192.0.2.7', globalChanged)).to.deep.equal({ scope: 'global', rule: 'default', subject: '192.0.2.7' });
    expect(denialOf('192.0.2.7', before), 'the first policies still decide as they did').to.equal(undefined);
    expect(denialOf('127.0.0.1', opened), 'and so do the opened ones').to.equal(undefined);
    // Past the bound the remembered decisions start over, and still answer right.
    for (let i = 0; i <= MAX_DECISIONS_PER_POLICY; i++) denialOf(`10.${(i >> 8) & 255}.${i & 255}.1`, before);
    expect(denialOf('10.0.0.7', before)).to.deep.equal({ scope: 'global', rule: '10.0.0.0/8', subject: '10.0.0.7' });
    expect(denialOf('192.0.2.1', before)).to.equal(undefined);
  });

  it('one denied address among those a name resolves to denies it', () => {
    expect(deniedAddress(['93.184.216.34', '10.9.9.9'], policies)).to.deep.equal({ scope: 'global', rule: '10.0.0.0/8', subject: '10.9.9.9' });
    expect(deniedAddress(['10.1.2.3', '93.184.216.34'], policies)).to.equal(undefined);
    expect(deniedAddress([], policies)).to.equal(undefined);
  });

  it('the message names the target, the address when it was the address, and the rule', () => {
    expect(denialMessage('connection to evil.example:443', 'evil.example', denialOf('evil.example', policies)!)).to.equal('connection to evil.example:443 blocked by network policy (function rule evil.example)');
    expect(denialMessage('connection to db.example:5432', 'db.example', deniedAddress(['10.9.9.9'], policies)!)).to.equal('connection to db.example:5432 blocked by network policy: it resolves to 10.9.9.9 (global rule 10.0.0.0/8)');
  });
});
