import { relative } from 'node:path';
import { expect } from 'chai';
import { CONTROLLED_HANDLER, startCliPlatform, type CliPlatform } from './helpers/platform.ts';
import { NEUTRAL_CWD, runCli, type RunResult } from './helpers/run.ts';

// Issue 20.1 through the real CLI process: broken code is refused at function:create and
// function:deploy with the line and column, exit 1, and nothing is created or replaced. Since
// issue 19 the CLI bundles the file first, so a syntax error is the bundler's, placed in the
// user's file; a module that parses but exports no handler is still the gateway's refusal.

describe('fnhost CLI: broken code is refused (issue 20.1)', function () {
  this.timeout(120_000);
  let p: CliPlatform;
  const fnhost = (args: string[]): Promise<RunResult> => runCli(args, { env: p.env, timeoutMs: 60_000 });

  before(async () => {
    p = await startCliPlatform();
  });
  after(async () => {
    await p?.stop();
  });

  it('function:create of a file with a syntax error: exit 1, the error with its line and column, nothing created', async () => {
    const file = p.file('broken.js', 'export default function handler(req, res) {\n  res.json({ ok: true }\n}\n');
    const result = await fnhost(['function:create', 'broken', '--file', file]);
    expect(result.code, `stdout: ${result.stdout}; stderr: ${result.stderr}`).to.equal(1);
    expect(result.stdout).to.equal('');
    expect(result.stderr.split('\n').slice(0, 2)).to.deep.equal([`error: cannot bundle ${relative(NEUTRAL_CWD, file)}:`, `  ${relative(NEUTRAL_CWD, file)}:3:1: Expected ")" but found "}"`]);
    expect(result.stderr).not.to.match(/\.mjs|\/fn\/|\n\s+at /);
    const get = await fnhost(['function:get', 'broken']);
    expect(get.code).to.equal(4);
  });

  it('function:create of a module without a default export: exit 1, says how to export one', async () => {
    const result = await fnhost(['function:create', 'nohandler', '--file', p.file('nohandler.js', 'export const answer = 42;\n')]);
    expect(result.code, result.stderr).to.equal(1);
    expect(result.stderr.split('\n')[0]).to.match(/^error: code exports no handler: use `export default function \(req, res\)/);
    expect((await fnhost(['function:get', 'nohandler'])).code).to.equal(4);
  });

  it('function:deploy of broken code: exit 1, and the old code keeps serving', async () => {
    expect((await fnhost(['function:create', 'kept', '--file', p.file('kept.js', CONTROLLED_HANDLER)])).code).to.equal(0);
    const file = p.file('kept2.js', 'module.exports = (req, res) => {\n  res.send(1;\n};\n');
    const result = await fnhost(['function:deploy', 'kept', '--file', file]);
    expect(result.code, result.stderr).to.equal(1);
    expect(result.stderr.split('\n')[1]).to.equal(`  ${relative(NEUTRAL_CWD, file)}:2:13: Expected ")" but found ";"`);
    const test = await fnhost(['function:test', 'kept', '--data', '{"x":1}', '--output', 'json']);
    expect(test.code, test.stderr).to.equal(0);
    expect(JSON.parse(test.stdout)).to.deep.include({ status_code: 200 });
    expect(JSON.parse(test.stdout).body.body).to.deep.equal({ x: 1 });
  });
});
