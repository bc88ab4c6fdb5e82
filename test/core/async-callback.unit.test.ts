import { expect } from 'chai';
import {
  CallbackUrlError, callbackBackoffMs, callbackDelivered, callbackErrorText, callbackHostMatches, checkCallbackUrl, shownUrl,
  validateAsyncSettings, validateCallbackHosts,
} from '@fnhost/core';

// The pure rules of async callbacks (core/src/async-callback.ts): the hosts a
// function lists, the URL checked at acceptance, the retry schedule.

function refusal(fn: () => unknown): CallbackUrlError {
  try {
    fn();
  } catch (err) {
    expect(err).to.be.instanceOf(CallbackUrlError);
    return err as CallbackUrlError;
  }
  throw new Error('expected a CallbackUrlError');
}

describe('async callbacks: rules', () => {
  it('callback_hosts: names, wildcards, addresses, each with an optional port; normalised and deduplicated', () => {
    expect(validateCallbackHosts(['Hooks.Example.com', '*.example.org', 'hooks.example.com', '127.0.0.1:9000', '[::1]:8080', 'hooks.example.com:8443']))
      .to.deep.equal(['hooks.example.com', '*.example.org', '127.0.0.1:9000', '[::1]:8080', 'hooks.example.com:8443']);
    expect(validateCallbackHosts(null)).to.deep.equal([]);
    expect(validateCallbackHosts([])).to.deep.equal([]);
  });

  it('callback_hosts: refuses the catch-all, CIDRs, URLs, non-strings and long lists, naming the entry', () => {
    expect(() => validateCallbackHosts(['*'])).to.throw(/callback_hosts\[0\] "\*" would let any caller aim the gateway at any host/);
    expect(() => validateCallbackHosts(['ok.example.com', '10.0.0.0/8'])).to.throw(/callback_hosts\[1\] "10\.0\.0\.0\/8" is a CIDR/);
    expect(() => validateCallbackHosts(['https://hooks.example.com/x'])).to.throw(/callback_hosts\[0\]: host "https:\/\/hooks\.example\.com\/x" is invalid: a URL/);
    expect(() => validateCallbackHosts(['bad host'])).to.throw(/callback_hosts\[0\]/);
    expect(() => validateCallbackHosts([7])).to.throw(/callback_hosts\[0\] must be a host name/);
    expect(() => validateCallbackHosts('hooks.example.com')).to.throw(/must be a list of host names/);
    expect(() => validateCallbackHosts(Array.from({ length: 21 }, (_, i) => `h${i}.example.com`))).to.throw(/21 hosts; at most 20/);
  });

  it('async settings take callback_hosts beside the retries, merge on PATCH, and null or [] turns callbacks off', () => {
    const set = validateAsyncSettings({ callback_hosts: ['hooks.example.com'] }, { max_retries: 1 });
    expect(set).to.deep.equal({ max_retries: 1, callback_hosts: ['hooks.example.com'] });
    expect(validateAsyncSettings({ callback_hosts: null }, set)).to.deep.equal({ max_retries: 1 });
    expect(validateAsyncSettings({ callback_hosts: [] }, set)).to.deep.equal({ max_retries: 1 });
    expect(() => validateAsyncSettings({ callbackHosts: [] })).to.throw(/allowed: max_retries, max_age_seconds, callback_hosts/);
  });

  it('matches a host exactly, a wildcard below its name only, a port when the pattern names one (else any), addresses in canonical form', () => {
    const m = (p: string, u: string) => callbackHostMatches(p, new URL(u));
    expect(m('hooks.example.com', 'https://hooks.example.com/x')).to.equal(true);
    expect(m('hooks.example.com', 'http://hooks.example.com:8080/x')).to.equal(true);
    expect(m('hooks.example.com', 'https://hooks.example.com.evil.net/')).to.equal(false);
    expect(m('hooks.example.com', 'https://xhooks.example.com/')).to.equal(false);
    expect(m('*.example.org', 'https://a.b.example.org/')).to.equal(true);
    expect(m('*.example.org', 'https://example.org/')).to.equal(false);
    expect(m('*.example.org', 'https://badexample.org/')).to.equal(false);
    expect(m('hooks.example.com:8443', 'https://hooks.example.com:8443/')).to.equal(true);
    expect(m('hooks.example.com:443', 'https://hooks.example.com/')).to.equal(true);
    expect(m('hooks.example.com:8443', 'https://hooks.example.com/')).to.equal(false);
    expect(m('127.0.0.1:9000', 'http://127.1:9000/')).to.equal(true);
    expect(m('127.0.0.1', 'http://0x7f.0.0.1/')).to.equal(true);
    expect(m('[::1]:8080', 'http://[0:0::1]:8080/')).to.equal(true);
    expect(m('::1', 'http://[::1]/')).to.equal(true);
    expect(m('127.0.0.1', 'http://127.0.0.2/')).to.equal(false);
  });

  it('checks X-Callback-Url at acceptance: off without hosts, http(s) only, no credentials, a listed host; the fragment dropped', () => {
    const hosts = ['hooks.example.com'];
    expect(checkCallbackUrl('https://HOOKS.example.com/a?b=1#frag', hosts)).to.equal('https://hooks.example.com/a?b=1');
    expect(refusal(() => checkCallbackUrl('https://hooks.example.com/', undefined)).code).to.equal('callback_not_allowed');
    expect(refusal(() => checkCallbackUrl('https://hooks.example.com/', [])).code).to.equal('callback_not_allowed');
    const bad = refusal(() => checkCallbackUrl('file:///etc/passwd', hosts));
    expect([bad.code, bad.status]).to.deep.equal(['callback_url_invalid', 400]);
    expect(refusal(() => checkCallbackUrl('javascript:alert(1)', hosts)).code).to.equal('callback_url_invalid');
    const creds = refusal(() => checkCallbackUrl('https://u:pw-secret@hooks.example.com/', hosts));
    expect(creds.code).to.equal('callback_url_invalid');
    expect(creds.message).to.not.include('pw-secret');
    expect(refusal(() => checkCallbackUrl('https://other.example.com/?token=tok-secret', hosts)).message).to.include('"other.example.com"').and.not.include('tok-secret');
    expect(refusal(() => checkCallbackUrl('https://hooks.example.com/' + 'a'.repeat(3000), hosts)).message).to.include('at most 2048');
    expect(refusal(() => checkCallbackUrl('not a url ?token=tok-secret', hosts)).message).to.not.include('tok-secret');
  });

  it('delivers on a 2xx only (a 3xx is a failure: redirects are not followed), backs off with equal jitter, keeps errors and URLs short and without queries', () => {
    expect([200, 201, 204, 299].every(callbackDelivered)).to.equal(true);
    expect([199, 301, 302, 304, 400, 429, 500].some(callbackDelivered)).to.equal(false);
    expect(callbackBackoffMs(2, 1000, 0)).to.equal(500);
    expect(callbackBackoffMs(2, 1000, 0.999)).to.be.closeTo(1000, 1);
    expect(callbackBackoffMs(3, 1000, 0)).to.equal(1000);
    expect(callbackErrorText('a\n  b')).to.equal('a b');
    expect(callbackErrorText('x'.repeat(500))).to.have.length(201);
    expect(shownUrl('https://hooks.example.com:8443/p/q?token=secret')).to.equal('https://hooks.example.com:8443/p/q?…');
    expect(shownUrl('https://hooks.example.com/p')).to.equal('https://hooks.example.com/p');
  });
});
