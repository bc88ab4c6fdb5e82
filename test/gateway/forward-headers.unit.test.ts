import { expect } from 'chai';
import { decodeURIComponentSafe, headersToCaller, headersToFunction, lowerCaseNames, type ForwardContext } from '../../gateway/src/invoke/headers.ts';
import { setsCookie, withoutCookie } from '../../gateway/src/invoke/panel-cookie.ts';
import { UnforwardableRequestError, isRefusedBeforeSending } from '../../gateway/src/invoke/errors.ts';
import { SESSION_COOKIE } from '../../gateway/src/admin/session.ts';

const ctx: ForwardContext = { remoteAddress: '10.1.2.3', trustProxy: false, executionId: 'log_1', trigger: 'http' };

describe('request headers forwarded to a function', () => {
  it('drops hop-by-hop and framing headers, keeps the rest and Host, and sets the platform headers', () => {
    const out = headersToFunction({
      host: 'fn.example', accept: '*/*', authorization: 'Bearer x', connection: 'keep-alive', 'keep-alive': 'timeout=5',
      'transfer-encoding': 'chunked', 'content-length': '12', expect: '100-continue', upgrade: 'websocket', te: 'trailers',
      trailer: 'x', 'proxy-authorization': 'Basic y', 'proxy-connection': 'keep-alive', 'http2-settings': 'AAA',
    }, ctx);
    expect(out).to.deep.equal({
      host: 'fn.example', accept: '*/*', authorization: 'Bearer x',
      'x-forwarded-for': '10.1.2.3', 'x-forwarded-proto': 'http', 'x-fnhost-execution-id': 'log_1', 'x-fnhost-trigger': 'http',
    });
  });

  it('drops the headers named in Connection, except Host', () => {
    const out = headersToFunction({ host: 'h', connection: 'Host, X-Secret , close', 'x-secret': 's', 'x-kept': 'k' }, ctx);
    expect(out.host).to.equal('h');
    expect(out).to.not.have.property('x-secret');
    expect(out['x-kept']).to.equal('k');
  });

  it('replaces every caller-sent x-fnhost-* header', () => {
    const out = headersToFunction({ 'x-fnhost-trigger': 'schedule', 'x-fnhost-execution-id': 'forged', 'x-fnhost-csrf': 'c', 'x-fnhost-schedule-token': 't' }, ctx);
    expect(Object.keys(out).filter((n) => n.startsWith('x-fnhost-')).sort()).to.deep.equal(['x-fnhost-execution-id', 'x-fnhost-trigger']);
    expect(out['x-fnhost-trigger']).to.equal('http');
    expect(out['x-fnhost-execution-id']).to.equal('log_1');
  });

  it('without a trusted proxy: the caller address and http, no X-Forwarded-Host or Forwarded', () => {
    const out = headersToFunction({ 'x-forwarded-for': '6.6.6.6', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'evil', forwarded: 'host=evil' }, ctx);
    expect(out['x-forwarded-for']).to.equal('10.1.2.3');
    expect(out['x-forwarded-proto']).to.equal('http');
    expect(out).to.not.have.property('x-forwarded-host');
    expect(out).to.not.have.property('forwarded');
  });

  it('behind a trusted proxy: appends to X-Forwarded-For and keeps -Proto, -Host and Forwarded', () => {
    const out = headersToFunction({ 'x-forwarded-for': '1.1.1.1', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'pub', forwarded: 'host=pub' }, { ...ctx, trustProxy: true });
    expect(out).to.include({ 'x-forwarded-for': '1.1.1.1, 10.1.2.3', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'pub', forwarded: 'host=pub' });
  });

  it('takes the panel cookie out of Cookie and keeps the others; no Cookie when it was alone', () => {
    expect(headersToFunction({ cookie: `a=1; ${SESSION_COOKIE}=s; b=2` }, ctx).cookie).to.equal('a=1; b=2');
    expect(headersToFunction({ cookie: `${SESSION_COOKIE}=s` }, ctx)).to.not.have.property('cookie');
  });

  it('lower-cases the names of a test run\'s headers', () => {
    expect(lowerCaseNames({ 'X-Fnhost-Trigger': 'a', Cookie: 'b' })).to.deep.equal({ 'x-fnhost-trigger': 'a', cookie: 'b' });
  });
});

describe('response headers forwarded to the caller', () => {
  it('drops hop-by-hop and x-fnhost-* headers, keeps Content-Length and the rest', () => {
    expect(headersToCaller({ 'content-type': 'text/plain', 'content-length': '3', connection: 'close', 'keep-alive': 'x', 'transfer-encoding': 'chunked', 'x-fnhost-error': 'e', 'x-other': 'o' }))
      .to.deep.equal({ 'content-type': 'text/plain', 'content-length': '3', 'x-other': 'o' });
  });

  it('drops every Set-Cookie for the panel cookie and keeps the others', () => {
    const out = headersToCaller({ 'set-cookie': [`${SESSION_COOKIE}=x; Path=/`, 'theme=dark', `__Host-${SESSION_COOKIE}=y; Secure; Path=/`] });
    expect(out['set-cookie']).to.deep.equal(['theme=dark']);
    expect(headersToCaller({ 'set-cookie': [`${SESSION_COOKIE}=x`] })).to.not.have.property('set-cookie');
  });
});

describe('the panel cookie filter', () => {
  const name = 'fnhost_admin';
  it('removes the cookie and its __Host-/__Secure- variants (prefix in any case), whitespace as browsers send it', () => {
    expect(withoutCookie('a=1;fnhost_admin=s;  b=2', name)).to.equal('a=1; b=2');
    expect(withoutCookie('__Host-fnhost_admin=s; __secure-fnhost_admin=t; c=3', name)).to.equal('c=3');
    expect(withoutCookie(' fnhost_admin =s', name)).to.equal(undefined);
    expect(withoutCookie('fnhost_admin', name)).to.equal(undefined);
  });

  it('keeps cookies whose names only look alike (names are case-sensitive, RFC 6265)', () => {
    expect(withoutCookie('FNHOST_ADMIN=1; fnhost_admin2=2; xfnhost_admin=3', name)).to.equal('FNHOST_ADMIN=1; fnhost_admin2=2; xfnhost_admin=3');
  });

  it('recognises a Set-Cookie for the name, prefixed, nameless (=name=v) or without =', () => {
    for (const value of ['fnhost_admin=x', ' fnhost_admin = x; Path=/', '__HOST-fnhost_admin=x', '__Secure-fnhost_admin=x; Secure', '=fnhost_admin=x', 'fnhost_admin', '=fnhost_admin']) {
      expect(setsCookie(value, name), value).to.equal(true);
    }
    for (const value of ['theme=fnhost_admin', 'FNHOST_ADMIN=x', 'fnhost_admin2=x', '=other=x', 'a=b; fnhost_admin=x']) {
      expect(setsCookie(value, name), value).to.equal(false);
    }
  });
});

describe('undici refusals', () => {
  it('are told apart from a runtime that failed, and answered 400 naming the reason', () => {
    expect(isRefusedBeforeSending(Object.assign(new Error('expect header not supported'), { code: 'UND_ERR_NOT_SUPPORTED' }))).to.equal(true);
    expect(isRefusedBeforeSending(Object.assign(new Error('invalid upgrade header'), { code: 'UND_ERR_INVALID_ARG' }))).to.equal(true);
    expect(isRefusedBeforeSending(Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }))).to.equal(false);
    expect(isRefusedBeforeSending(Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }))).to.equal(false);
    expect(isRefusedBeforeSending(null)).to.equal(false);
    const err = new UnforwardableRequestError('invalid upgrade header');
    expect([err.status, err.code, err.expose]).to.deep.equal([400, 'bad_request', true]);
    expect(err.message).to.include('invalid upgrade header');
  });
});

describe('decodeURIComponentSafe (a function id in the path, x-fnhost-error)', () => {
  it('decodes percent-encoding, keeps text without any, and gives invalid encoding back as it came', () => {
    const cases: Array<[string, string]> = [
      ['0b0e8c6a-1f7e-4d55-9c3b-2a1d5e6f7a8b', '0b0e8c6a-1f7e-4d55-9c3b-2a1d5e6f7a8b'],
      ['a%20b%2Fc', 'a b/c'],
      ['caf%C3%A9', 'café'],
      ['100%', '100%'],
      ['%E0%A4%A', '%E0%A4%A'],
      ['', ''],
    ];
    for (const [given, decoded] of cases) expect(decodeURIComponentSafe(given), given).to.equal(decoded);
  });
});
