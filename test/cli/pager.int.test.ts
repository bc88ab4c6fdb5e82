import { expect } from 'chai';
import { CONTROLLED_HANDLER, startCliPlatform, type CliPlatform } from './helpers/platform.ts';
import { BIN, NEUTRAL_CWD, cleanEnv, runCli, waitFor } from './helpers/run.ts';
import { TmuxSession } from './helpers/tmux.ts';

// The terminal paths, driven in a real terminal (tmux): the interactive
// pager's keys, --follow's live rows, and delete's confirmation prompt.

describe('fnhost CLI in a terminal (tmux)', function () {
  this.timeout(120_000);
  let p: CliPlatform;
  const sessions: TmuxSession[] = [];

  async function terminal(args: string[], size = { width: 110, height: 30 }, extraEnv: Record<string, string> = {}): Promise<TmuxSession> {
    const env = Object.fromEntries(Object.entries(cleanEnv({ ...p.env, TZ: 'UTC', ...extraEnv })).filter((e): e is [string, string] => e[1] !== undefined));
    const session = await TmuxSession.start([process.execPath, BIN, ...args], { env, cwd: NEUTRAL_CWD, ...size });
    sessions.push(session);
    return session;
  }

  before(async () => {
    p = await startCliPlatform();
    const fnhost = (args: string[]) => runCli(args, { env: p.env, timeoutMs: 60_000 });
    expect((await fnhost(['function:create', 'paged', '--file', p.file('paged.js', CONTROLLED_HANDLER)])).code).to.equal(0);
    // Five executions, oldest first: 200, 500, 200, 404, 200.
    for (const data of ['{}', '{"throw":"first failure"}', '{}', '{"status":404}', '{}']) await fnhost(['function:test', 'paged', '--data', data]);
    await waitFor(async () => JSON.parse((await fnhost(['function:logs', 'paged', '--output', 'json'])).stdout).pagination.totalCount === 5, 'five records');
  });
  afterEach(async () => {
    while (sessions.length > 0) await sessions.pop()!.kill();
  });
  after(async () => {
    await p?.stop();
  });

  it('pages with n/p and the arrows, cycles the status filter with s, quits with q', async () => {
    const t = await terminal(['function:logs', 'paged', '--limit', '2']);
    let screen = await t.waitForScreen((s) => s.includes('Page 1 of 3 (5 total)'), 'page 1');
    expect(screen).to.match(/^Execution logs for paged \(.*\); times in UTC$/m);
    expect(screen).to.match(/^Time\s+Status\s+Duration\s+Error$/m);
    expect(screen).to.contain('s status: all');
    await t.sendKeys('n');
    screen = await t.waitForScreen((s) => s.includes('Page 2 of 3 (5 total)'), 'page 2 after n');
    expect(screen).to.match(/✗ 500 .*first failure/);
    // Redrawn in place: the title appears once, not once per page.
    expect(screen.match(/Execution logs for paged/g)).to.have.length(1);
    await t.sendKeys('Right');
    await t.waitForScreen((s) => s.includes('Page 3 of 3 (5 total)'), 'page 3 after →');
    await t.sendKeys('n');
    await t.sendKeys('Left');
    await t.waitForScreen((s) => s.includes('Page 2 of 3 (5 total)'), 'page 2 after ← (n on the last page does nothing)');
    await t.sendKeys('p');
    await t.waitForScreen((s) => s.includes('Page 1 of 3 (5 total)'), 'page 1 after p');
    await t.sendKeys('s');
    screen = await t.waitForScreen((s) => s.includes('s status: success') && s.includes('Page 1 of 2 (3 total)'), 'the success filter');
    expect(screen).to.contain('status success');
    expect(screen).not.to.match(/✗ \d{3}/);
    await t.sendKeys('s');
    screen = await t.waitForScreen((s) => s.includes('s status: error') && s.includes('Page 1 of 1 (2 total)'), 'the error filter');
    expect(screen).to.match(/✗ 404/);
    expect(screen).to.match(/✗ 500/);
    // r reloads: a new error appears without leaving the pager.
    expect((await runCli(['function:test', 'paged', '--data', '{"status":418}'], { env: p.env })).code).to.equal(0);
    await t.sendKeys('r');
    screen = await t.waitForScreen((s) => s.includes('Page 1 of 2 (3 total)') && /✗ 418/.test(s), 'the reloaded error page');
    await t.sendKeys('q');
    expect(await t.waitForExit()).to.equal(0);
  });

  it('--follow shows new executions as they arrive, and q stops it', async () => {
    const t = await terminal(['function:logs', 'paged', '--follow', '--interval', '0.2', '--limit', '3']);
    await t.waitForScreen((s) => s.includes('3 shown') && s.includes('following every 0.2s'), 'the first three rows');
    expect((await runCli(['function:test', 'paged', '--data', '{"status":202}'], { env: p.env })).code).to.equal(0);
    const screen = await t.waitForScreen((s) => s.includes('4 shown') && s.includes('✓ 202'), 'the new row');
    expect(screen.match(/Execution logs for paged/g)).to.have.length(1);
    await t.sendKeys('q');
    expect(await t.waitForExit()).to.equal(0);
  });

  it('a page taller than the terminal shows a window of rows that follows the selection ↓/↑ move, without clearing the screen', async () => {
    const t = await terminal(['function:logs', 'paged', '--limit', '10'], { width: 110, height: 10 });
    let screen = await t.waitForScreen((s) => /Page 1 of 1 \(7 total\) · rows 1–5 of 7/.test(s), 'the first window');
    expect(screen).to.contain('↑/↓ select · Enter open');
    // The selection starts on the newest row and moves down the window before the window moves.
    for (let i = 0; i < 6; i++) await t.sendKeys('Down');
    screen = await t.waitForScreen((s) => s.includes('rows 3–7 of 7'), 'the last window (↓ stops at the end)');
    expect(screen.match(/Execution logs for paged/g)).to.have.length(1);
    for (let i = 0; i < 5; i++) await t.sendKeys('Up');
    await t.waitForScreen((s) => s.includes('rows 2–6 of 7'), 'the window one row up once the selection leaves its top');
    await t.sendKeys('q');
    expect(await t.waitForExit()).to.equal(0);
  });

  it('Enter opens the selected record with its console output; Esc goes back to the table', async () => {
    const fnhost = (args: string[]) => runCli(args, { env: p.env, timeoutMs: 60_000 });
    expect((await fnhost(['function:create', 'chatty', '--file', p.file('chatty.js', `export default (req, res) => {
      console.log('chatty says', req.query.n);
      console.error('chatty warns');
      res.status(Number(req.query.s ?? 200)).json({});
    }`)])).code).to.equal(0);
    const id = JSON.parse((await fnhost(['function:get', 'chatty', '--output', 'json'])).stdout).function_id;
    for (const [n, s] of [['one', 200], ['two', 503]]) await (await fetch(`${p.url}/invoke/${id}?n=${n}&s=${s}`)).arrayBuffer();
    const newest = JSON.parse((await fnhost(['function:logs', 'chatty', '--output', 'json'])).stdout).logs as Array<{ id: string }>;
    for (const log of newest) {
      await waitFor(async () => JSON.parse((await fnhost(['function:logs', 'chatty', '--id', log.id, '--output', 'json'])).stdout).console !== null, 'console output');
    }
    const t = await terminal(['function:logs', 'chatty']);
    await t.waitForScreen((s) => s.includes('Page 1 of 1 (2 total)'), 'the table');
    // The newest row (503) is selected: Enter opens it.
    await t.sendKeys('Enter');
    let screen = await t.waitForScreen((s) => s.includes('Console output (2 lines):'), 'the opened record');
    expect(screen).to.contain(`Log ID:     ${newest[0]!.id}`);
    expect(screen).to.match(/Status: +✗ 503/);
    expect(screen).to.match(/\+\d+ms out chatty says two/);
    expect(screen).to.match(/\+\d+ms err chatty warns/);
    expect(screen).to.contain('Esc/Enter back to the table');
    await t.sendKeys('Escape');
    await t.waitForScreen((s) => s.includes('Page 1 of 1 (2 total)'), 'back to the table');
    await t.sendKeys('Down');
    await t.sendKeys('Enter');
    screen = await t.waitForScreen((s) => s.includes(`Log ID:     ${newest[1]!.id}`), 'the older record');
    expect(screen).to.match(/\+\d+ms out chatty says one/);
    await t.sendKeys('q');
    expect(await t.waitForExit()).to.equal(0);
  });

  it('function:delete asks on a terminal: n keeps the function (exit 5), y deletes it', async () => {
    expect((await runCli(['function:create', 'doomed', '--file', p.file('doomed.js', CONTROLLED_HANDLER)], { env: p.env })).code).to.equal(0);
    const no = await terminal(['function:delete', 'doomed']);
    await no.waitForScreen((s) => /Delete function doomed \(.*\) and all its execution logs\? \[y\/N\]/.test(s), 'the prompt');
    await no.sendKeys('n', 'Enter');
    expect(await no.waitForExit()).to.equal(5);
    expect(await no.screen()).to.contain('error: not deleted: doomed is unchanged');
    expect((await runCli(['function:get', 'doomed'], { env: p.env })).code).to.equal(0);
    const yes = await terminal(['function:delete', 'doomed']);
    await yes.waitForScreen((s) => s.includes('[y/N]'), 'the prompt');
    await yes.sendKeys('y', 'Enter');
    expect(await yes.waitForExit()).to.equal(0);
    expect(await yes.screen()).to.match(/✓ Deleted function doomed/);
    expect((await runCli(['function:get', 'doomed'], { env: p.env })).code).to.equal(4);
  });

  it('colours on a terminal, and not with NO_COLOR', async () => {
    const coloured = await terminal(['function:get', 'paged']);
    expect(await coloured.waitForExit()).to.equal(0);
    expect(await coloured.screen({ escapes: true })).to.match(/\u001b\[[0-9;]*m/);
    const plain = await terminal(['function:get', 'paged'], undefined, { NO_COLOR: '1' });
    expect(await plain.waitForExit()).to.equal(0);
    const screen = await plain.screen({ escapes: true });
    expect(screen).to.match(/^Active: +yes$/m);
    expect(screen).not.to.match(/\u001b\[[0-9;]*m/);
  });
});
