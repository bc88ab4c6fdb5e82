import { expect } from 'chai';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { BIN, REPO, cleanEnv, isolatedHome, runCli, type RunResult } from './helpers/run.ts';

// Bad input needs no server: each case is one `error:` line (plus maybe a
// hint), exit code 2, nothing on stdout and no stack trace.

function expectUsage(result: RunResult, message: string | RegExp): void {
  expect(result.code, result.stderr).to.equal(2);
  expect(result.stdout).to.equal('');
  const lines = result.stderr.trimEnd().split('\n');
  expect(lines.length).to.be.at.most(2);
  if (typeof message === 'string') expect(lines[0]).to.equal(`error: ${message}`);
  else expect(lines[0]).to.match(message);
  if (lines[1] !== undefined) expect(lines[1]).to.match(/^hint: /);
  expect(result.stderr).not.to.match(/\n\s+at /);
}

const PACKAGE_JSON = join(REPO, 'package.json');

describe('fnhost CLI: usage errors and help (real process)', function () {
  const home = isolatedHome();
  const env = { ...home.env, FNHOST_URL: 'http://127.0.0.1:9', FNHOST_TOKEN: 't' };
  after(() => home.cleanup());

  const cases: Array<[string[], string | RegExp]> = [
    [['nosuch'], 'unknown command "nosuch"'],
    [['function:lgs', 'x'], 'unknown command "function:lgs"'],
    [['function:logs', 'x', '--bogus'], 'unknown flag "--bogus" for function:logs'],
    [['function:logs'], 'function:logs needs a <function> argument'],
    [['function:logs', 'x', '--limit', '0'], '--limit must be an integer from 1 to 1000, got "0"'],
    [['function:logs', 'x', '--limit', '2.5'], '--limit must be an integer from 1 to 1000, got "2.5"'],
    [['function:logs', 'x', '--limit=-5'], '--limit must be an integer from 1 to 1000, got "-5"'],
    [['function:logs', 'x', '--limit', '-5'], '--limit must be an integer from 1 to 1000, got "-5"'],
    [['function:logs', 'x', '--status'], 'flag --status needs a value: success, error or all'],
    [['function:logs', 'x', '--limit', '1001'], '--limit must be an integer from 1 to 1000, got "1001"'],
    [['function:logs', 'x', '--page', '0'], '--page must be a positive integer, got "0"'],
    [['function:logs', 'x', '--page', 'two'], '--page must be a positive integer, got "two"'],
    [['function:logs', 'x', '--status', 'failed'], '--status must be success, error or all, got "failed"'],
    [['function:logs', 'x', '--output', 'yaml'], '--output must be json or text, got "yaml"'],
    [['function:logs', 'x', '--limit'], 'flag --limit needs a value'],
    [['function:logs', 'Not_A_Name'], /^error: function name "Not_A_Name" is invalid/],
    [['function:retention:set', 'x'], 'function:retention:set needs --type time|count|none'],
    [['function:retention:set', 'x', '--type', 'time'], '--type time needs --days <int>: how many days of logs to keep'],
    [['function:retention:set', 'x', '--type', 'count'], '--type count needs --count <int>: how many of the newest logs to keep'],
    [['function:retention:set', 'x', '--type', 'count', '--days', '3'], '--days goes with --type time; --type count takes --count'],
    [['function:retention:set', 'x', '--type', 'time', '--days', '0'], '--days must be an integer from 1 to 3650, got "0"'],
    [['function:retention:set', 'x', '--type', 'time', '--days', '-1'], '--days must be an integer from 1 to 3650, got "-1"'],
    [['function:retention:set', 'x', '--type', 'time', '--days', '1.5'], '--days must be an integer from 1 to 3650, got "1.5"'],
    [['function:retention:set', 'x', '--type', 'forever'], '--type must be time, count or none, got "forever"'],
    [['function:retention:set', 'x', '--type', 'none', '--count', '3'], '--type none keeps all logs and takes neither --days nor --count'],
    [['function:schedule:set', 'x'], 'function:schedule:set needs --cron "<expr>"'],
    [['function:schedule:set', 'x', '--cron', '61 * * * *'], /^error: cron expression "61 \* \* \* \*": minute field "61" is invalid/],
    [['function:schedule:set', 'x', '--cron', '0 25 * * *'], /hour field "25" is invalid/],
    [['function:schedule:set', 'x', '--cron', '* * * *'], /has 4 fields; expected 5/],
    [['function:schedule:set', 'x', '--cron', '0 0 * * *', '--timezone', 'Mars/Base'], /timezone "Mars\/Base" is not an IANA zone name/],
    [['function:test', 'x', '--data', '{bad'], /^error: --data is not valid JSON/],
    [['function:create', 'x'], 'function:create needs --file <path>: the module that exports the handler'],
    [['function:create', 'x', '--file', 'no/such/file.js'], '--file no/such/file.js: no such file'],
    [['function:create', 'x', '--file', PACKAGE_JSON, '--env', 'NOEQUALS'], '--env "NOEQUALS" must be KEY=VALUE'],
    [['function:create', 'x', '--file', PACKAGE_JSON, '--timeout', '0'], '--timeout must be an integer from 1 to 900, got "0"'],
    [['function:delete', 'x', '--output', 'json'], 'unknown flag "--output" for function:delete'],
    [['function:get', 'x', '--url', 'ftp://x'], '--url "ftp://x" must start with http:// or https://'],
    [['function:create', 'x', '--file', PACKAGE_JSON, '--memory', '16'], 'memory (MiB) must be at least 32, got 16'],
    [['--colour'], /^error: unknown flag "--colour"/],
  ];
  for (const [args, message] of cases) {
    it(`fnhost ${args.join(' ')}`, async () => expectUsage(await runCli(args, { env }), message));
  }

  it('suggests the command that was probably meant', async () => {
    const result = await runCli(['function:lgs', 'x'], { env });
    expect(result.stderr).to.contain('hint: did you mean fnhost function:logs?');
  });

  it('prints the main help, every command help, and the version on stdout with exit 0', async () => {
    const main = await runCli(['--help'], { env });
    expect(main.code).to.equal(0);
    expect(main.stderr).to.equal('');
    for (const name of ['function:logs', 'function:retention:set', 'function:schedule:set', 'function:schedule:disable', 'function:get', 'function:test',
      'function:create', 'function:deploy', 'function:list', 'function:delete', 'function:activate', 'function:deactivate', 'login']) {
      expect(main.stdout).to.contain(name);
      const help = await runCli([name, '--help'], { env });
      expect(help.code, name).to.equal(0);
      expect(help.stdout).to.contain(`Usage:\n  fnhost ${name}`);
      expect(help.stdout).to.contain('--url <url>');
    }
    const version = await runCli(['--version'], { env });
    expect(version.stdout).to.match(/^fnhost \d+\.\d+\.\d+\n$/);
  });

  it('names an unreachable server, exit 1, and shows the stack only with FNHOST_DEBUG=1', async () => {
    // A port that was just free: nothing listens there.
    const port = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    const url = `http://127.0.0.1:${port}`;
    const result = await runCli(['function:logs', 'hello', '--output', 'json', '--url', url], { env });
    expect(result.code).to.equal(1);
    expect(result.stdout).to.equal('');
    expect(result.stderr.split('\n')[0]).to.equal(`error: cannot reach the fnhost server at ${url} (ECONNREFUSED)`);
    expect(result.stderr).not.to.match(/\n\s+at /);
    const debug = await runCli(['function:get', 'hello', '--url', url], { env: { ...env, FNHOST_DEBUG: '1' } });
    expect(debug.code).to.equal(1);
    expect(debug.stderr).to.match(/\n\s+at /);
  });

  it('runs through the node_modules/.bin/fnhost link that npm makes from cli/package.json', async () => {
    const { execFile } = await import('node:child_process');
    const { dirname } = await import('node:path');
    const bin = join(REPO, 'node_modules', '.bin', 'fnhost');
    const result = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
      const child = execFile(bin, ['--version'], { env: { ...cleanEnv(env), PATH: `${dirname(process.execPath)}:${process.env.PATH}` } }, (_err, stdout) =>
        resolve({ code: child.exitCode, stdout }),
      );
    });
    expect(result.code).to.equal(0);
    expect(result.stdout).to.match(/^fnhost \d+\.\d+\.\d+\n$/);
  });
});
