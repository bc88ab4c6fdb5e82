import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { MAX_CODE_REF_BYTES } from '../../core/src/limits.ts';
import { pollUntil } from '../helpers/wait.ts';
import { installFixtureProject, type FixtureProject } from '../helpers/fixture-project.ts';
import { startCliPlatform, type CliPlatform } from './helpers/platform.ts';
import { runCli, type RunResult } from './helpers/run.ts';

// Issue 19 through the real CLI process against a real one-machine gateway (sandboxed runtimes
// when the machine can): a TypeScript handler importing real registry packages (nanoid ESM-only,
// escape-html CommonJS, debug with its own dependency ms) is bundled at create and answers; its
// thrown error's stack names the user's file and line in function:logs; a native addon, a
// missing package and a syntax error are refused at create with the user's file:line:column.

describe('fnhost CLI: handlers that import packages are bundled (issue 19)', function () {
  this.timeout(240_000);
  let p: CliPlatform;
  let project: FixtureProject;
  let functionId: string;
  const fnhost = (args: string[]): Promise<RunResult> => runCli(args, { env: p.env, cwd: project.dir, timeoutMs: 90_000 });
  const invoke = (path: string) => fetch(`${p.url}/invoke/${functionId}${path}`);

  before(async () => {
    [p, project] = await Promise.all([startCliPlatform(), installFixtureProject()]);
  });
  after(async () => {
    await p?.stop();
    project?.remove();
  });

  it('function:create of a TypeScript handler with ESM-only, CommonJS and nested packages: created, and it answers', async () => {
    const created = await fnhost(['function:create', 'packages', '--file', 'src/handler.ts', '--output', 'json']);
    expect(created.code, created.stderr).to.equal(0);
    functionId = (JSON.parse(created.stdout) as { function_id: string }).function_id;
    const res = await invoke('/?name=Ada');
    const body = (await res.json()) as Record<string, unknown>;
    expect(res.status, JSON.stringify(body)).to.equal(200);
    expect(body).to.include({ html: '&lt;b&gt;Ada&lt;/b&gt;', idLength: 8, debugNamespace: 'fixture' });
    expect(body.id).to.match(/^[\w-]{8}$/);
  });

  it('a thrown error: function:logs shows the message and the stack at the user\'s file and line, no server path', async () => {
    const res = await invoke('/boom');
    expect(res.status).to.equal(500);
    // The stack is the owner's: the caller gets neither the header nor the frames.
    expect(res.headers.get('x-fnhost-error-stack')).to.equal(null);
    expect(await res.text()).not.to.include('handler.ts');
    const record = await pollUntil(
      'the record of the failed call',
      async () => {
        const logs = await fnhost(['function:logs', 'packages', '--status', 'error', '--output', 'json']);
        return (JSON.parse(logs.stdout) as { logs: Array<{ error_message: string; error_stack?: string }> }).logs[0];
      },
      30_000,
      200,
    );
    expect(record.error_message).to.equal('Error: fixture exploded');
    expect(record.error_stack?.split('\n')).to.deep.equal(['at explode (src/handler.ts:20:9)', 'at handler (src/handler.ts:13:29)']);
    const table = await fnhost(['function:logs', 'packages', '--status', 'error', '--stack']);
    expect(table.code, table.stderr).to.equal(0);
    expect(table.stdout).to.include('    Error: fixture exploded\n      at explode (src/handler.ts:20:9)\n      at handler (src/handler.ts:13:29)');
    expect(table.stdout).not.to.match(/\/tmp\/|fnhost-|\.mjs/);
  });

  it('function:deploy bundles too: a new version of the handler answers', async () => {
    const deployed = await fnhost(['function:deploy', 'packages', '--file', 'src/handler.ts', '--timeout', '10']);
    expect(deployed.code, deployed.stderr).to.equal(0);
    expect((await invoke('/?name=Grace')).status).to.equal(200);
  });

  it('a module whose top level throws: refused at create with the error at the user\'s file and line; stored with --allow-load-error, its record says where', async () => {
    const refused = await fnhost(['function:create', 'loadfail', '--file', 'src/throws-at-load.ts']);
    expect(refused.code).to.equal(1);
    expect(refused.stdout).to.equal('');
    expect(refused.stderr.split('\n').slice(0, 2)).to.deep.equal([
      'error: code throws while loading: Error: FIXTURE_GREETING is not set (at src/throws-at-load.ts:4:28)',
      'hint: give it what it needs (--env KEY=VALUE for a missing variable), or store it anyway with --allow-load-error',
    ]);
    const withEnv = await fnhost(['function:create', 'loadok', '--file', 'src/throws-at-load.ts', '--env', 'FIXTURE_GREETING=hi']);
    expect(withEnv.code, withEnv.stderr).to.equal(0);
    const created = await fnhost(['function:create', 'loadfail', '--file', 'src/throws-at-load.ts', '--allow-load-error']);
    expect(created.code, created.stderr).to.equal(0);
    const test = await fnhost(['function:test', 'loadfail', '--output', 'json']);
    expect(JSON.parse(test.stdout).error_message).to.equal('the module threw while loading: Error: FIXTURE_GREETING is not set (at src/throws-at-load.ts:4:28)');
  });

  it('a native addon is refused at create, naming the package and the import', async () => {
    const result = await fnhost(['function:create', 'native', '--file', 'src/native.ts']);
    expect(result.code, result.stderr).to.equal(1);
    expect(result.stderr).to.include('error: cannot bundle src/native.ts:\n  src/native.ts:1:19: package "native-addon-fixture" is a native addon');
    expect((await fnhost(['function:get', 'native'])).code).to.equal(4);
  });

  it('a missing package is refused at create with the file, line and column of its import', async () => {
    const result = await fnhost(['function:create', 'missing', '--file', 'src/missing.ts']);
    expect(result.code, result.stderr).to.equal(1);
    expect(result.stderr).to.include('  src/missing.ts:2:21: Could not resolve "left-pad"\nhint: packages resolve from the handler\'s project (this folder): run npm install left-pad there');
    expect((await fnhost(['function:get', 'missing'])).code).to.equal(4);
  });

  it('code that does not parse is refused at create with the line and column in the user\'s source', async () => {
    const result = await fnhost(['function:create', 'broken', '--file', 'src/broken.ts']);
    expect(result.code, result.stderr).to.equal(1);
    expect(result.stderr).to.include('  src/broken.ts:2:29: Expected "}" but found ";"');
    expect((await fnhost(['function:get', 'broken'])).code).to.equal(4);
  });

  it('fnhost bundle -o writes the module create sends: packages inside, only Node built-ins imported, a source map', async () => {
    const result = await fnhost(['bundle', 'src/handler.ts', '-o', 'out.mjs']);
    expect(result.code, result.stderr).to.equal(0);
    expect(result.stdout).to.match(new RegExp(`^✓ Bundled src/handler.ts into out.mjs \\(\\d+ bytes of the ${MAX_CODE_REF_BYTES}-byte limit, source map included\\)\\n$`));
    const code = readFileSync(join(project.dir, 'out.mjs'), 'utf8');
    const imported = [...code.matchAll(/\bfrom\s*"([^"]+)"|\bfrom\s*'([^']+)'/g)].map((m) => m[1] ?? m[2]);
    expect(imported.length).to.be.greaterThan(0);
    for (const name of imported) expect(name).to.match(/^node:/);
    expect(code).to.include('//# sourceMappingURL=data:application/json;base64,');
    expect(existsSync(join(project.dir, 'fnhost-bundle.mjs'))).to.equal(false);
  });
});
