import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, connect, type AddressInfo, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { DRIVER_FIXTURE, installFixtureProject, type FixtureProject } from '../helpers/fixture-project.ts';
import { startCliPlatform, type CliPlatform } from '../cli/helpers/platform.ts';
import { runCli } from '../cli/helpers/run.ts';

// Ordinary use inside the sandbox (issue 16): a real database driver from npm, node-postgres,
// bundled into the handler by the real CLI at create, talks to a real PostgreSQL wire-protocol
// server (PGlite: PostgreSQL compiled to WebAssembly, served by pglite-socket) from a sandboxed
// runtime, its connections leaving only through the egress proxy. Allowed, it works unchanged;
// denied by the network policy, it fails naming the rule and the server sees no connection (a
// counting relay stands in front of it). The MongoDB driver bundles to more than the code limit
// (875 KiB minified, without its map), so the smaller Postgres one is the driver here.

/**
 * Starts PGlite's wire-protocol server from the fixture project; resolves with its port. More than
 * one connection at a time: by default it refuses a connection while the last one is still closing.
 */
function startPostgres(project: FixtureProject, children: ChildProcess[]): Promise<number> {
  const server = join(project.dir, 'node_modules', '@electric-sql', 'pglite-socket', 'dist', 'scripts', 'server.js');
  const child = spawn(process.execPath, [server, '--port', '0', '--host', '127.0.0.1', '--max-connections', '8'], { cwd: project.dir, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the PGlite server exited (${code}): ${stderr}`)));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const m = /listening on (\{.*\})/.exec(line);
      if (m !== null) resolve((JSON.parse(m[1]!) as { port: number }).port);
    });
  });
}

/** A TCP relay to `port` that counts the connections it is given. */
async function countingRelay(port: number): Promise<{ server: Server; port: number; connections: () => number }> {
  let connections = 0;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    connections++;
    const upstream = connect(port, '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.once('close', () => sockets.delete(s));
      s.on('error', () => undefined);
    }
    client.pipe(upstream).pipe(client);
  });
  server.on('close', () => {
    for (const s of sockets) s.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port, connections: () => connections };
}

describe('the sandbox: a real database driver (pg) bundled by the CLI, through the egress proxy (real PostgreSQL wire protocol)', function () {
  this.timeout(240_000);
  let p: CliPlatform;
  let project: FixtureProject;
  let relay: Awaited<ReturnType<typeof countingRelay>>;
  let functionId: string;
  const children: ChildProcess[] = [];
  const api = async (method: string, path: string, body?: unknown) => {
    const r = await fetch(p.url + path, { method, headers: { authorization: `Bearer ${p.token}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await r.text();
    return { status: r.status, body: text === '' ? undefined : JSON.parse(text) };
  };
  const visit = async (n: number) => {
    const r = await fetch(`${p.url}/invoke/${functionId}?host=127.0.0.1&port=${relay.port}&n=${n}`);
    return { status: r.status, body: (await r.json()) as Record<string, unknown> };
  };

  before(async () => {
    [p, project] = await Promise.all([startCliPlatform(), installFixtureProject(DRIVER_FIXTURE)]);
    relay = await countingRelay(await startPostgres(project, children));
  });
  after(async () => {
    relay?.server.close();
    for (const c of children) c.kill('SIGKILL');
    await p?.stop();
    project?.remove();
  });

  it('runs sandboxed, the driver bundled at create', async () => {
    const info = await api('GET', '/api/v1/info');
    expect(info.body.sandbox, JSON.stringify(info.body)).to.deep.equal({ enabled: true });
    const created = await runCli(['function:create', 'visits', '--file', 'src/handler.js', '--output', 'json'], { env: p.env, cwd: project.dir, timeoutMs: 90_000 });
    expect(created.code, created.stderr).to.equal(0);
    functionId = (JSON.parse(created.stdout) as { function_id: string }).function_id;
  });

  it('allowed: connects, creates a table, inserts and reads back, through the proxy', async () => {
    // The server is on this machine, protected unless a rule names it (issue 29).
    expect((await api('PUT', '/api/v1/network-policy/global', { default: 'allow', allow: ['127.0.0.1'] })).status).to.equal(200);
    const first = await visit(3);
    expect(first.status, JSON.stringify(first.body)).to.equal(200);
    expect(first.body).to.deep.equal({ count: 1, sum: 3 });
    const second = await visit(4);
    expect(second.status, JSON.stringify(second.body)).to.equal(200);
    expect(second.body).to.deep.equal({ count: 2, sum: 7 });
    expect(relay.connections()).to.equal(2);
  });

  it('denied by the network policy: the driver fails naming the rule, and the server sees no connection', async () => {
    const before = relay.connections();
    expect((await api('PUT', '/api/v1/network-policy/global', { default: 'allow', deny: ['127.0.0.0/8'] })).status).to.equal(200);
    try {
      const denied = await visit(5);
      expect(denied.status).to.equal(502);
      expect(String(denied.body.error), JSON.stringify(denied.body)).to.match(/127\.0\.0\.0\/8/);
      expect(relay.connections()).to.equal(before);
    } finally {
      expect((await api('PUT', '/api/v1/network-policy/global', { default: 'allow', allow: ['127.0.0.1'] })).status).to.equal(200);
    }
    const again = await visit(6);
    expect(again.status, JSON.stringify(again.body)).to.equal(200);
    expect(again.body).to.deep.equal({ count: 3, sum: 13 });
  });
});
