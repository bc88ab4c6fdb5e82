import { expect } from 'chai';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { startHarness, type Harness } from './harness.ts';

// The egress path as one machine wires it: the gateway starts the proxy on each sandbox's own
// socket (or its data folder's, unsandboxed) and gives FNHOST_EGRESS_PROXY to the runtimes it starts (the warm pool's too, at
// specialization). A handler's node:net connection follows the network policy set through
// the management API.

describe('gateway egress: functions connect through the gateway\'s proxy', function () {
  this.timeout(60_000);
  let h: Harness;
  const servers: Array<{ server: Server; port: number; connections: number }> = [];

  const echoOn = async (host: string) => {
    const entry = { server: createServer((s: Socket) => s.on('data', () => s.end('pong\n'))), port: 0, connections: 0 };
    entry.server.on('connection', () => entry.connections++);
    await new Promise<void>((r) => entry.server.listen(0, host, r));
    entry.port = (entry.server.address() as AddressInfo).port;
    servers.push(entry);
    return entry;
  };

  before(async () => {
    // The proxy's credential check, reached from the test: sandboxed runtimes have sockets of their own, so the test uses a TCP listener.
    h = await startHarness({ env: { FNHOST_EGRESS_LISTEN: '127.0.0.1:0' } });
  });
  after(async () => {
    await h?.close();
    for (const s of servers) s.server.close();
  });

  const CODE = `import net from 'node:net';
export default async (req, res) => {
  if (req.path === '/env') return res.json(Object.keys(process.env).filter((k) => k.startsWith('FNHOST_')));
  const { host, port } = req.query;
  const reply = await new Promise((resolve, reject) => {
    const s = net.connect(Number(port), host, () => s.write('ping\\n'));
    s.on('data', (d) => { s.end(); resolve(String(d).trim()); });
    s.on('error', reject);
  });
  res.json({ reply });
};`;

  it('node:net reaches an allowed server; one the global policy denies fails naming the rule and sees no connection', async () => {
    const allowed = await echoOn('127.0.0.1');
    const denied = await echoOn('127.0.0.2');
    expect((await h.api('PUT', '/api/v1/network-policy/global', { default: 'allow', allow: ['127.0.0.1'], deny: ['127.0.0.2'] })).status).to.equal(200);
    const fn = await h.createFunction('netcaller', CODE);
    const ok = await h.invoke(fn.function_id, `/?host=127.0.0.1&port=${allowed.port}`);
    expect(ok.status).to.equal(200);
    expect(await ok.json()).to.deep.equal({ reply: 'pong' });
    const refused = await h.invoke(fn.function_id, `/?host=127.0.0.2&port=${denied.port}`);
    expect(refused.status).to.equal(500);
    await refused.arrayBuffer();
    expect(denied.connections).to.equal(0);
    const logs = await h.logs('netcaller', '?status=error');
    expect(logs.logs[0].error_message).to.equal(`PolicyBlockedError: connection to 127.0.0.2:${denied.port} blocked by network policy (global rule 127.0.0.2)`);
    const metrics = await (await fetch(`${h.url}/metrics`)).text();
    expect(metrics).to.include('fnhost_egress_connections_total{outcome="tunnelled"} 1\n');
    expect(metrics).to.include('fnhost_egress_connections_total{outcome="denied"} 1\n');
  });

  it('the proxy setting and credential are not in the handler\'s environment', async () => {
    const fn = await h.createFunction('envlister', CODE);
    expect(await (await h.invoke(fn.function_id, '/env')).json()).to.deep.equal([]);
  });

  const connectStatus = async (credential: string, target: string) => {
    const { request } = await import('node:http');
    return await new Promise<number>((resolve, reject) => {
      const [host, port] = [h.platform.egress.tcpAddress!.split(':')[0], Number(h.platform.egress.tcpAddress!.split(':')[1])];
      const req = request({ host, port, method: 'CONNECT', path: target, headers: { 'proxy-authorization': `Bearer ${credential}` } });
      req.on('connect', (res, socket) => {
        socket.destroy();
        resolve(res.statusCode!);
      });
      req.on('response', (res) => {
        res.resume();
        resolve(res.statusCode!);
      });
      req.on('error', reject);
      req.end();
    });
  };

  it('the proxy refuses a credential it did not issue, and that of a deleted function', async () => {
    const allowed = await echoOn('127.0.0.1');
    expect(await connectStatus('00000000-0000-4000-8000-000000000009.forged', `127.0.0.1:${allowed.port}`)).to.equal(407);
    const fn = await h.createFunction('shortlived', CODE);
    const token = h.platform.runtimeToken(fn.function_id);
    expect(await connectStatus(token, `127.0.0.1:${allowed.port}`)).to.equal(200);
    expect((await h.api('DELETE', `/api/v1/functions/${fn.function_id}`)).status).to.equal(204);
    expect(await connectStatus(token, `127.0.0.1:${allowed.port}`)).to.equal(407);
  });
});
