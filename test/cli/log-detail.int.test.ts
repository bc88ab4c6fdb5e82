import { expect } from 'chai';
import { startCliPlatform, type CliPlatform } from './helpers/platform.ts';
import { runCli, waitFor, type RunResult } from './helpers/run.ts';

// function:logs <fn> --id <log-id> and function:get's latency lines, as processes against a real
// local platform (the interactive table's Enter is in the tmux suite, test/cli/pager.int.test.ts).

const PRINTER = `
export default (req, res) => {
  console.log('hello from the handler');
  console.error('a warning');
  setTimeout(() => console.log('later'), 20);
  res.json({ ok: true });
}`;

describe('fnhost function:logs --id and function:get latency', function () {
  this.timeout(120_000);
  let p: CliPlatform;
  let fnhost: (args: string[]) => Promise<RunResult>;
  let logId: string;

  before(async () => {
    p = await startCliPlatform();
    fnhost = (args) => runCli(args, { env: p.env, timeoutMs: 60_000 });
    const created = await fnhost(['function:create', 'printer', '--file', p.file('printer.js', PRINTER), '--output', 'json']);
    expect(created.code, created.stderr).to.equal(0);
    const id = JSON.parse(created.stdout).function_id;
    const r = await fetch(`${p.url}/invoke/${id}`);
    expect(r.status).to.equal(200);
    await r.arrayBuffer();
    logId = JSON.parse((await fnhost(['function:logs', 'printer', '--output', 'json'])).stdout).logs[0].id;
    await waitFor(async () => JSON.parse((await fnhost(['function:logs', 'printer', '--id', logId, '--output', 'json'])).stdout).console !== null, 'the console output');
  });
  after(async () => {
    await p?.stop();
  });

  it('prints the record\'s fields, then its console output with offsets and streams', async () => {
    const r = await fnhost(['function:logs', 'printer', '--id', logId]);
    expect(r.code, r.stderr).to.equal(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]).to.equal(`Log ID:     ${logId}`);
    expect(r.stdout).to.match(/^Status: +✓ 200$/m);
    expect(r.stdout).to.match(/^Trigger: +http$/m);
    expect(r.stdout).to.match(/^Cold start: +(yes \(waited \d+ms for a runtime\)|no.*)$/m);
    const at = lines.indexOf('Console output (3 lines):');
    expect(at).to.be.greaterThan(0);
    expect(lines.slice(at + 1).map((l) => l.replace(/^ *\+\d+ms /, ''))).to.deep.equal(['out hello from the handler', 'err a warning', 'out later']);
  });

  it('prints the detail object as JSON, output included', async () => {
    const detail = JSON.parse((await fnhost(['function:logs', 'printer', '--id', logId, '--output', 'json'])).stdout);
    expect(detail).to.include({ id: logId, status_code: 200, trigger: 'http' });
    expect(detail.console.lines.map((l: { text: string }) => l.text)).to.deep.equal(['hello from the handler', 'a warning', 'later']);
  });

  it('says clearly when the log id is unknown (exit 4) or not a log id (exit 2)', async () => {
    const unknown = await fnhost(['function:logs', 'printer', '--id', 'log_nosuchlog000000000']);
    expect(unknown.code).to.equal(4);
    expect(unknown.stdout).to.equal('');
    expect(unknown.stderr.split('\n')[0]).to.equal('error: function printer has no execution log "log_nosuchlog000000000" (it never existed, or its retention removed it; fnhost function:logs printer lists the ones kept)');
    const bad = await fnhost(['function:logs', 'printer', '--id', 'nope']);
    expect(bad.code).to.equal(2);
    expect(bad.stderr).to.match(/^error: --id must be an execution log id/);
    const mixed = await fnhost(['function:logs', 'printer', '--id', logId, '--status', 'error']);
    expect(mixed.code).to.equal(2);
    expect(mixed.stderr).to.match(/--status does not go with --id/);
  });

  it('function:get shows counts and percentiles over the last hour and day', async () => {
    const r = await fnhost(['function:get', 'printer']);
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stdout).to.match(/^Last Hour: +1 execution, p50 \d+ms, p95 \d+ms, p99 \d+ms, [01] cold starts?$/m);
    expect(r.stdout).to.match(/^Last Day: +1 execution, p50 \d+ms/m);
  });
});
