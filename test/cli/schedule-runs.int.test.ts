import { expect } from 'chai';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGateway, type RunningGateway } from '../helpers/platform.ts';
import { pollUntil } from '../helpers/wait.ts';
import { BIN, NEUTRAL_CWD, cleanEnv, isolatedHome, runCli, type RunResult } from './helpers/run.ts';
import { TmuxSession } from './helpers/tmux.ts';

// function:schedule:runs and function:schedule:run as processes against a
// real gateway process (its own clock, SQLite), the ledger's table in a real
// terminal (tmux), and a gateway stopped across a planned minute and started
// again: the missed run starts late and the ledger says how late.

const HANDLER = `export default (req, res) => res.json({ trigger: req.headers['x-fnhost-trigger'], method: req.method, body: req.body })`;

describe('fnhost function:schedule:runs and :run (real gateway process)', function () {
  this.timeout(180_000);
  let gw: RunningGateway;
  let dataDir: string;
  let files: string;
  const home = isolatedHome();
  const env = () => ({ ...home.env, FNHOST_URL: gw.url, FNHOST_TOKEN: gw.token, TZ: 'UTC' });
  const fnhost = (args: string[]): Promise<RunResult> => runCli(args, { env: env(), timeoutMs: 60_000 });
  const sessions: TmuxSession[] = [];

  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'fnhost-cli-ledger-'));
    files = await mkdtemp(join(tmpdir(), 'fnhost-cli-ledger-fns-'));
    await writeFile(join(files, 'h.js'), HANDLER);
    gw = await startGateway({ dataDir, keepDataDir: true });
  });
  afterEach(async () => {
    while (sessions.length > 0) await sessions.pop()!.kill();
  });
  after(async () => {
    await gw?.stop();
    home.cleanup();
    await rm(dataDir, { recursive: true, force: true });
    await rm(files, { recursive: true, force: true });
  });

  it('fires the schedule by hand: the request a scheduled run sends, recorded as a manual schedule run', async () => {
    expect((await fnhost(['function:create', 'nightly', '--file', join(files, 'h.js'), '--cron', '0 3 * * *', '--timezone', 'Asia/Tokyo'])).code).to.equal(0);
    const fired = await fnhost(['function:schedule:run', 'nightly']);
    expect(fired.code, fired.stderr).to.equal(0);
    expect(fired.stdout).to.match(/^Fired the schedule by hand \(recorded as a manual schedule run\)\.$/m);
    expect(fired.stdout).to.match(/^Status: +✓ 200$/m);
    expect(fired.stdout).to.contain('"trigger": "schedule"');
    const json = JSON.parse((await fnhost(['function:schedule:run', 'nightly', '--output', 'json'])).stdout);
    expect(json).to.deep.include({ status_code: 200, trigger: 'schedule', manual: true });
    expect(json.body).to.deep.equal({ trigger: 'schedule', method: 'POST', body: {} });
  });

  it("lists the ledger in a terminal, newest first, in the schedule's zone, with the next planned runs", async () => {
    const t = await TmuxSession.start([process.execPath, BIN, 'function:schedule:runs', 'nightly'], {
      env: Object.fromEntries(Object.entries(cleanEnv(env())).filter((e): e is [string, string] => e[1] !== undefined)),
      cwd: NEUTRAL_CWD, width: 130, height: 20,
    });
    sessions.push(t);
    expect(await t.waitForExit()).to.equal(0);
    const screen = await t.screen({ history: true });
    expect(screen).to.match(/^Schedule: 0 3 \* \* \* \(Asia\/Tokyo\); overlapping runs: forbid; a run missed while down starts up to 300s late$/m);
    expect(screen).to.match(/^Times in: Asia\/Tokyo \(the schedule's zone\)$/m);
    // 03:00 in Tokyo, five days running.
    expect(screen).to.match(/^Next: +(\d{4}-\d\d-\d\d 03:00:00(, )?){5}$/m);
    expect(screen).to.match(/^PLANNED +LAG +DURATION +LOG +OUTCOME$/m);
    const rows = screen.split('\n').filter((line) => / manual /.test(line));
    expect(rows).to.have.length(2);
    for (const row of rows) expect(row).to.match(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d manual +0ms +\d+ms +log_\S+ +✓ 200$/);
  });

  it('refuses clearly: a function without a schedule, an unknown function, a bad --limit', async () => {
    expect((await fnhost(['function:create', 'plain', '--file', join(files, 'h.js')])).code).to.equal(0);
    const none = await fnhost(['function:schedule:run', 'plain']);
    expect(none.code).to.equal(1);
    expect(none.stderr).to.match(/^error: .*plain has no schedule/);
    const unknown = await fnhost(['function:schedule:runs', 'missing']);
    expect(unknown.code).to.not.equal(0);
    expect(unknown.stderr).to.match(/^error: .*missing/);
    const limit = await fnhost(['function:schedule:runs', 'nightly', '--limit', '0']);
    expect(limit.code).to.equal(2);
    expect(limit.stderr).to.match(/--limit/);
  });

  it('a gateway stopped across a planned minute starts that run late at its next start, and the ledger shows the lag', async () => {
    expect((await fnhost(['function:create', 'ticker', '--file', join(files, 'h.js'), '--cron', '* * * * *'])).code).to.equal(0);
    expect(await gw.stop()).to.equal(0);
    const missedMinute = Math.ceil((Date.now() + 1) / 60_000) * 60_000;
    // Down until the planned minute has passed (up to a minute).
    await pollUntil('the planned minute to pass while the gateway is down', async () => Date.now() > missedMinute + 200 || undefined, 75_000, 100);
    gw = await startGateway({ dataDir, keepDataDir: true, token: gw.token });
    const planned = new Date(missedMinute).toISOString();
    const run = await pollUntil('the late run in the ledger', async () => {
      const r = await fnhost(['function:schedule:runs', 'ticker', '--output', 'json']);
      return (JSON.parse(r.stdout).runs as any[]).find((x) => x.planned_at === planned && x.outcome === 'ran');
    }, 60_000, 200);
    expect(run.manual).to.equal(false);
    expect(run.lag_ms).to.be.greaterThan(0);
    expect(run.status_code).to.equal(200);
    const logs = JSON.parse((await fnhost(['function:logs', 'ticker', '--output', 'json'])).stdout);
    expect(logs.logs.map((l: any) => l.id)).to.include(run.log_id);
  });
});
