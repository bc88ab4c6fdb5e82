import { expect } from 'chai';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGateway, type RunningGateway } from '../helpers/platform.ts';
import { isolatedHome, runCli, type RunResult } from './helpers/run.ts';

// function:invoke (the public path, as a caller makes it; --async and --wait),
// function:async and function:async:retry as processes against a real gateway
// process (SQLite, real runtimes).

const ECHO = `export default (req, res) => res.status(req.headers['x-fail'] ? 500 : 200).json({ trigger: req.headers['x-fnhost-trigger'], method: req.method, path: req.path, auth: req.headers.authorization ?? null, body: req.body })`;

describe('fnhost function:invoke, function:async and :retry (real gateway process)', function () {
  this.timeout(180_000);
  let gw: RunningGateway;
  let files: string;
  const home = isolatedHome();
  const fnhost = (args: string[]): Promise<RunResult> => runCli(args, { env: { ...home.env, FNHOST_URL: gw.url, FNHOST_TOKEN: gw.token }, timeoutMs: 90_000 });

  before(async () => {
    files = await mkdtemp(join(tmpdir(), 'fnhost-cli-async-'));
    await writeFile(join(files, 'h.js'), ECHO);
    gw = await startGateway({ env: { FNHOST_ASYNC_RETRY_BASE_MS: '50', FNHOST_ASYNC_POLL_MS: '50' } });
    const created = await fnhost(['function:create', 'echo', '--file', join(files, 'h.js')]);
    expect(created.code, created.stderr).to.equal(0);
  });
  after(async () => {
    await gw?.stop();
    home.cleanup();
    await rm(files, { recursive: true, force: true });
  });

  it('calls through /invoke as a caller (trigger http, the caller\'s headers), and through /async-invoke with --wait', async () => {
    const sync = await fnhost(['function:invoke', 'echo', '-X', 'PUT', '--path', '/a/b', '--data', '{"n":1}', '-H', 'Authorization: Bearer caller', '--output', 'json']);
    expect(sync.code, sync.stderr).to.equal(0);
    const answer = JSON.parse(JSON.parse(sync.stdout).body);
    expect(answer).to.deep.equal({ trigger: 'http', method: 'PUT', path: '/a/b', auth: 'Bearer caller', body: { n: 1 } });

    const waited = await fnhost(['function:invoke', 'echo', '--async', '--wait', '--data', '{"n":2}']);
    expect(waited.code, waited.stderr).to.equal(0);
    expect(waited.stdout).to.match(/^State: +succeeded$/m);
    expect(waited.stdout).to.match(/^Attempts: 1: 200$/m);
    expect(waited.stdout).to.contain('"trigger": "async"');

    const queued = await fnhost(['function:invoke', 'echo', '--async', '--output', 'json']);
    expect(JSON.parse(queued.stdout).async_id).to.match(/^async_/);
    expect((await fnhost(['function:invoke', 'echo', '--wait'])).code).to.equal(2);
  });

  it('lists a dead call and requeues it', async () => {
    const failed = await fnhost(['function:invoke', 'echo', '--async', '--wait', '-H', 'X-Fail: 1']);
    expect(failed.code).to.equal(1);
    expect(failed.stdout).to.match(/^State: +dead \(retries_exhausted\)$/m);
    expect(failed.stdout).to.match(/^Attempts: 1: 500, 2: 500, 3: 500$/m);
    const id = /^Async: +(async_\S+)$/m.exec(failed.stdout)![1]!;
    const listed = await fnhost(['function:async', 'echo']);
    expect(listed.code, listed.stderr).to.equal(0);
    expect(listed.stdout).to.match(new RegExp(`^${id} +dead +3 `, 'm'));
    expect((await fnhost(['function:async:retry', 'echo'])).code).to.equal(2);
    const retried = await fnhost(['function:async:retry', 'echo', id]);
    expect(retried.code, retried.stderr).to.equal(0);
    expect(retried.stdout).to.contain('Requeued 1 dead call.');
  });
});
