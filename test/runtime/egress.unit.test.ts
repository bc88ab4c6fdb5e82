import { expect } from 'chai';
import { EgressError, PolicyBlockedError, connectRequest, connectTarget, directOf, parseAnswerHead, parseEgressProxy, refusalError, repeatable, tlsArgs, withSystemLookup } from '../../runtime-image/src/egress.ts';

describe('runtime egress: settings', () => {
  it('FNHOST_EGRESS_PROXY is unix:/path or http://host:port', () => {
    expect(parseEgressProxy('unix:/data/egress.sock')).to.deep.equal({ path: '/data/egress.sock' });
    expect(parseEgressProxy('http://fnhost-gateway.fnhost-system.svc:3128')).to.deep.equal({ host: 'fnhost-gateway.fnhost-system.svc', port: 3128 });
    expect(parseEgressProxy('http://[::1]:3128')).to.deep.equal({ host: '::1', port: 3128 });
    for (const bad of ['unix:relative.sock', 'https://gw:3128', 'http://gw', 'http://gw:3128/path', 'gw:3128', '']) {
      expect(() => parseEgressProxy(bad), bad).to.throw(TypeError, /FNHOST_EGRESS_PROXY/);
    }
  });

  it('the internal API origin is reached directly', () => {
    expect(directOf('http://127.0.0.1:8080')).to.deep.equal([{ host: '127.0.0.1', port: 8080 }]);
    expect(directOf('https://GW.example')).to.deep.equal([{ host: 'gw.example', port: 443 }]);
    expect(directOf(undefined)).to.deep.equal([]);
  });
});

describe('runtime egress: which connections are tunnelled', () => {
  const cb = () => undefined;
  it('reads every form of Socket#connect arguments', () => {
    expect(connectTarget([5432, 'db.example', cb])).to.deep.equal({ target: { host: 'db.example', port: 5432 }, callback: cb });
    expect(connectTarget([5432])).to.deep.equal({ target: { host: 'localhost', port: 5432 }, callback: undefined });
    expect(connectTarget(['5432', cb])).to.deep.equal({ target: { host: 'localhost', port: 5432 }, callback: cb });
    expect(connectTarget([{ host: '::1', port: 80 }, cb])).to.deep.equal({ target: { host: '::1', port: 80 }, callback: cb });
    // net.connect hands over its normalised [options, callback] as one array; http passes path: null.
    expect(connectTarget([[{ host: 'a.example', port: 443, path: null }, null]])).to.deep.equal({ target: { host: 'a.example', port: 443 }, callback: undefined });
  });

  it('leaves IPC paths and arguments net itself refuses to the original connect', () => {
    expect(connectTarget(['/run/x.sock'])).to.equal(undefined);
    expect(connectTarget([{ path: '/run/x.sock' }])).to.equal(undefined);
    expect(connectTarget([{ host: 'a', port: 0 }])).to.equal(undefined);
    expect(connectTarget([{ host: 'a', port: 70000 }])).to.equal(undefined);
    expect(connectTarget([{ host: 'a' }])).to.equal(undefined);
  });

  it('reads tls.connect arguments', () => {
    expect(tlsArgs([443, 'a.example', { ca: 'x' }, cb])).to.deep.equal({ options: { ca: 'x', port: 443, host: 'a.example' }, callback: cb });
    expect(tlsArgs([{ host: 'a.example', port: 8443 }])).to.deep.equal({ options: { host: 'a.example', port: 8443 }, callback: undefined });
  });
});

describe('runtime egress: the CONNECT exchange', () => {
  it('writes CONNECT with the credential; IPv6 in brackets; refuses a host that could inject headers', () => {
    expect(connectRequest({ host: 'db.example', port: 5432 }, 'tok')).to.equal('CONNECT db.example:5432 HTTP/1.1\r\nhost: db.example:5432\r\nproxy-authorization: Bearer tok\r\n\r\n');
    expect(connectRequest({ host: '::1', port: 80 }, 'tok')).to.match(/^CONNECT \[::1\]:80 HTTP\/1\.1\r\n/);
    expect(() => connectRequest({ host: 'a\r\nx-evil: 1', port: 80 }, 'tok')).to.throw(TypeError, /not a host name/);
  });

  it('turns a 403 into PolicyBlockedError with its rule, anything else into EgressError with the code', () => {
    const denied = parseAnswerHead('HTTP/1.1 403 Forbidden\r\nx-fnhost-error: connection%20to%20a%3A1%20blocked\r\nx-fnhost-policy-scope: function\r\nx-fnhost-policy-rule: *.a\r\nx-fnhost-error-code: policy_denied');
    const err = refusalError(denied.status, denied.header);
    expect(err).to.be.instanceOf(PolicyBlockedError).and.include({ message: 'connection to a:1 blocked', scope: 'function', rule: '*.a', code: 'ERR_FNHOST_POLICY_BLOCKED' });
    const refused = parseAnswerHead('HTTP/1.1 502 Bad Gateway\r\nx-fnhost-error: connection%20failed%3A%20ECONNREFUSED\r\nx-fnhost-error-code: ECONNREFUSED');
    expect(refusalError(refused.status, refused.header)).to.be.instanceOf(EgressError).and.include({ message: 'connection failed: ECONNREFUSED', code: 'ECONNREFUSED' });
    expect(parseAnswerHead('HTTP/1.0 200 Connection Established').status).to.equal(200);
    expect(parseAnswerHead('SSH-2.0-OpenSSH').status).to.equal(0);
  });
});

describe('runtime egress: which fetches are sent again after a pooled connection ended', () => {
  it('idempotent methods without a body only', () => {
    expect(repeatable('http://a/')).to.equal(true);
    expect(repeatable('http://a/', { method: 'delete' })).to.equal(true);
    expect(repeatable('http://a/', { method: 'POST' })).to.equal(false);
    expect(repeatable('http://a/', { method: 'PUT', body: 'x' })).to.equal(false);
    expect(repeatable(new Request('http://a/', { method: 'PUT', body: 'x' }))).to.equal(false);
    expect(repeatable(new Request('http://a/', { method: 'HEAD' }))).to.equal(true);
  });
});

describe('runtime egress: destinations reached without the proxy use the system resolver', () => {
  const systemLookup = process.getBuiltinModule('node:dns').lookup;

  it('gives every connect() form the system lookup (the pod has no DNS; its /etc/hosts names the gateway)', () => {
    const cb = () => {};
    const [options, callback] = withSystemLookup([{ host: 'gw.fnhost.svc', port: 8080 }, cb]) as [Record<string, unknown>, unknown];
    expect(options).to.include({ host: 'gw.fnhost.svc', port: 8080, lookup: systemLookup });
    expect(callback).to.equal(cb);
    expect(withSystemLookup([8090, 'gw.fnhost.svc', cb])).to.deep.equal([{ port: 8090, host: 'gw.fnhost.svc', lookup: systemLookup }, cb]);
    expect(withSystemLookup(['8090'])).to.deep.equal([{ port: 8090, lookup: systemLookup }]);
    // net.connect's normalised [options, callback]: its own options object gets the lookup.
    const normalised = [{ host: 'gw.fnhost.svc', port: 8080, path: null }, null];
    expect(withSystemLookup([normalised])[0]).to.equal(normalised);
    expect(normalised[0]).to.have.property('lookup', systemLookup);
  });

  it('leaves a caller-given lookup and Unix socket paths alone', () => {
    const own = () => {};
    const withOwn = [{ host: 'gw', port: 1, lookup: own }];
    expect(withSystemLookup(withOwn)).to.equal(withOwn);
    const unix = [{ path: '/run/fnhost/gateway.sock' }];
    expect(withSystemLookup(unix)).to.equal(unix);
  });
});
