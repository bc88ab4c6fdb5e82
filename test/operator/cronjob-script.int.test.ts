import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { INVOKE_SCRIPT, SCHEDULE_TOKEN_HEADER, SCHEDULED_TIME_HEADER } from '../../operator/src/builders/index.ts';

// The CronJob's `node -e` program, run as the job runs it (a real node
// process, real HTTP), against a stand-in gateway.

// The token as the job has it: a file of the function's Secret, mounted read-only.
const tokenDir = mkdtempSync(join(tmpdir(), 'fnhost-schedule-token-'));
const TOKEN_FILE = join(tokenDir, 'schedule-token');
writeFileSync(TOKEN_FILE, 'schedule-token-value');

function runScript(url: string, tokenFile = TOKEN_FILE, jobName?: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['-e', INVOKE_SCRIPT], {
      env: { FNHOST_INVOKE_URL: url, FNHOST_INVOKE_TIMEOUT_MS: '5000', FNHOST_SCHEDULE_TOKEN_FILE: tokenFile, ...(jobName === undefined ? {} : { FNHOST_JOB_NAME: jobName }) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    child.on('exit', (code) => resolve({ code, output }));
  });
}

describe('operator CronJob invocation script (real process, real HTTP)', function () {
  this.timeout(20_000);
  let server: Server;
  let base: string;
  const seen: Array<{ method?: string; url?: string; token?: string | string[]; scheduled?: string | string[] }> = [];

  before(async () => {
    server = createServer((req, res) => {
      seen.push({ method: req.method, url: req.url, token: req.headers[SCHEDULE_TOKEN_HEADER], ...(req.headers[SCHEDULED_TIME_HEADER] === undefined ? {} : { scheduled: req.headers[SCHEDULED_TIME_HEADER] }) });
      req.resume();
      res.writeHead(req.url!.includes('refused') ? 401 : 200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => {
    server.close();
    rmSync(tokenDir, { recursive: true, force: true });
  });

  it('POSTs to the invocation URL with the schedule token and exits 0 on 2xx', async () => {
    const r = await runScript(`${base}/invoke/f-1`);
    expect(r.code).to.equal(0);
    expect(seen.at(-1)).to.deep.equal({ method: 'POST', url: '/invoke/f-1', token: 'schedule-token-value' });
    expect(JSON.parse(r.output)).to.include({ msg: 'scheduled invocation', status: 200 });
  });

  it("sends the run's planned time, read from the Job's name (the CronJob names it after the scheduled minute); none for another name", async () => {
    // 29437201 minutes since the epoch: 2025-12-20T12:01:00Z.
    expect((await runScript(`${base}/invoke/f-1`, TOKEN_FILE, 'fn-hello-29437201')).code).to.equal(0);
    expect(seen.at(-1)).to.deep.equal({ method: 'POST', url: '/invoke/f-1', token: 'schedule-token-value', scheduled: new Date(29437201 * 60_000).toISOString() });
    expect((await runScript(`${base}/invoke/f-1`, TOKEN_FILE, 'by-hand')).code).to.equal(0);
    expect(seen.at(-1)).to.not.have.property('scheduled');
  });

  it('exits 1 when the gateway refuses, and when it cannot be reached', async () => {
    expect((await runScript(`${base}/invoke/refused`)).code).to.equal(1);
    const unreachable = await runScript('http://127.0.0.1:1/invoke/f-1');
    expect(unreachable.code).to.equal(1);
    expect(unreachable.output).to.contain('scheduled invocation failed');
    expect(unreachable.output).to.not.contain('schedule-token-value');
  });

  it('exits 1 without calling when the token file cannot be read, saying which setting', async () => {
    const before = seen.length;
    const r = await runScript(`${base}/invoke/f-1`, join(tokenDir, 'missing'));
    expect(r.code).to.equal(1);
    expect(JSON.parse(r.output)).to.include({ msg: 'scheduled invocation failed', error: 'cannot read FNHOST_SCHEDULE_TOKEN_FILE (ENOENT)' });
    expect(seen.length).to.equal(before);
  });
});
