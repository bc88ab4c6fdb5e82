import { expect } from 'chai';
import { startCliPlatform, type CliPlatform } from './helpers/platform.ts';
import { BIN, NEUTRAL_CWD, cleanEnv, runCli } from './helpers/run.ts';
import { TmuxSession } from './helpers/tmux.ts';

// function:replay and the recording flags through the real binary against a
// real gateway; the confirmation question in a real terminal (tmux).

const V1 = `export default (req, res) => res.json({ v: 1, got: req.body ?? null })`;
const V2 = `export default (req, res) => res.json({ v: 2, got: req.body ?? null })`;
const FIX = `export default (req, res) => res.status(201).json({ v: 3, got: req.body ?? null })`;

describe('fnhost function:replay (CLI)', function () {
  this.timeout(120_000);
  let p: CliPlatform;
  let logId: string;
  const sessions: TmuxSession[] = [];
  const fnhost = (args: string[]) => runCli(args, { env: p.env, timeoutMs: 60_000 });

  async function terminal(args: string[]): Promise<TmuxSession> {
    const env = Object.fromEntries(Object.entries(cleanEnv({ ...p.env, TZ: 'UTC' })).filter((e): e is [string, string] => e[1] !== undefined));
    const session = await TmuxSession.start([process.execPath, BIN, ...args], { env, cwd: NEUTRAL_CWD, width: 220, height: 30 });
    sessions.push(session);
    return session;
  }

  before(async () => {
    p = await startCliPlatform();
    const created = await fnhost(['function:create', 'pay', '--file', p.file('v1.js', V1), '--record-requests', 'on', '--redact-json', '$..card.number', '--redact-header', 'x-card-token', '--record-body-limit', '4096']);
    expect(created.code, created.stderr).to.equal(0);
    const test = await fnhost(['function:test', 'pay', '--data', '{"card":{"number":"4111","holder":"Ada"}}', '--output', 'json']);
    expect(test.code, test.stderr).to.equal(0);
    logId = JSON.parse(test.stdout).log_id;
    expect((await fnhost(['function:deploy', 'pay', '--file', p.file('v2.js', V2)])).code).to.equal(0);
  });
  afterEach(async () => {
    while (sessions.length > 0) await sessions.pop()!.kill();
  });
  after(async () => {
    await p?.stop();
  });

  it('function:get shows the recording setting; bad recording flags are usage errors naming them', async () => {
    const get = await fnhost(['function:get', 'pay']);
    expect(get.stdout).to.match(/^Record Requests:\s+on \(bodies up to 4096 bytes; masked: x-card-token, \$\.\.card\.number\)$/m);
    const badOnOff = await fnhost(['function:deploy', 'pay', '--file', p.file('v2.js', V2), '--record-requests', 'maybe']);
    expect(badOnOff.code).to.equal(2);
    expect(badOnOff.stderr).to.match(/--record-requests must be on or off, got "maybe"/);
    const badPath = await fnhost(['function:deploy', 'pay', '--file', p.file('v2.js', V2), '--redact-json', 'card.number']);
    expect(badPath.code).to.equal(2);
    expect(badPath.stderr).to.match(/JSON path "card.number" is invalid/);
  });

  it('refuses without a terminal and without --yes; with --yes prints the structural difference', async () => {
    const refused = await fnhost(['function:replay', 'pay', logId]);
    expect(refused.code).to.equal(2);
    expect(refused.stderr).to.match(/refusing to replay without confirmation: stdin is not a terminal/);
    expect(refused.stderr).to.match(/hint: pass --yes/);
    const done = await fnhost(['function:replay', 'pay', logId, '--yes']);
    expect(done.code, done.stderr).to.equal(0);
    expect(done.stdout).to.match(new RegExp(`^Replayed ${logId} against the deployed code of pay: new record log_\\S+ \\(trigger replay`, 'm'));
    expect(done.stdout).to.contain('body $.v\n  - 1\n  + 2');
    // The masked card number went out masked and came back masked: no difference there.
    expect(done.stdout).to.not.contain('card');
    const json = await fnhost(['function:replay', 'pay', logId, '--yes', '--output', 'json']);
    const result = JSON.parse(json.stdout);
    expect(result.changes).to.deep.equal([{ kind: 'json', path: '$.v', recorded: 1, replayed: 2 }]);
    const logs = JSON.parse((await fnhost(['function:logs', 'pay', '--limit', '1', '--output', 'json'])).stdout);
    expect(logs.logs[0]).to.include({ id: result.log_id, trigger: 'replay' });
  });

  it('--code runs a local module once as a throwaway version; the deployed code stays', async () => {
    const done = await fnhost(['function:replay', 'pay', logId, '--code', p.file('fix.js', FIX), '--yes']);
    expect(done.code, done.stderr).to.equal(0);
    expect(done.stdout).to.contain('against a throwaway version of pay (not deployed)');
    expect(done.stdout).to.contain('status\n  - 200\n  + 201');
    expect(done.stdout).to.contain('body $.v\n  - 1\n  + 3');
    const after = JSON.parse((await fnhost(['function:test', 'pay', '--output', 'json'])).stdout);
    expect(after.body.v).to.equal(2);
  });

  it('clear errors: an unknown log id (exit 4), a record without its request (exit 1, naming why)', async () => {
    const unknown = await fnhost(['function:replay', 'pay', 'log_nosuchrecord0000000', '--yes']);
    expect(unknown.code).to.equal(4);
    expect(unknown.stderr).to.match(/error: log "log_nosuchrecord0000000" not found for function pay/);
    expect((await fnhost(['function:create', 'plain', '--file', p.file('v1.js', V1)])).code).to.equal(0);
    const plainLog = JSON.parse((await fnhost(['function:test', 'plain', '--output', 'json'])).stdout).log_id;
    const notRecorded = await fnhost(['function:replay', 'plain', plainLog, '--yes']);
    expect(notRecorded.code).to.equal(1);
    expect(notRecorded.stderr).to.match(/plain does not record requests \(record_requests is off\)/);
  });

  it('asks in a terminal: n cancels (exit 5, nothing runs), y replays', async () => {
    const before = JSON.parse((await fnhost(['function:logs', 'pay', '--output', 'json'])).stdout).pagination.totalCount;
    const no = await terminal(['function:replay', 'pay', logId]);
    await no.waitForScreen((s) => s.includes(`Replay POST / (${logId}`) && s.includes('It runs for real (KV writes, outbound calls). [y/N]'), 'the question');
    await no.sendKeys('n', 'Enter');
    expect(await no.waitForExit()).to.equal(5);
    expect(await no.screen()).to.contain('not replayed: nothing ran');
    expect(JSON.parse((await fnhost(['function:logs', 'pay', '--output', 'json'])).stdout).pagination.totalCount).to.equal(before);
    const yes = await terminal(['function:replay', 'pay', logId]);
    await yes.waitForScreen((s) => s.includes('[y/N]'), 'the question');
    await yes.sendKeys('y', 'Enter');
    const screen = await yes.waitForScreen((s) => s.includes('+ 2'), 'the difference');
    expect(screen).to.contain('body $.v');
    expect(await yes.waitForExit()).to.equal(0);
  });
});
