import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { startCliPlatform, type CliPlatform } from './helpers/platform.ts';
import { REPO, runCli } from './helpers/run.ts';

// Every example in examples/ created the way a user creates it (issue 30): through the real CLI,
// by the relative path a user types from the checkout's root (whose package.json declares ES
// modules, which a CommonJS example must not be read as), and from a folder outside the
// checkout; then called, and its answer checked against what the example's comments promise.

interface Example {
  file: string;
  flags?: string[];
  path: string;
  check(status: number, body: string): void;
}

const EXAMPLES: Example[] = [
  { file: 'echo.js', path: '/x?a=1&a=2', check: (s, b) => expect(JSON.parse(b)).to.deep.include({ method: 'GET', path: '/x', query: { a: ['1', '2'] } }) },
  { file: 'kv-counter.js', path: '/?name=n', check: (s, b) => expect(JSON.parse(b)).to.deep.include({ name: 'n', count: 1 }) },
  { file: 'cron-job.js', path: '/', check: (s, b) => expect([s, JSON.parse(b).ok]).to.deep.equal([200, true]) },
  { file: 'streaming.js', path: '/', check: (s, b) => expect(b).to.equal('tick 1\ntick 2\ntick 3\ntick 4\ntick 5\ndone\n') },
  { file: 'error.js', path: '/?mode=client', check: (s) => expect(s).to.equal(400) },
  {
    file: 'users-route.js',
    flags: ['--route', '/users/:userId', '--route', '/users/:userId/posts/:postId'],
    path: '/users/42/posts/7',
    check: (s, b) => expect(JSON.parse(b)).to.deep.include({ userId: '42', postId: '7' }),
  },
];

describe('fnhost CLI: every example created as a user creates it (real CLI, real gateway)', function () {
  this.timeout(240_000);
  let p: CliPlatform;
  let outside: string;
  before(async () => {
    p = await startCliPlatform();
    outside = mkdtempSync(join(tmpdir(), 'fnhost-examples-'));
  });
  after(async () => {
    await p?.stop();
    if (outside !== undefined) rmSync(outside, { recursive: true, force: true });
  });

  const createAndCall = async (name: string, example: Example, cwd: string, file: string) => {
    const created = await runCli(['function:create', name, '--file', file, ...(example.flags ?? []), '--output', 'json'], { env: p.env, cwd, timeoutMs: 90_000 });
    expect(created.code, created.stderr).to.equal(0);
    expect(created.stderr, 'no bundler warning').to.equal('');
    const id = (JSON.parse(created.stdout) as { function_id: string }).function_id;
    const res = await fetch(`${p.url}/invoke/${id}${example.path}`);
    const body = await res.text();
    expect(res.status, `${name}: ${body}`).to.not.equal(500);
    example.check(res.status, body);
  };

  for (const example of EXAMPLES) {
    const base = example.file.replace(/\.js$/, '');
    it(`${example.file} from the checkout's root, as examples/${example.file}`, async () => {
      await createAndCall(`${base}-in`, example, REPO, `examples/${example.file}`);
    });
    it(`${example.file} from a folder outside the checkout`, async () => {
      copyFileSync(join(REPO, 'examples', example.file), join(outside, example.file));
      await createAndCall(`${base}-out`, example, outside, example.file);
    });
  }
});
