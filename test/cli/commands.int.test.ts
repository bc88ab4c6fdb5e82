import { expect } from 'chai';
import { readFileSync, statSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { CONTROLLED_HANDLER, startCliPlatform, type CliPlatform } from './helpers/platform.ts';
import { runCli, startCli, waitFor, type RunResult } from './helpers/run.ts';

// Every command and flag of the CLI, run as a process against a real local
// platform: stdout, stderr and exit codes.

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/;

function ok(result: RunResult): RunResult {
  expect(result.code, `exit ${result.code}; stderr: ${result.stderr}`).to.equal(0);
  expect(result.stderr).to.equal('');
  return result;
}

function failed(result: RunResult, code: number, firstLine: string | RegExp): RunResult {
  expect(result.code, `stdout: ${result.stdout}; stderr: ${result.stderr}`).to.equal(code);
  expect(result.stdout).to.equal('');
  const line = result.stderr.split('\n')[0]!;
  if (typeof firstLine === 'string') expect(line).to.equal(`error: ${firstLine}`);
  else expect(line).to.match(firstLine);
  expect(result.stderr).not.to.match(/\n\s+at /);
  return result;
}

describe('fnhost CLI against a real platform', function () {
  this.timeout(120_000);
  let p: CliPlatform;
  let fnhost: (args: string[], extra?: { env?: Record<string, string | undefined>; input?: string }) => Promise<RunResult>;
  let helloId: string;

  before(async () => {
    p = await startCliPlatform();
    fnhost = (args, extra = {}) => runCli(args, { env: { ...p.env, ...extra.env }, input: extra.input, timeoutMs: 60_000 });
  });
  after(async () => {
    await p?.stop();
  });

  describe('function:create, get, list', () => {
    it('creates a function and prints its id and invocation URL', async () => {
      const result = ok(await fnhost(['function:create', 'hello', '--file', p.file('hello.js', CONTROLLED_HANDLER)]));
      const [first, second] = result.stdout.trimEnd().split('\n');
      expect(first).to.match(new RegExp(`^✓ Created function hello \\((${UUID.source})\\)$`));
      helloId = UUID.exec(first!)![0];
      expect(second).to.equal(`Invocation URL: ${p.url}/invoke/${helloId}`);
    });

    it('creates with every setting flag, --output json printing only the record', async () => {
      const result = ok(await fnhost([
        'function:create', 'settings', '--file', p.file('settings.js', CONTROLLED_HANDLER),
        '--env', 'LOG_LEVEL=debug', '--env', 'GREETING=hi=there', '--timeout', '12', '--memory', '64',
        '--route', '/users/:userId', '--route', '/items/:id', '--cron', '0 9 * * 1', '--timezone', 'Europe/Paris', '--output', 'json',
      ]));
      const fn = JSON.parse(result.stdout);
      expect(fn).to.include({ name: 'settings', timeout_seconds: 12, memory_mib: 64, active: true });
      expect(fn.env).to.deep.equal({ LOG_LEVEL: 'debug', GREETING: 'hi=there' });
      expect(fn.routes).to.deep.equal(['/users/:userId', '/items/:id']);
      expect(fn.schedule).to.include({ cron: '0 9 * * 1', timezone: 'Europe/Paris', enabled: true });
      expect(fn.invocation_url).to.equal(`${p.url}/invoke/${fn.function_id}`);
    });

    it('refuses a name that is taken', async () => {
      const result = await fnhost(['function:create', 'hello', '--file', p.file('hello2.js', CONTROLLED_HANDLER)]);
      expect(result.code).to.equal(1);
      expect(result.stdout).to.equal('');
      expect(result.stderr).to.match(/^error: .*hello/);
    });

    it('function:get shows the labelled lines, by name and by UUID', async () => {
      for (const ref of ['hello', helloId]) {
        const { stdout } = ok(await fnhost(['function:get', ref]));
        expect(stdout).to.match(new RegExp(`^ID: +${helloId}$`, 'm'));
        expect(stdout).to.match(/^Name: +hello$/m);
        expect(stdout).to.match(/^Active: +yes$/m);
        expect(stdout).to.match(/^Total Executions: +0$/m);
        expect(stdout).to.match(/^Retention: +none \(keep all\)$/m);
        expect(stdout).to.match(/^Schedule: +none$/m);
        expect(stdout).to.match(/^Timeout: +30s$/m);
        expect(stdout).to.match(/^Memory: +128 MiB$/m);
        expect(stdout).to.match(new RegExp(`^Invocation URL: +${p.url}/invoke/${helloId}$`, 'm'));
        expect(stdout).to.match(/^Created: +\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/m);
        expect(stdout).to.match(/^Updated: +\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/m);
      }
    });

    it('function:get --output json prints only the record', async () => {
      const fn = JSON.parse(ok(await fnhost(['function:get', 'hello', '--output', 'json'])).stdout);
      expect(fn).to.include({ function_id: helloId, name: 'hello', active: true, total_executions: 0 });
      expect(fn.retention).to.deep.equal({ type: 'none' });
    });

    it('function:list shows a table, and {functions:[...]} as JSON', async () => {
      const table = ok(await fnhost(['function:list'])).stdout.split('\n');
      expect(table[0]).to.match(/^Name\s+ID\s+Active\s+Executions\s+Schedule$/);
      expect(table.some((line) => new RegExp(`^hello\\s+${helloId}\\s+yes\\s+0\\s+-$`).test(line))).to.equal(true);
      expect(table.some((line) => /^settings\s+\S+\s+yes\s+0\s+0 9 \* \* 1 \(Europe\/Paris\)$/.test(line))).to.equal(true);
      const json = JSON.parse(ok(await fnhost(['function:list', '--output', 'json'])).stdout);
      expect(json.functions.map((f: { name: string }) => f.name)).to.include.members(['hello', 'settings']);
    });
  });

  describe('function:test', () => {
    it('sends POST / with {} and shows status, duration and body', async () => {
      const { stdout } = ok(await fnhost(['function:test', 'hello']));
      expect(stdout).to.match(/^Status: +✓ 200$/m);
      expect(stdout).to.match(/^Duration: +\d+ms$/m);
      expect(stdout).to.match(/^Log: +log_\S+$/m);
      const body = JSON.parse(stdout.slice(stdout.indexOf('\n\n') + 2));
      expect(body).to.deep.include({ method: 'POST', path: '/', body: {} });
    });

    it('takes --data, --method and --path', async () => {
      const { stdout } = ok(await fnhost(['function:test', 'hello', '--method', 'PUT', '--path', '/users/42?x=1', '--data', '{"name":"Ada"}']));
      const body = JSON.parse(stdout.slice(stdout.indexOf('\n\n') + 2));
      expect(body).to.deep.include({ method: 'PUT', path: '/users/42', query: { x: '1' }, body: { name: 'Ada' } });
    });

    it('exits 1 when the function answers 5xx, showing the error', async () => {
      const thrown = await fnhost(['function:test', 'hello', '--data', '{"throw":"kaboom"}']);
      expect(thrown.code).to.equal(1);
      expect(thrown.stdout).to.match(/^Status: +✗ 500$/m);
      expect(thrown.stdout).to.match(/^Error: +.*kaboom/m);
      const answered = await fnhost(['function:test', 'hello', '--data', '{"status":503}']);
      expect(answered.code).to.equal(1);
      expect(answered.stdout).to.match(/^Status: +✗ 503$/m);
      const client = await fnhost(['function:test', 'hello', '--data', '{"status":404}']);
      expect(client.code).to.equal(0);
      expect(client.stdout).to.match(/^Status: +✗ 404$/m);
    });

    it('a run past its time limit: exit 1, the same function_timeout code as an HTTP call', async () => {
      ok(await fnhost(['function:create', 'spinner', '--timeout', '1', '--file', p.file('spinner.js', 'export default () => { while (true) {} };\n')]));
      const result = await fnhost(['function:test', 'spinner', '--output', 'json']);
      expect(result.code, result.stderr).to.equal(1);
      const test = JSON.parse(result.stdout);
      expect(test).to.include({ status_code: 504 });
      expect(test.body.error).to.equal('function_timeout');
      const text = await fnhost(['function:test', 'spinner']);
      expect(text.code).to.equal(1);
      expect(text.stdout).to.match(/^Status: +✗ 504$/m);
      expect(text.stdout).to.contain('"error": "function_timeout"');
      const { function_id } = JSON.parse(ok(await fnhost(['function:get', 'spinner', '--output', 'json'])).stdout);
      const http = await fetch(`${p.url}/invoke/${function_id}`);
      expect(http.status).to.equal(504);
      expect((await http.json()).error).to.equal('function_timeout');
      ok(await fnhost(['function:delete', 'spinner', '--yes']));
    });

    it('--output json prints only the test result', async () => {
      const result = JSON.parse(ok(await fnhost(['function:test', 'hello', '--data', '{"status":302}', '--output', 'json'])).stdout);
      expect(result.status_code).to.equal(302);
      expect(result.log_id).to.match(/^log_/);
      expect(Number.isInteger(result.execution_time_ms)).to.equal(true);
    });
  });

  describe('function:logs', () => {
    // After the tests above, hello has: 200, 200 (PUT), 500 (throw), 503, 404, 302 — newest last.
    before(async () => {
      await waitFor(async () => JSON.parse((await fnhost(['function:logs', 'hello', '--output', 'json'])).stdout).pagination.totalCount >= 6, 'six log records');
    });

    it('prints the table: header line, columns, markers, footer', async () => {
      const lines = ok(await fnhost(['function:logs', 'hello'])).stdout.trimEnd().split('\n');
      expect(lines[0]).to.equal(`Execution logs for hello (${helloId}); times in UTC`);
      expect(lines[1]).to.match(/^Time\s+Status\s+Duration\s+Error$/);
      const rows = lines.slice(2, -1);
      expect(rows).to.have.length(6);
      for (const row of rows) expect(row).to.match(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d {2}[✓✗•] \d{3}\s+\d+ms {2}\S/);
      expect(rows[0]).to.match(/• 302 /);
      expect(rows[1]).to.match(/✗ 404 /);
      expect(rows[2]).to.match(/✗ 503 /);
      expect(rows[3]).to.match(/✗ 500 .*kaboom/);
      expect(rows[4]).to.match(/✓ 200 .* -$/);
      expect(lines.at(-1)).to.equal('Page 1 of 1 (6 total)');
    });

    it('--output json prints only the spec log list', async () => {
      const page = JSON.parse(ok(await fnhost(['function:logs', 'hello', '--output', 'json'])).stdout);
      expect(Object.keys(page).sort()).to.deep.equal(['logs', 'pagination']);
      expect(page.pagination).to.deep.equal({ currentPage: 1, totalPages: 1, totalCount: 6, hasNextPage: false, hasPrevPage: false });
      expect(page.logs[0].id).to.match(/^log_/);
      expect(page.logs[0].executed_at).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    });

    it('combines --status error --limit 1 --page 2 --output json', async () => {
      const page = JSON.parse(ok(await fnhost(['function:logs', 'hello', '--status', 'error', '--limit', '1', '--page', '2', '--output', 'json'])).stdout);
      expect(page.pagination).to.deep.equal({ currentPage: 2, totalPages: 3, totalCount: 3, hasNextPage: true, hasPrevPage: true });
      expect(page.logs).to.have.length(1);
      expect(page.logs[0].status_code).to.equal(503);
    });

    it('--status success shows 2xx only; the table says so', async () => {
      const { stdout } = ok(await fnhost(['function:logs', 'hello', '--status', 'success']));
      expect(stdout.split('\n')[0]).to.equal(`Execution logs for hello (${helloId}), status success; times in UTC`);
      expect(stdout).not.to.match(/[✗•] \d{3}/);
      expect(stdout).to.contain('Page 1 of 1 (2 total)');
    });

    it('shows the pagination edges: a page past the end, and no records', async () => {
      const past = ok(await fnhost(['function:logs', 'hello', '--page', '9', '--limit', '5'])).stdout;
      expect(past).to.contain('(no executions on page 9; the last page is 2)');
      expect(past.trimEnd().split('\n').at(-1)).to.equal('Page 9 of 2 (6 total)');
      const none = ok(await fnhost(['function:logs', 'settings'])).stdout.trimEnd().split('\n');
      expect(none.slice(2)).to.deep.equal(['(no executions)', 'Page 1 of 1 (0 total)']);
    });

    it('cuts long errors to 80 columns with … when piped; JSON keeps the full text', async () => {
      const long = 'E'.repeat(300);
      await fnhost(['function:test', 'hello', '--data', JSON.stringify({ throw: long })]);
      const row = ok(await fnhost(['function:logs', 'hello', '--limit', '1'])).stdout.split('\n')[2]!;
      expect(Array.from(row)).to.have.length(80);
      expect(row.endsWith('…')).to.equal(true);
      const json = JSON.parse(ok(await fnhost(['function:logs', 'hello', '--limit', '1', '--output', 'json'])).stdout);
      expect(json.logs[0].error_message).to.contain(long);
    });

    it('shows times in the local zone (TZ)', async () => {
      const json = JSON.parse(ok(await fnhost(['function:logs', 'hello', '--limit', '1', '--output', 'json'])).stdout);
      const at = new Date(json.logs[0].executed_at);
      const lines = ok(await fnhost(['function:logs', 'hello', '--limit', '1'], { env: { TZ: 'Asia/Tokyo' } })).stdout.split('\n');
      const shifted = new Date(at.getTime() + 9 * 3600_000).toISOString().replace('T', ' ').slice(0, 19);
      expect(lines[2]!.startsWith(shifted)).to.equal(true);
      // The header line names the zone the Time column is in.
      expect(lines[0]).to.match(/; times in Asia\/Tokyo$/);
    });

    it('colours only when asked: none piped, FORCE_COLOR forces, NO_COLOR wins over a terminal', async () => {
      expect(ok(await fnhost(['function:logs', 'hello'])).stdout).not.to.contain('\u001b[');
      expect(ok(await fnhost(['function:logs', 'hello'], { env: { FORCE_COLOR: '1' } })).stdout).to.contain('\u001b[31m✗');
      expect(ok(await fnhost(['function:logs', 'hello', '--output', 'json'], { env: { FORCE_COLOR: '1' } })).stdout).not.to.contain('\u001b[');
    });

    it('--follow prints new executions as they arrive when piped; with --output json one record per line', async () => {
      const table = startCli(['function:logs', 'hello', '--follow', '--interval', '0.2', '--limit', '2'], { env: p.env });
      const json = startCli(['function:logs', 'hello', '--follow', '--interval', '0.2', '--limit', '2', '--output', 'json'], { env: p.env });
      try {
        await waitFor(() => table.output().stdout.split('\n').length >= 5, 'the first rows of the table');
        await waitFor(() => json.output().stdout.split('\n').length >= 3, 'the first JSON lines');
        expect(table.output().stdout.split('\n')[0]).to.equal(`Execution logs for hello (${helloId}), following; times in UTC`);
        ok(await fnhost(['function:test', 'hello', '--data', '{"status":201}']));
        await waitFor(() => /✓ 201/.test(table.output().stdout), 'the new row in the table');
        await waitFor(() => json.output().stdout.includes('"status_code":201'), 'the new JSON line');
        const lines = json.output().stdout.trimEnd().split('\n');
        expect(lines).to.have.length(3);
        for (const line of lines) expect(JSON.parse(line).id).to.match(/^log_/);
        expect(JSON.parse(lines[2]!).status_code).to.equal(201);
        expect(table.output().stderr).to.equal('');
      } finally {
        await table.stop();
        await json.stop();
      }
    });
  });

  describe('function:retention:set', () => {
    const cases: Array<[string[], string, object]> = [
      [['--type', 'time', '--days', '7'], 'time (7 days)', { type: 'time', days: 7 }],
      [['--type', 'count', '--count', '100'], 'count (100 newest)', { type: 'count', count: 100 }],
      [['--type', 'none'], 'none (keep all)', { type: 'none' }],
    ];
    for (const [flags, text, policy] of cases) {
      it(`${flags.join(' ')}`, async () => {
        expect(ok(await fnhost(['function:retention:set', 'hello', ...flags])).stdout).to.equal(`✓ Retention for hello: ${text}\n`);
        expect(ok(await fnhost(['function:get', 'hello'])).stdout).to.match(new RegExp(`^Retention: +${text.replace(/[()]/g, '\\$&')}$`, 'm'));
        const fn = JSON.parse(ok(await fnhost(['function:retention:set', 'hello', ...flags, '--output', 'json'])).stdout);
        expect(fn.retention).to.deep.equal(policy);
      });
    }
  });

  describe('function:schedule:set and :disable', () => {
    it('sets a schedule, shown with its next run; --timezone; JSON', async () => {
      const { stdout } = ok(await fnhost(['function:schedule:set', 'hello', '--cron', '0 * * * *']));
      expect(stdout).to.match(/^✓ Schedule for hello: 0 \* \* \* \* \(UTC\), next run \d{4}-\d\d-\d\d \d\d:00:00 UTC\n$/);
      expect(ok(await fnhost(['function:get', 'hello'])).stdout).to.match(/^Schedule: +0 \* \* \* \* \(UTC\), next run /m);
      // The next run reads in the schedule's zone and names it, whatever the viewer's zone; the list keeps the zone.
      const tokyo = { env: { TZ: 'Asia/Tokyo' } };
      const paris = ok(await fnhost(['function:schedule:set', 'hello', '--cron', '0 9 * * *', '--timezone', 'Europe/Paris'], tokyo)).stdout;
      expect(paris).to.match(/^✓ Schedule for hello: 0 9 \* \* \* \(Europe\/Paris\), next run \d{4}-\d\d-\d\d 09:00:00 Europe\/Paris\n$/);
      const details = ok(await fnhost(['function:get', 'hello'], tokyo)).stdout;
      expect(details).to.match(/^Schedule: +0 9 \* \* \* \(Europe\/Paris\), next run \d{4}-\d\d-\d\d 09:00:00 Europe\/Paris$/m);
      expect(details).to.match(/^Created: +\d{4}-\d\d-\d\d \d\d:\d\d:\d\d Asia\/Tokyo$/m);
      const row = ok(await fnhost(['function:list'], tokyo)).stdout.split('\n').find((l) => l.startsWith('hello '));
      expect(row).to.match(/  0 9 \* \* \* \(Europe\/Paris\)$/);
      const fn = JSON.parse(ok(await fnhost(['function:schedule:set', 'hello', '--cron', '0 9 * * 1', '--timezone', 'Europe/Paris', '--output', 'json'])).stdout);
      expect(fn.schedule).to.include({ cron: '0 9 * * 1', timezone: 'Europe/Paris', enabled: true });
    });

    it('disables it, keeping the expression; JSON', async () => {
      expect(ok(await fnhost(['function:schedule:disable', 'hello'])).stdout).to.equal('✓ Schedule for hello disabled (kept: 0 9 * * 1 Europe/Paris)\n');
      expect(ok(await fnhost(['function:get', 'hello'])).stdout).to.match(/^Schedule: +disabled \(was 0 9 \* \* 1 \(Europe\/Paris\)\)$/m);
      const fn = JSON.parse(ok(await fnhost(['function:schedule:disable', 'hello', '--output', 'json'])).stdout);
      expect(fn.schedule).to.include({ enabled: false });
    });

    it('disabling a function without a schedule says so and succeeds', async () => {
      ok(await fnhost(['function:create', 'plain', '--file', p.file('plain.js', CONTROLLED_HANDLER)]));
      expect(ok(await fnhost(['function:schedule:disable', 'plain'])).stdout).to.equal('plain has no schedule; nothing to disable\n');
    });
  });

  describe('function:deactivate, activate, deploy', () => {
    it('deactivates and activates; get and JSON show the state', async () => {
      expect(ok(await fnhost(['function:deactivate', 'hello'])).stdout).to.match(/^✓ Function hello is inactive/);
      expect(ok(await fnhost(['function:get', 'hello'])).stdout).to.match(/^Active: +no$/m);
      expect(JSON.parse(ok(await fnhost(['function:deactivate', 'hello', '--output', 'json'])).stdout).active).to.equal(false);
      // function:test is refused as an HTTP call is: exit 1, the API's message, nothing recorded.
      const before = JSON.parse(ok(await fnhost(['function:get', 'hello', '--output', 'json'])).stdout).total_executions;
      const refused = failed(await fnhost(['function:test', 'hello']), 1, 'function hello is inactive; activate it to invoke it');
      expect(refused.stderr.split('\n')[1]).to.equal('hint: run fnhost function:activate hello first');
      expect(JSON.parse(ok(await fnhost(['function:get', 'hello', '--output', 'json'])).stdout).total_executions).to.equal(before);
      expect(ok(await fnhost(['function:activate', 'hello'])).stdout).to.equal('✓ Function hello is active\n');
      expect(JSON.parse(ok(await fnhost(['function:activate', 'hello', '--output', 'json'])).stdout).active).to.equal(true);
      expect(ok(await fnhost(['function:get', 'hello'])).stdout).to.match(/^Active: +yes$/m);
    });

    it('deploys new code (and settings)', async () => {
      const v2 = p.file('v2.js', 'export default (req, res) => res.json({ version: 2, level: process.env.LOG_LEVEL });\n');
      const { stdout } = ok(await fnhost(['function:deploy', 'hello', '--file', v2, '--env', 'LOG_LEVEL=warn']));
      expect(stdout).to.equal(`✓ Deployed new code to hello (${helloId})\nInvocation URL: ${p.url}/invoke/${helloId}\n`);
      const test = ok(await fnhost(['function:test', 'hello', '--output', 'json']));
      expect(JSON.parse(test.stdout).body).to.deep.equal({ version: 2, level: 'warn' });
      const fn = JSON.parse(ok(await fnhost(['function:deploy', 'hello', '--file', v2, '--timeout', '5', '--output', 'json'])).stdout);
      expect(fn.timeout_seconds).to.equal(5);
    });
  });

  describe('errors from the server', () => {
    it('an unknown function: exit 4, one line naming it', async () => {
      failed(await fnhost(['function:get', 'nosuch']), 4, `function "nosuch" not found at ${p.url}`);
      failed(await fnhost(['function:logs', 'nosuch', '--output', 'json']), 4, `function "nosuch" not found at ${p.url}`);
      failed(await fnhost(['function:logs', 'nosuch']), 4, `function "nosuch" not found at ${p.url}`);
      failed(await fnhost(['function:test', 'nosuch']), 4, `function "nosuch" not found at ${p.url}`);
      failed(await fnhost(['function:retention:set', 'nosuch', '--type', 'none']), 4, `function "nosuch" not found at ${p.url}`);
    });

    it('a wrong token: exit 3, naming where the token came from', async () => {
      failed(await fnhost(['function:list'], { env: { FNHOST_TOKEN: 'wrong' } }), 3, new RegExp(`^error: the server at ${p.url} rejected the token from FNHOST_TOKEN`));
      failed(await fnhost(['function:get', 'hello', '--token', 'wrong']), 3, new RegExp(`^error: the server at ${p.url} rejected the token from --token`));
      failed(await fnhost(['function:get', 'hello'], { env: { FNHOST_TOKEN: undefined } }), 3, `the server at ${p.url} needs a token and none was found`);
    });
  });

  describe('a URL that is not the API root', () => {
    it('a path such as /admin: exit 2, naming the URL and the root to use, for commands and login', async () => {
      const admin = `${p.url}/admin`;
      for (const args of [['function:get', 'hello'], ['function:logs', 'hello'], ['function:list']]) {
        const result = failed(await fnhost(args, { env: { FNHOST_URL: admin } }), 2, new RegExp(`^error: ${admin} \\(from FNHOST_URL\\) is not the root of an fnhost API: GET /api/v1/info there answered 404`));
        expect(result.stderr.split('\n')[1]).to.equal(`hint: use the gateway's root URL, ${p.url}: the API is at /api/v1 there (the path /admin is not part of it)`);
      }
      const env = { FNHOST_URL: undefined, FNHOST_TOKEN: undefined };
      failed(await fnhost(['login', '--url', admin, '--token', p.token], { env }), 2, new RegExp(`^error: ${admin} \\(from --url\\) is not the root of an fnhost API`));
      expect(existsSync(join(p.home, '.config', 'fnhost', 'config.json'))).to.equal(false);
    });

    it("the admin panel's port: exit 2, saying to use the main port", async () => {
      const result = failed(await fnhost(['function:get', 'hello'], { env: { FNHOST_URL: p.adminUrl } }), 2, new RegExp(`^error: ${p.adminUrl} \\(from FNHOST_URL\\) is not the root of an fnhost API: GET /api/v1/info there answered 404`));
      expect(result.stderr.split('\n')[1]).to.equal("hint: use the gateway's main URL (its PORT), not the admin panel's (FNHOST_ADMIN_PORT, by default PORT+1)");
    });

    it("the panel's own address (its port and /admin/): exit 2, saying it is the panel's, with or without a token", async () => {
      const panel = `${p.adminUrl}/admin/`;
      for (const env of [{ FNHOST_URL: panel }, { FNHOST_URL: panel, FNHOST_TOKEN: undefined }]) {
        const result = failed(await fnhost(['function:list'], { env }), 2, `${p.adminUrl}/admin (from FNHOST_URL) is the admin panel's address, not the API's: the CLI talks to the gateway's main URL`);
        expect(result.stderr).not.to.contain('token');
      }
    });

    it('https:// against the plain-HTTP gateway: says so and names the http:// URL, without a port-forward hint', async () => {
      const https = p.url.replace(/^http:/, 'https:');
      const result = failed(await fnhost(['function:list'], { env: { FNHOST_URL: https } }), 1, new RegExp(`^error: the server at ${https} answers plain HTTP, not HTTPS`));
      expect(result.stderr.split('\n')[1]).to.equal(`hint: use ${p.url} (--url, FNHOST_URL or the URL saved by fnhost login); the gateway serves HTTPS only behind a TLS proxy or Ingress`);
    });
  });

  describe('connection resolution', () => {
    it('reads the local token file for a loopback URL: ./.fnhost/token, or FNHOST_DATA_DIR/token', async () => {
      const { mkdtempSync, mkdirSync, writeFileSync, rmSync } = await import('node:fs');
      const { tmpdir } = await import('node:os');
      const dir = mkdtempSync(join(tmpdir(), 'fnhost-cli-cwd-'));
      try {
        mkdirSync(join(dir, '.fnhost'));
        writeFileSync(join(dir, '.fnhost', 'token'), `${p.token}\n`);
        const env = { ...p.env, FNHOST_TOKEN: undefined };
        const fromCwd = await runCli(['function:get', 'hello'], { env, cwd: dir });
        expect(fromCwd.code, fromCwd.stderr).to.equal(0);
        mkdirSync(join(dir, 'data'));
        writeFileSync(join(dir, 'data', 'token'), 'not-the-token-0123456789');
        const fromDataDir = await runCli(['function:get', 'hello'], { env: { ...env, FNHOST_DATA_DIR: 'data' }, cwd: dir });
        expect(fromDataDir.code).to.equal(3);
        expect(fromDataDir.stderr).to.contain(`rejected the token from ${join(dir, 'data', 'token')}`);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });

  describe('login', () => {
    it('verifies and saves URL and token (mode 0600); later commands use them', async () => {
      const env = { FNHOST_URL: undefined, FNHOST_TOKEN: undefined };
      const path = join(p.home, '.config', 'fnhost', 'config.json');
      const refused = failed(await fnhost(['login', '--url', p.url, '--token', 'wrong'], { env }), 3, `the gateway at ${p.url} refused the token (401 unauthorized); nothing was saved`);
      expect(refused.stderr.split('\n')[1]).to.match(/^hint: check the token/);
      expect(refused.stderr).not.to.contain('run fnhost login');
      expect(existsSync(path)).to.equal(false);
      expect(ok(await fnhost(['login', '--url', p.url, '--token', p.token], { env })).stdout).to.equal(`✓ Logged in to ${p.url}; saved to ${path}\n`);
      expect(statSync(path).mode & 0o777).to.equal(0o600);
      expect(JSON.parse(readFileSync(path, 'utf8'))).to.deep.equal({ url: p.url, token: p.token });
      expect(ok(await fnhost(['function:get', 'hello'], { env })).stdout).to.match(/^Name: +hello$/m);
      // The token on stdin, as gh auth login --with-token.
      ok(await fnhost(['login', '--url', p.url], { env, input: `${p.token}\n` }));
    });
  });

  describe('function:delete', () => {
    it('refuses without --yes when stdin is not a terminal; deletes with --yes', async () => {
      failed(await fnhost(['function:delete', 'plain']), 2, 'refusing to delete plain without confirmation: stdin is not a terminal');
      expect(ok(await fnhost(['function:get', 'plain'])).stdout).to.match(/^Name: +plain$/m);
      expect(ok(await fnhost(['function:delete', 'plain', '--yes'])).stdout).to.match(new RegExp(`^✓ Deleted function plain \\(${UUID.source}\\)\n$`));
      failed(await fnhost(['function:get', 'plain']), 4, `function "plain" not found at ${p.url}`);
      failed(await fnhost(['function:delete', 'plain', '--yes']), 4, `function "plain" not found at ${p.url}`);
    });
  });
});
