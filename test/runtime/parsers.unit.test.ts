import { expect } from 'chai';
import { ConfigError, functionEnvOf, loadConfig, parseRoutes } from '../../runtime-image/src/config.ts';
import { assertAllowed, validateTtl, validateValue } from '../../runtime-image/src/globals.ts';
import { headersFromRaw, parseQuery } from '../../runtime-image/src/request.ts';
import { InvalidJsonError, parseBody } from '../../runtime-image/src/request-body.ts';
import { compileRoutes, matchRoute } from '../../runtime-image/src/routes.ts';
import { parseCookies } from '../../runtime-image/src/cookies.ts';

describe('runtime pure parts', () => {
  it('parseQuery: repeated keys become arrays, decoding applied', () => {
    expect({ ...parseQuery('a=1&a=2&b=x%20y&c') }).to.deep.equal({ a: ['1', '2'], b: 'x y', c: '' });
  });
  it('parseCookies: first name wins, bad escapes kept as they are', () => {
    expect({ ...parseCookies('a=1; a=2; b=%E0%A4%A; c="q"') }).to.deep.equal({ a: '1', b: '%E0%A4%A', c: 'q' });
  });
  it('matchRoute: params, rest, no match', () => {
    const r = compileRoutes(['/users/:id', '/static/*']);
    expect(matchRoute(r, '/users/7')).to.deep.equal({ id: '7' });
    expect(matchRoute(r, '/static/a/b')).to.deep.equal({ 0: 'a/b' });
    expect(matchRoute(r, '/users/7/x')).to.deep.equal({});
  });
  it('headersFromRaw joins repeats like Node', () => {
    expect({ ...headersFromRaw(['X-A', '1', 'x-a', '2', 'Cookie', 'a=1', 'cookie', 'b=2', 'Set-Cookie', 's']) }).to.deep.equal({ 'x-a': '1, 2', cookie: 'a=1; b=2', 'set-cookie': ['s'] });
  });
  it('parseBody: JSON errors name the content type', () => {
    expect(() => parseBody(new TextEncoder().encode('{x'), 'application/json')).to.throw(InvalidJsonError, /not valid JSON \(content-type application\/json\)/);
    expect(parseBody(new Uint8Array(Buffer.from('caf\xe9', 'latin1')), 'text/plain; charset=latin1')).to.equal('café');
  });
  it('config: env filtering, route and number errors name the value', () => {
    expect(functionEnvOf({ FNHOST_X: '1', PORT: '1', HOST: 'h', A: 'b' })).to.deep.equal({ A: 'b' });
    expect(() => parseRoutes('["users"]')).to.throw(ConfigError, /"users" must be a string starting with "\/"/);
    expect(() => loadConfig({ FNHOST_FUNCTION_FILE: '/f', FNHOST_TIMEOUT_MS: 'soon' })).to.throw(ConfigError, 'FNHOST_TIMEOUT_MS="soon" must be an integer');
    expect(() => loadConfig({})).to.throw(ConfigError, /FNHOST_FUNCTION_FILE is required/);
  });
  it('kv validation', () => {
    expect(() => validateValue('k', () => 1)).to.throw(/must be JSON-serialisable, got function/);
    expect(validateTtl('k', undefined)).to.equal(undefined);
    expect(() => validateTtl('k', 31536001)).to.throw(/got 31536001/);
  });
  it('assertAllowed asks about the name and each resolved address (mock check and resolver)', async () => {
    const asked: string[] = [];
    const check = async (host: string, port: number) => {
      asked.push(`${host}:${port}`);
      return host === '169.254.169.254' ? { allowed: false, rule: '169.254.0.0/16', scope: 'global' } : { allowed: true, rule: 'default', scope: 'global' };
    };
    let err: Error | undefined;
    await assertAllowed(new URL('https://metadata.evil/'), check, async () => ['169.254.169.254']).catch((e: Error) => (err = e));
    expect(err?.message).to.equal('fetch to metadata.evil blocked by network policy: it resolves to 169.254.169.254 (global rule 169.254.0.0/16)');
    expect(asked).to.deep.equal(['metadata.evil:443', '169.254.169.254:443']);
    await assertAllowed(new URL('http://[::1]:8080/'), check);
    expect(asked.at(-1)).to.equal('::1:8080');
  });
});
