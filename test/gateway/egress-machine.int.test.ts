import { expect } from 'chai';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { startDnsServer, type TestDnsServer } from '../helpers/dns-server.ts';
import { startGateway, type RunningGateway } from '../helpers/platform.ts';
import { pollUntil } from '../helpers/wait.ts';

// Issue 29, through a real gateway process, its sandboxed runtimes and its egress proxy:
// - the machine is protected with no policy at all: servers on 127.0.0.1, on [::1] and on an
//   address of one of the host's interfaces (a veth pair into a network namespace this test
//   makes) are unreachable by fetch, node:net, tls, http and a child process;
// - an explicit allow of the address reaches it, and never the panel's or the gateway's port;
// - a name allowed under default deny connects (the name is in an /etc/hosts of the test's own:
//   the gateway runs in a mount namespace with that file bound over /etc/hosts, so the
//   machine's file is untouched), its server in the network namespace;
//   and a name answered by a DNS server this test starts on loopback (the same mount namespace
//   binds a resolv.conf naming it); a denied name is never asked of that server;
// - a name whose addresses include a denied range is refused naming the range.
// Needs root (ip netns, unshare -m), as the sandbox tests do.

const N = process.pid % 10_000;
const NS = `fnh29-${N}`;
const HOST_IF = `h29a${N}`;
const NS_IF = `h29b${N}`;
// 10.29.<n>.0/30 per run: the host side .1 (an address of this machine), the namespace side .2.
const NET = `10.${29 + (N % 200)}.${(N >> 3) % 250}`;
const HOST_ADDR = `${NET}.1`;
const NS_ADDR = `${NET}.2`;

const HANDLER = `
import net from 'node:net';
import tls from 'node:tls';
import http from 'node:http';
import { execFile } from 'node:child_process';
const outcome = (p) => p.then((value) => ({ value }), (e) => ({ error: e.message, code: e.code, rule: e.rule, scope: e.scope }));
const bracket = (h) => (h.includes(':') ? '[' + h + ']' : h);
export default async function handler(req, res) {
  const { kind, host, port } = req.body;
  const url = 'http://' + bracket(host) + ':' + port + '/';
  switch (kind) {
    case 'fetch': return res.json(await outcome(fetch(url).then((r) => r.text())));
    case 'net': return res.json(await outcome(new Promise((resolve, reject) => {
      const s = net.connect(port, host, () => s.write('GET / HTTP/1.0\\r\\n\\r\\n'));
      let got = ''; s.on('data', (d) => (got += d)); s.on('end', () => resolve(got.split('\\r\\n\\r\\n')[1])); s.on('error', reject);
    })));
    case 'tls': return res.json(await outcome(new Promise((resolve, reject) => {
      const s = tls.connect({ host, port, rejectUnauthorized: false }, () => resolve('handshake'));
      s.on('error', reject);
    })));
    case 'http': return res.json(await outcome(new Promise((resolve, reject) => {
      http.get(url, (r) => { let b = ''; r.on('data', (d) => (b += d)); r.on('end', () => resolve(b)); }).on('error', reject);
    })));
    case 'child': return res.json(await outcome(new Promise((resolve, reject) => {
      // A child process has none of the runtime's patches: only the sandbox holds it.
      const code = "const s=require('net').connect(" + port + ",'" + host + "',()=>{console.log('connected');process.exit(0)});s.on('error',(e)=>{console.log(e.code);process.exit(0)});setTimeout(()=>{console.log('timeout');process.exit(0)},3000)";
      execFile(process.execPath, ['-e', code], { timeout: 8000 }, (err, stdout) => (err ? reject(err) : stdout.trim() === 'connected' ? resolve('connected') : reject(Object.assign(new Error(stdout.trim()), { code: stdout.trim() }))));
    })));
  }
}`;

interface Counted {
  server: Server;
  port: number;
  connections: number;
}

async function web(host: string, body: string): Promise<Counted> {
  const c: Counted = { server: createServer((_req, res) => res.end(body)), port: 0, connections: 0 };
  c.server.on('connection', () => c.connections++);
  await new Promise<void>((resolve) => c.server.listen(0, host, resolve));
  c.port = (c.server.address() as AddressInfo).port;
  return c;
}

const sh = (cmd: string, args: string[]) => execFileSync(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] }).toString();

describe('the machine is protected by default; allowing a name allows what it resolves to (sandboxed runtimes, the real proxy)', function () {
  this.timeout(180_000);
  let dir: string;
  let gw: RunningGateway;
  let functionId: string;
  let loop4: Counted;
  let loop6: Counted;
  let anyAddr: Counted;
  let nsServer: ChildProcess;
  let nsPort: number;
  let dns: TestDnsServer;

  const api = async (method: string, path: string, body?: unknown) => {
    const r = await fetch(gw.url + path, { method, headers: { authorization: `Bearer ${gw.token}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await r.text();
    expect(r.status, text).to.be.lessThan(300);
    return text === '' ? undefined : JSON.parse(text);
  };
  const call = async (kind: string, host: string, port: number): Promise<{ value?: string; error?: string; code?: string; rule?: string; scope?: string }> => {
    const r = await fetch(`${gw.url}/invoke/${functionId}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ kind, host, port }) });
    const text = await r.text();
    expect(r.status, text).to.equal(200);
    return JSON.parse(text);
  };

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'fnhost-h29-'));
    // The network namespace with its end of the veth pair; the host's end is an address of this machine.
    sh('ip', ['netns', 'add', NS]);
    sh('ip', ['link', 'add', HOST_IF, 'type', 'veth', 'peer', 'name', NS_IF]);
    sh('ip', ['link', 'set', NS_IF, 'netns', NS]);
    sh('ip', ['addr', 'add', `${HOST_ADDR}/30`, 'dev', HOST_IF]);
    sh('ip', ['link', 'set', HOST_IF, 'up']);
    sh('ip', ['netns', 'exec', NS, 'ip', 'addr', 'add', `${NS_ADDR}/30`, 'dev', NS_IF]);
    sh('ip', ['netns', 'exec', NS, 'ip', 'link', 'set', NS_IF, 'up']);
    sh('ip', ['netns', 'exec', NS, 'ip', 'link', 'set', 'lo', 'up']);
    nsServer = spawn('ip', ['netns', 'exec', NS, process.execPath, '-e', `const s=require('http').createServer((q,r)=>r.end('hello from the namespace'));s.listen(0,'${NS_ADDR}',()=>console.log(s.address().port))`], { stdio: ['ignore', 'pipe', 'inherit'] });
    nsPort = await new Promise<number>((resolve, reject) => {
      nsServer.once('exit', (code) => reject(new Error(`the namespace's server exited (${code})`)));
      createInterface({ input: nsServer.stdout! }).once('line', (line) => resolve(Number(line)));
    });
    [loop4, loop6, anyAddr] = await Promise.all([web('127.0.0.1', 'loopback v4'), web('::1', 'loopback v6'), web('0.0.0.0', 'every address')]);
    // The test's own /etc/hosts, bound over the machine's in the gateway's mount namespace only.
    const hosts = join(dir, 'hosts');
    await writeFile(hosts, `127.0.0.1 localhost\n::1 localhost\n${NS_ADDR} svc.h29.test\n${NS_ADDR} mixed.h29.test\nfd29::2 mixed.h29.test\n${HOST_ADDR} machine.h29.test\n`);
    // And a DNS server of the test's own, named by a resolv.conf bound the same way.
    const dnsAddress = `127.${29 + (N % 200)}.${(N >> 3) % 250}.53`;
    dns = await startDnsServer({ 'dns.h29.test': [NS_ADDR], 'secret.h29.test': [NS_ADDR] }, dnsAddress);
    const resolv = join(dir, 'resolv.conf');
    await writeFile(resolv, `nameserver ${dnsAddress}\noptions timeout:2 attempts:2\n`);
    gw = await startGateway({ prefix: ['unshare', '-m', '--', 'sh', '-c', 'mount --bind "$0" /etc/hosts && mount --bind "$1" /etc/resolv.conf && shift && exec "$@"', hosts, resolv], env: { FNHOST_WARM_POOL: '1' } });
    const created = await api('POST', '/api/v1/functions', { name: 'prober', code: HANDLER });
    functionId = created.function_id;
  });

  after(async () => {
    await gw?.stop();
    nsServer?.kill();
    await dns?.close();
    for (const s of [loop4, loop6, anyAddr]) s?.server.close();
    try {
      sh('ip', ['link', 'del', HOST_IF]);
    } catch {
      // gone with the namespace
    }
    try {
      sh('ip', ['netns', 'del', NS]);
    } catch {
      // never made
    }
    await rm(dir, { recursive: true, force: true });
  });

  it('with no policy at all: 127.0.0.1, [::1] and an interface address are unreachable by fetch, net, tls, http and a child process', async () => {
    const targets: Array<[string, Counted]> = [['127.0.0.1', loop4], ['::1', loop6], [HOST_ADDR, anyAddr], ['::ffff:127.0.0.1', loop4]];
    for (const [host, server] of targets) {
      for (const kind of ['fetch', 'net', 'tls', 'http']) {
        const r = await call(kind, host, server.port);
        expect(r.value, `${kind} ${host}`).to.equal(undefined);
        expect(r.rule, `${kind} ${host}: ${r.error}`).to.equal('host');
        expect(r.error).to.match(/blocked by network policy/);
      }
      const child = await call('child', host, server.port);
      expect(child.value, `child ${host}`).to.equal(undefined);
    }
    expect([loop4.connections, loop6.connections, anyAddr.connections]).to.deep.equal([0, 0, 0]);
    // A name of the machine is no way round: the name is not what is protected, its address is.
    expect((await call('fetch', 'machine.h29.test', anyAddr.port)).rule).to.equal('host');
    await api('PUT', '/api/v1/network-policy/global', { default: 'allow', allow: ['*', 'machine.h29.test'], deny: [] });
    expect((await call('fetch', 'machine.h29.test', anyAddr.port)).rule, 'a catch-all and a name do not open it').to.equal('host');
    expect(anyAddr.connections).to.equal(0);
  });

  it('an explicit allow of the address reaches it, and never the panel\'s or the gateway\'s own port', async () => {
    await api('PUT', '/api/v1/network-policy/global', { default: 'allow', allow: ['127.0.0.1', HOST_ADDR], deny: [] });
    expect(await call('fetch', '127.0.0.1', loop4.port)).to.deep.equal({ value: 'loopback v4' });
    expect(await call('net', '127.0.0.1', loop4.port)).to.deep.equal({ value: 'loopback v4' });
    expect(await call('http', HOST_ADDR, anyAddr.port)).to.deep.equal({ value: 'every address' });
    expect((await call('fetch', '::1', loop6.port)).rule, 'allowing 127.0.0.1 opens that address only').to.equal('host');
    for (const url of [gw.adminUrl, gw.url]) {
      const port = Number(new URL(url).port);
      for (const host of ['127.0.0.1', HOST_ADDR]) {
        const r = await call('fetch', host, port);
        expect(r.rule, `${host}:${port} ${r.error}`).to.equal('listener');
        expect(r.error).to.include("the platform's own listener");
      }
    }
  });

  it('an address the host gains while the gateway runs is protected within the refresh (2 s)', async () => {
    await api('PUT', '/api/v1/network-policy/global', { default: 'allow', allow: [], deny: [] });
    const added = `${NET}.9`;
    sh('ip', ['addr', 'add', `${added}/32`, 'dev', HOST_IF]);
    try {
      // Read again at the first decision after the refresh: within a few seconds, by a deadline.
      await pollUntil('the new interface address refused under the rule host', async () => (await call('net', added, anyAddr.port)).rule === 'host', 15_000, 200);
    } finally {
      sh('ip', ['addr', 'del', `${added}/32`, 'dev', HOST_IF]);
    }
  });

  it('an allow of an address with a port opens that port only (local development, one rule)', async () => {
    await api('PUT', '/api/v1/network-policy/global', { default: 'allow', allow: [`127.0.0.1:${loop4.port}`], deny: [] });
    expect(await call('fetch', '127.0.0.1', loop4.port)).to.deep.equal({ value: 'loopback v4' });
    const before = anyAddr.connections;
    const other = await call('net', '127.0.0.1', anyAddr.port);
    expect([other.scope, other.rule], other.error).to.deep.equal(['global', 'host']);
    expect(anyAddr.connections).to.equal(before);
  });

  it('a name allowed under default deny connects (a name in /etc/hosts); its address alone is not allowed', async () => {
    await api('PUT', '/api/v1/network-policy/global', { default: 'deny', allow: ['svc.h29.test'], deny: [] });
    expect(await call('fetch', 'svc.h29.test', nsPort)).to.deep.equal({ value: 'hello from the namespace' });
    expect(await call('net', 'svc.h29.test', nsPort)).to.deep.equal({ value: 'hello from the namespace' });
    const byAddress = await call('fetch', NS_ADDR, nsPort);
    expect([byAddress.scope, byAddress.rule]).to.deep.equal(['global', 'default']);
  });

  it('a name allowed under default deny connects (answered by the test\'s DNS server); a denied name is never asked', async () => {
    await api('PUT', '/api/v1/network-policy/global', { default: 'deny', allow: ['dns.h29.test'], deny: [] });
    expect(await call('fetch', 'dns.h29.test', nsPort)).to.deep.equal({ value: 'hello from the namespace' });
    expect(dns.asked).to.include('dns.h29.test A');
    const secret = await call('fetch', 'secret.h29.test', nsPort);
    expect([secret.scope, secret.rule]).to.deep.equal(['global', 'default']);
    expect(dns.asked.filter((q) => q.startsWith('secret.'))).to.deep.equal([]);
  });

  it('a name whose addresses include a denied range is refused, naming the range', async () => {
    await api('PUT', '/api/v1/network-policy/global', { default: 'deny', allow: ['mixed.h29.test'], deny: ['fd29::/64'] });
    const r = await call('fetch', 'mixed.h29.test', nsPort);
    expect(r.value).to.equal(undefined);
    expect([r.scope, r.rule]).to.deep.equal(['global', 'fd29::/64']);
    expect(r.error).to.match(/blocked by network policy: it resolves to fd29::2 \(global rule fd29::\/64\)/);
  });
});
