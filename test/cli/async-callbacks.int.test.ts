import { expect } from 'chai';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGateway, type RunningGateway } from '../helpers/platform.ts';
import { pollUntil } from '../helpers/wait.ts';
import { isolatedHome, runCli, type RunResult } from './helpers/run.ts';

// The async callback settings from the command line (docs/cli.md "Async
// callback flags"): --callback-host on create, function:async:set with
// --callback-host, --no-callbacks, --max-retries; a bad host is a usage error
// naming it; function:async --state all shows the callback's delivery. A real
// gateway process (SQLite, real runtimes) and a receiver on 127.0.0.1, opened
// to the function by its network policy as the egress tests open loopback.

describe('fnhost async callback settings (real gateway process)', function () {
  this.timeout(180_000);
  let gw: RunningGateway;
  let files: string;
  let receiver: Server;
  let port = 0;
  const got: string[] = [];
  const home = isolatedHome();
  const fnhost = (args: string[]): Promise<RunResult> => runCli(args, { env: { ...home.env, FNHOST_URL: gw.url, FNHOST_TOKEN: gw.token }, timeoutMs: 90_000 });

  before(async () => {
    receiver = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        got.push(String(req.headers['x-fnhost-async-id']));
        res.end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    port = (receiver.address() as AddressInfo).port;
    files = await mkdtemp(join(tmpdir(), 'fnhost-cli-callbacks-'));
    await writeFile(join(files, 'h.js'), `export default (req, res) => res.json({ ok: true })`);
    gw = await startGateway({ env: { FNHOST_ASYNC_POLL_MS: '50' } });
  });
  after(async () => {
    await gw?.stop();
    receiver?.closeAllConnections();
    await new Promise((r) => receiver?.close(r));
    home.cleanup();
    await rm(files, { recursive: true, force: true });
  });

  it('sets the callback hosts on create and with function:async:set, refuses a bad one naming it, and turns callbacks off', async () => {
    const created = await fnhost(['function:create', 'hooked', '--file', join(files, 'h.js'), '--callback-host', 'hooks.example.com', '--output', 'json']);
    expect(created.code, created.stderr).to.equal(0);
    expect(JSON.parse(created.stdout).async).to.deep.equal({ callback_hosts: ['hooks.example.com'] });

    const bad = await fnhost(['function:async:set', 'hooked', '--callback-host', '*']);
    expect(bad.code).to.equal(2);
    expect(bad.stderr).to.contain('async.callback_hosts[0] "*" would let any caller aim the gateway at any host');
    expect((await fnhost(['function:async:set', 'hooked'])).code).to.equal(2);
    expect((await fnhost(['function:async:set', 'hooked', '--max-retries', '5'])).code).to.equal(2);

    const set = await fnhost(['function:async:set', 'hooked', '--callback-host', `127.0.0.1:${port}`, '--callback-host', '*.example.org', '--max-retries', '1']);
    expect(set.code, set.stderr).to.equal(0);
    expect(set.stdout).to.contain('Async settings for hooked: 1 retries (set), maximum age 21600 s (default)');
    expect(set.stdout).to.contain(`callbacks to: 127.0.0.1:${port}, *.example.org`);

    const policy = await fetch(`${gw.url}/api/v1/network-policy/functions/hooked`, { method: 'PUT', headers: { authorization: `Bearer ${gw.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ default: 'allow', allow: [`127.0.0.1:${port}`], deny: [] }) });
    expect(policy.status).to.equal(200);
    const sent = await fnhost(['function:invoke', 'hooked', '--async', '-H', `X-Callback-Url: http://127.0.0.1:${port}/hook?key=k`, '--output', 'json']);
    expect(sent.code, sent.stderr).to.equal(0);
    const id = JSON.parse(sent.stdout).async_id as string;
    await pollUntil('the callback delivered', async () => (got.includes(id) ? true : undefined), 60_000, 50);
    const listed = await pollUntil('function:async to show it delivered', async () => {
      const r = await fnhost(['function:async', 'hooked', '--state', 'all']);
      return new RegExp(`^${id} +succeeded +1 +\\S+ +delivered `, 'm').test(r.stdout) ? r : undefined;
    }, 60_000, 200);
    expect(listed.stdout).to.match(/CALLBACK/);
    expect((await fnhost(['function:async', 'hooked', '--state', 'done'])).code).to.equal(2);

    const off = await fnhost(['function:async:set', 'hooked', '--no-callbacks', '--output', 'json']);
    expect(off.code, off.stderr).to.equal(0);
    expect(JSON.parse(off.stdout).async).to.deep.equal({ max_retries: 1 });
    const refused = await fnhost(['function:invoke', 'hooked', '--async', '-H', `X-Callback-Url: http://127.0.0.1:${port}/hook`]);
    expect(refused.code).to.not.equal(0);
    expect(refused.stdout + refused.stderr).to.contain('callback_not_allowed');
  });
});
