import { expect } from 'chai';
import { stat } from 'node:fs/promises';
import { createServer, get, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { startGateway } from '../helpers/platform.ts';
import { isAlive, waitFor } from './harness.ts';

// The gateway as users run it: `node gateway/src/main.ts` in its own process.

async function api(url: string, token: string, method: string, path: string, body?: unknown) {
  const r = await fetch(url + path, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await r.text();
  return { status: r.status, body: text === '' ? undefined : JSON.parse(text) };
}

describe('gateway process (node gateway/src/main.ts)', function () {
  this.timeout(90_000);

  it('generates a token file with mode 0600 at first start, refuses a wrong token, never prints the token', async () => {
    const gw = await startGateway();
    try {
      const mode = (await stat(join(gw.dataDir, 'token'))).mode & 0o777;
      expect(mode).to.equal(0o600);
      expect(gw.token).to.match(/^fnh_/);
      expect((await api(gw.url, 'wrong-token', 'GET', '/api/v1/functions')).status).to.equal(401);
      expect((await api(gw.url, gw.token, 'GET', '/api/v1/functions')).status).to.equal(200);
      expect(gw.output()).to.not.include(gw.token);
    } finally {
      expect(await gw.stop()).to.equal(0);
    }
  });

  it('flushes pending execution logs on SIGTERM and keeps them across a restart', async () => {
    const gw = await startGateway({ keepDataDir: true, env: { FNHOST_TOKEN: 'a-long-enough-admin-token' } });
    let dataDir = gw.dataDir;
    try {
      const created = await api(gw.url, gw.token, 'POST', '/api/v1/functions', { name: 'durable', code: 'export default (req, res) => res.json({ ok: true })' });
      expect(created.status).to.equal(201);
      const n = 25;
      await Promise.all(Array.from({ length: n }, async () => {
        const r = await fetch(created.body.invocation_url);
        expect(r.status).to.equal(200);
        await r.arrayBuffer();
      }));
      // Straight to SIGTERM: the records may still be in the writer's queue.
      expect(await gw.stop()).to.equal(0);
      const again = await startGateway({ dataDir, env: { FNHOST_TOKEN: 'a-long-enough-admin-token' } });
      try {
        const logs = await api(again.url, again.token, 'GET', '/api/v1/functions/durable/logs');
        expect(logs.body.pagination.totalCount).to.equal(n);
        const fn = await api(again.url, again.token, 'GET', '/api/v1/functions/durable');
        expect(fn.body.total_executions).to.equal(n);
        // The runtime starts lazily after a restart.
        expect((await fetch(fn.body.invocation_url)).status).to.equal(200);
      } finally {
        await again.stop();
      }
    } finally {
      await gw.stop();
      const { rm } = await import('node:fs/promises');
      await rm(dataDir, { recursive: true, force: true });
      dataDir = '';
    }
  });

  it('SIGTERM lets an in-flight invocation finish, refuses new connections, and logs it', async () => {
    const token = 'a-long-enough-admin-token';
    const gw = await startGateway({ keepDataDir: true, token });
    const dataDir = gw.dataDir;
    try {
      const created = await api(gw.url, token, 'POST', '/api/v1/functions', { name: 'slow', code: 'export default async (req, res) => { await new Promise((r) => setTimeout(r, 800)); res.json({ finished: true }); }' });
      expect((await fetch(created.body.invocation_url)).status).to.equal(200);
      const inflight = fetch(created.body.invocation_url).then(async (r) => ({ status: r.status, body: await r.json() }));
      await new Promise((r) => setTimeout(r, 200));
      gw.process.kill('SIGTERM');
      // A new connection is refused while the in-flight call still runs.
      const fresh = await waitFor(
        () =>
          new Promise<string>((resolve) => {
            const req = get(`${gw.url}/healthz`, { agent: false }, (res) => {
              res.resume();
              resolve('');
            });
            req.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
          }),
        'the gateway to stop accepting',
        5_000,
      );
      // Refused once the listener is closed; a connection that raced into the
      // kernel's accept queue just before is reset instead. Neither is served.
      expect(['ECONNREFUSED', 'ECONNRESET']).to.include(fresh);
      expect(await inflight).to.deep.equal({ status: 200, body: { finished: true } });
      expect(await gw.stop()).to.equal(0);
      const again = await startGateway({ dataDir, token });
      try {
        const logs = await api(again.url, token, 'GET', '/api/v1/functions/slow/logs');
        expect(logs.body.pagination.totalCount).to.equal(2);
      } finally {
        await again.stop();
      }
    } finally {
      await gw.stop();
      const { rm } = await import('node:fs/promises');
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it('refuses a bad setting at start with a message naming it', async () => {
    let failed: Error | undefined;
    try {
      const gw = await startGateway({ env: { FNHOST_MAX_TIMEOUT_SECONDS: 'lots' } });
      await gw.stop();
    } catch (err) {
      failed = err as Error;
    }
    expect(failed?.message).to.match(/FNHOST_MAX_TIMEOUT_SECONDS=\\"lots\\" is not an integer/);
  });
});

describe('a second gateway on the same data folder', function () {
  this.timeout(90_000);

  it('refuses to start, naming the first one\'s pid and URL, and the first keeps serving a call in flight', async () => {
    const token = 'a-long-enough-admin-token';
    // The call in flight waits on this server until the test releases it.
    const held: ServerResponse[] = [];
    const gate = createServer((_req, res) => held.push(res));
    await new Promise<void>((r) => gate.listen(0, '127.0.0.1', r));
    const gatePort = (gate.address() as AddressInfo).port;
    const first = await startGateway({ keepDataDir: true, token });
    const dataDir = first.dataDir;
    try {
      const created = await api(first.url, token, 'POST', '/api/v1/functions', {
        name: 'held',
        code: 'export default async (req, res) => { await (await fetch(`http://127.0.0.1:${req.query.port}/`)).text(); res.json({ pid: process.pid }); }',
      });
      // The gate is on this machine, protected unless a rule names it (issue 29).
      expect((await api(first.url, token, 'PUT', '/api/v1/network-policy/global', { default: 'allow', allow: [`127.0.0.1:${gatePort}`] })).status).to.equal(200);
      const inflight = fetch(`${created.body.invocation_url}?port=${gatePort}`).then(async (r) => ({ status: r.status, body: await r.json() }));
      await waitFor(() => held.length === 1, 'the call to be in flight in the runtime');
      let refusal: Error | undefined;
      try {
        const second = await startGateway({ dataDir, token });
        await second.stop();
      } catch (err) {
        refusal = err as Error;
      }
      expect(refusal?.message).to.include(`another fnhost gateway (pid ${first.pid}, serving ${first.url}) is using the data folder ${dataDir}`);
      expect(refusal?.message).not.to.include('ended runtimes');
      held[0]!.end('go');
      const answered = await inflight;
      expect(answered.status).to.equal(200);
      expect(isAlive(answered.body.pid), 'the first gateway\'s runtime still runs').to.equal(true);
      expect((await fetch(`${first.url}/healthz`)).status).to.equal(200);
      // A clean stop removes the lock: the next gateway on the folder starts.
      expect(await first.stop()).to.equal(0);
      const next = await startGateway({ dataDir, token });
      await next.stop();
    } finally {
      gate.close();
      await first.stop();
      const { rm } = await import('node:fs/promises');
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

describe('gateway process killed hard', function () {
  this.timeout(90_000);

  it('the next gateway on the same data directory ends the runtimes the killed one left behind', async () => {
    const token = 'a-long-enough-admin-token';
    // Unsandboxed: a sandboxed runtime ends with its gateway (its stdin pipe ends; test/gateway/sandbox.int.test.ts).
    const gw = await startGateway({ keepDataDir: true, token, env: { FNHOST_SANDBOX: 'off' } });
    const dataDir = gw.dataDir;
    try {
      const created = await api(gw.url, token, 'POST', '/api/v1/functions', { name: 'left', code: 'export default (req, res) => res.json({ pid: process.pid })' });
      const { pid } = await (await fetch(created.body.invocation_url)).json();
      gw.process.kill('SIGKILL');
      await gw.stop();
      expect(isAlive(pid), 'the orphaned runtime survives its gateway').to.equal(true);
      const again = await startGateway({ dataDir, token, env: { FNHOST_SANDBOX: 'off' } });
      try {
        await waitFor(() => !isAlive(pid), 'the orphan to be ended');
        expect((await fetch(created.body.invocation_url.replace(gw.url, again.url))).status).to.equal(200);
      } finally {
        await again.stop();
      }
    } finally {
      const { rm } = await import('node:fs/promises');
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
