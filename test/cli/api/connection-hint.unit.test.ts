import { expect } from 'chai';
import { connectionHint, isLoopbackUrl } from '../../../cli/src/api/connection-hint.ts';

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
