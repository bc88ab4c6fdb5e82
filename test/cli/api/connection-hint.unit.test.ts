import { expect } from 'chai';
import { connectionFailure, connectionHint, isHttpsToPlainHttp, isLoopbackUrl } from '../../../cli/src/api/connection-hint.ts';
import { panelUrlError } from '../../../cli/src/api/api-root.ts';

describe('cli: the hint of a server that does not answer', () => {
  it('tells a loopback URL apart from a remote one', () => {
    for (const url of ['http://127.0.0.1:8080', 'http://localhost:3000', 'http://[::1]:8080', 'http://127.0.0.2:80', 'http://app.localhost']) expect(isLoopbackUrl(url), url).to.equal(true);
    for (const url of ['https://fn.example.com', 'http://10.0.0.5:8080', 'http://fnhost-gateway.fnhost-system.svc.cluster.local:8080', 'not a url']) expect(isLoopbackUrl(url), url).to.equal(false);
  });

  it('names make start and a port-forward that ended for a loopback URL, and the URL and the gateway for a remote one (never make start)', () => {
    const local = connectionHint('http://127.0.0.1:8080');
    expect(local).to.contain('make start').and.to.contain('port-forward');
    const remote = connectionHint('https://fn.example.com');
    expect(remote).not.to.contain('make start');
    expect(remote).to.contain('--url').and.to.contain('kubectl get pods,ingress');
  });
});

describe('cli: https against the plain-HTTP gateway, and the panel\'s URL given as the API\'s', () => {
  it('says plain HTTP answered and names the http:// URL, without the port-forward noise', () => {
    const failure = connectionFailure('https://127.0.0.1:8080', Object.assign(new Error('write EPROTO 40E7:error:0A00010B:SSL routines:ssl3_get_record:wrong version number'), { code: 'EPROTO' }));
    expect(failure.message).to.equal('the server at https://127.0.0.1:8080 answers plain HTTP, not HTTPS (TLS handshake failed: EPROTO)');
    expect(failure.hint).to.contain('use http://127.0.0.1:8080').and.not.to.contain('port-forward');
  });

  it('keeps the reachability message for other failures and for http URLs', () => {
    expect(connectionFailure('http://127.0.0.1:8080', Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })).message).to.equal('cannot reach the fnhost server at http://127.0.0.1:8080 (ECONNREFUSED)');
    expect(isHttpsToPlainHttp('http://127.0.0.1:8080', { code: 'EPROTO', message: '' })).to.equal(false);
    expect(isHttpsToPlainHttp('https://fn.example.com', { code: 'ECONNRESET', message: 'socket hang up' })).to.equal(false);
  });

  it('reads a 401 of the panel API, or any 401 under /admin, as the wrong URL (exit 2), not a token problem', () => {
    const byMessage = panelUrlError('http://127.0.0.1:8081', '--url', 401, 'the panel API needs a panel session: sign in at /admin/');
    expect(byMessage?.message).to.equal("http://127.0.0.1:8081 (from --url) is the admin panel's address, not the API's: the CLI talks to the gateway's main URL");
    expect(byMessage?.exitCode).to.equal(2);
    expect(panelUrlError('http://127.0.0.1:8081/admin/', undefined, 401, undefined)).to.not.equal(undefined);
    expect(panelUrlError('http://127.0.0.1:8080', undefined, 401, 'invalid token')).to.equal(undefined);
    expect(panelUrlError('http://127.0.0.1:8081/admin/', undefined, 404, undefined)).to.equal(undefined);
  });
});
