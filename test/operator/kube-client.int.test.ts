import { expect } from 'chai';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeApiError, KubeClient } from '../../operator/src/kube.ts';

// The operator's API client against a real HTTP server standing in for the
// API server: 429 handling and the cap on requests in flight.

function kubeConfigFor(port: number): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
    users: [{ name: 'u', token: 'test-token' }],
    contexts: [{ name: 'ctx', cluster: 'c', user: 'u' }],
    currentContext: 'ctx',
  });
  return kc;
}

async function listen(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ server: Server; port: number }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

describe('operator API client (real HTTP)', function () {
  this.timeout(20_000);
  const servers: Server[] = [];
  after(() => servers.forEach((s) => s.close()));

  it('retries a 429 after Retry-After and returns the eventual answer; counts the throttles', async () => {
    let calls = 0;
    const seen: Array<{ auth?: string; type?: string; body: string; url?: string }> = [];
    const { server, port } = await listen((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        calls++;
        seen.push({ auth: req.headers.authorization, type: req.headers['content-type'], body, url: req.url });
        if (calls <= 2) {
          res.writeHead(429, { 'retry-after': '0', 'content-type': 'application/json' }).end('{"kind":"Status","reason":"TooManyRequests","message":"slow down"}');
        } else {
          res.writeHead(200, { 'content-type': 'application/json' }).end('{"kind":"ConfigMap","metadata":{"name":"x"}}');
        }
      });
    });
    servers.push(server);
    let throttled = 0;
    const client = new KubeClient(kubeConfigFor(port), { maxInFlight: 2, metrics: { onThrottled: () => throttled++ } });
    const result = await client.apply('/api/v1/namespaces/a/configmaps/x', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } }, 'fnhost-operator');
    expect(result).to.deep.equal({ kind: 'ConfigMap', metadata: { name: 'x' } });
    expect(calls).to.equal(3);
    expect(throttled).to.equal(2);
    expect(seen[2]).to.deep.include({ auth: 'Bearer test-token', type: 'application/apply-patch+yaml', url: '/api/v1/namespaces/a/configmaps/x?fieldManager=fnhost-operator&force=true' });
    expect(JSON.parse(seen[2]!.body)).to.deep.equal({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } });
  });

  it('never has more than maxInFlight requests open', async () => {
    let open = 0;
    let maxOpen = 0;
    const { server, port } = await listen((_req, res) => {
      open++;
      maxOpen = Math.max(maxOpen, open);
      setTimeout(() => {
        open--;
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      }, 30);
    });
    servers.push(server);
    const client = new KubeClient(kubeConfigFor(port), { maxInFlight: 3 });
    await Promise.all(Array.from({ length: 12 }, (_, i) => client.get(`/api/v1/namespaces/a/configmaps/c${i}`)));
    expect(maxOpen).to.equal(3);
    expect(client.inFlight).to.equal(0);
  });

  it('turns an error Status into KubeApiError with the code and the message; 404 becomes null for getOrNull', async () => {
    const { server, port } = await listen((req, res) => {
      const code = req.url!.includes('missing') ? 404 : 422;
      res.writeHead(code, { 'content-type': 'application/json' }).end(JSON.stringify({ kind: 'Status', reason: code === 404 ? 'NotFound' : 'Invalid', message: `thing is ${code === 404 ? 'missing' : 'invalid'}` }));
    });
    servers.push(server);
    const client = new KubeClient(kubeConfigFor(port), { maxInFlight: 1 });
    expect(await client.getOrNull('/api/v1/namespaces/a/configmaps/missing')).to.equal(null);
    try {
      await client.mergePatch('/api/v1/namespaces/a/configmaps/bad', { data: {} });
      expect.fail('expected an error');
    } catch (err) {
      expect(err).to.be.instanceOf(KubeApiError);
      expect((err as KubeApiError).statusCode).to.equal(422);
      expect((err as KubeApiError).message).to.contain('thing is invalid');
    }
  });
});
