import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { buildPackage, MIN_NODE } from '../../cli/pack/build.ts';
import { startCliPlatform, type CliPlatform } from './helpers/platform.ts';
import { TmuxSession } from './helpers/tmux.ts';
import { pollUntil } from '../helpers/wait.ts';

// The CLI as a user outside the repository gets it (issue 20, item 6): built
// and packed (cli/pack/build.ts), installed with `npm install -g --prefix`
// by the machine's own Node and npm (/usr/bin, Node 20 here, not the
// project's Node 24), and run from a folder outside the checkout: --version,
// commands against a real gateway, and the interactive log table (Ink) in a
// real terminal.

const SYSTEM_BIN = '/usr/bin';
const run = promisify(execFile);

describe('the packed CLI installed with the system Node and npm', function () {
  this.timeout(240_000);
  let work: string;
  let prefix: string;
  let outside: string;
  let env: Record<string, string>;
  let p: CliPlatform;
  let session: TmuxSession | undefined;
  let systemNode = '';

  const fnhost = (args: string[], extra: Record<string, string> = {}) =>
    run(join(prefix, 'bin', 'fnhost'), args, { cwd: outside, env: { ...env, ...extra }, timeout: 60_000 }).then(
      (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
      (err: { code?: number; stdout?: string; stderr?: string }) => ({ code: typeof err.code === 'number' ? err.code : -1, stdout: err.stdout ?? '', stderr: err.stderr ?? '' }),
    );

  before(async () => {
    if (!existsSync(join(SYSTEM_BIN, 'node')) || !existsSync(join(SYSTEM_BIN, 'npm'))) throw new Error(`${SYSTEM_BIN}/node and ${SYSTEM_BIN}/npm are needed: apt-get install nodejs npm`);
    work = await mkdtemp(join(tmpdir(), 'fnhost-pkg-'));
    prefix = join(work, 'prefix');
    outside = join(work, 'somewhere');
    await run('mkdir', ['-p', outside]);
    // Only the system's programs: no node_modules/.bin, no project Node on PATH. npm's cache is
    // the machine's (where `make install` left esbuild, the package's one dependency): with
    // --offline below, the install may read it but reach no registry.
    const npmCache = (await run(join(SYSTEM_BIN, 'npm'), ['config', 'get', 'cache'], { env: { PATH: `${SYSTEM_BIN}:/bin`, HOME: process.env.HOME ?? '/root' } })).stdout.trim();
    env = { PATH: `${SYSTEM_BIN}:/bin`, HOME: join(work, 'home'), npm_config_cache: npmCache, npm_config_update_notifier: 'false' };
    // npm ci leaves esbuild's tarballs in that cache but not its packuments (the lock file names
    // the tarballs), and an offline install of a tarball that depends on esbuild resolves it from
    // its packument: fetch both packages into the cache first, as a user's install would fetch them
    // from the registry (docs/cli.md: the package's one dependency). A machine whose cache already
    // holds them reaches no registry here either.
    const esbuild = JSON.parse(await readFile(new URL('../../cli/package.json', import.meta.url), 'utf8')).dependencies.esbuild as string;
    await run(join(SYSTEM_BIN, 'npm'), ['cache', 'add', `esbuild@${esbuild}`, `@esbuild/${process.platform}-${process.arch}@${esbuild}`], { env, timeout: 120_000 });
    systemNode = (await run(join(SYSTEM_BIN, 'node'), ['--version'], { env })).stdout.trim();
    p = await startCliPlatform();
  });
  after(async () => {
    await session?.kill();
    await p?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  it('packs as @fnhost/cli with every dependency but esbuild bundled and its minimum Node stated', async () => {
    const { tarball, dir, version } = await buildPackage();
    const manifest = JSON.parse(await readFile(join(dir, 'package.json'), 'utf8'));
    expect(manifest).to.include({ name: '@fnhost/cli', version });
    expect(manifest.bin).to.deep.equal({ fnhost: 'bin/fnhost.js' });
    expect(manifest.engines).to.deep.equal({ node: `>=${MIN_NODE}` });
    // Core and the libraries are bundled; esbuild (function:create's bundler) finds its native binary beside its files.
    expect(manifest.dependencies).to.deep.equal({ esbuild: JSON.parse(await readFile(new URL('../../cli/package.json', import.meta.url), 'utf8')).dependencies.esbuild });
    // --offline: the install may not reach any registry.
    const installed = await run(join(SYSTEM_BIN, 'npm'), ['install', '-g', '--prefix', prefix, '--offline', '--no-audit', '--no-fund', tarball], { env, cwd: outside, timeout: 120_000 });
    expect(installed.stderr).not.to.match(/ERR!/);
    expect(existsSync(join(prefix, 'bin', 'fnhost'))).to.equal(true);
  });

  it(`runs fnhost --version from a folder outside the repository on the system Node`, async () => {
    expect(Number(systemNode.slice(1).split('.')[0]), `system node ${systemNode}`).to.be.at.least(20);
    const r = await fnhost(['--version']);
    expect(r.stderr).to.equal('');
    expect(r.stdout).to.equal(`fnhost ${JSON.parse(await readFile(new URL('../../cli/package.json', import.meta.url), 'utf8')).version}\n`);
  });

  it('creates, lists and tests a function against a real gateway', async () => {
    const remote = { FNHOST_URL: p.env.FNHOST_URL!, FNHOST_TOKEN: p.env.FNHOST_TOKEN! };
    const file = join(outside, 'hello.js');
    await writeFile(file, `export default (req, res) => res.json({ hello: 'from the packed CLI' });\n`);
    const created = await fnhost(['function:create', 'packed', '--file', file], remote);
    expect(created.code, created.stderr).to.equal(0);
    expect(created.stdout).to.contain('packed');
    const list = await fnhost(['function:list', '--output', 'json'], remote);
    expect(list.code, list.stderr).to.equal(0);
    const listed = JSON.parse(list.stdout);
    expect((Array.isArray(listed) ? listed : listed.functions).map((f: { name: string }) => f.name)).to.include('packed');
    const tested = await fnhost(['function:test', 'packed'], remote);
    expect(tested.code, tested.stderr).to.equal(0);
    expect(tested.stdout).to.contain('from the packed CLI');
  });

  it('draws the interactive log table (Ink) in a real terminal on the system Node', async () => {
    // The test run's record is written by the gateway's log writer shortly after the run.
    await pollUntil('the test run\'s record', async () => JSON.parse((await fnhost(['function:logs', 'packed', '--output', 'json'], { FNHOST_URL: p.env.FNHOST_URL!, FNHOST_TOKEN: p.env.FNHOST_TOKEN! })).stdout).pagination.totalCount === 1, 20_000, 200);
    const termEnv = { ...env, FNHOST_URL: p.env.FNHOST_URL!, FNHOST_TOKEN: p.env.FNHOST_TOKEN!, TZ: 'UTC', TERM: 'tmux-256color' };
    session = await TmuxSession.start([join(prefix, 'bin', 'fnhost'), 'function:logs', 'packed'], { env: termEnv, cwd: outside, width: 110, height: 30 });
    const screen = await session.waitForScreen((s) => s.includes('Page 1 of 1 (1 total)'), 'the log table');
    expect(screen).to.match(/^Execution logs for packed/m);
    await session.sendKeys('q');
    expect(await session.waitForExit()).to.equal(0);
  });
});

describe('npx fnhost inside the repository', function () {
  this.timeout(60_000);
  let copy: string;
  before(async () => {
    // A checkout as cloned: the root manifest and the CLI, no node_modules of its own.
    copy = await mkdtemp(join(tmpdir(), 'fnhost-clone-'));
    await writeFile(join(copy, 'package.json'), await readFile(new URL('../../package.json', import.meta.url)));
    await symlink(fileURLToPath(new URL('../../cli', import.meta.url)), join(copy, 'cli'));
    await mkdir(join(copy, 'examples'));
  });
  after(async () => {
    if (copy) await rm(copy, { recursive: true, force: true });
  });

  it('runs the checkout\'s own CLI, never a package named fnhost from a registry (offline: asking one would fail)', async () => {
    const env = { PATH: `${dirname(process.execPath)}:${SYSTEM_BIN}:/bin`, HOME: join(copy, 'home'), npm_config_cache: join(copy, 'npm-cache'), npm_config_update_notifier: 'false' };
    for (const cwd of [copy, join(copy, 'examples')]) {
      const r = await run(join(SYSTEM_BIN, 'npx'), ['--offline', 'fnhost', '--version'], { cwd, env, timeout: 30_000 });
      expect(r.stdout, cwd).to.match(/^fnhost \d+\.\d+\.\d+\n$/);
    }
  });

  it('under the system Node (npm\'s own), in the installed checkout: no engine warning before the output', async () => {
    // npm checks the root manifest's engines against the Node that runs npm itself (the system's,
    // 20 here); the CLI then runs on the Node 24 that npm ci put in node_modules/.bin.
    const repo = fileURLToPath(new URL('../..', import.meta.url));
    const env = { PATH: `${SYSTEM_BIN}:/bin`, HOME: join(copy, 'home'), npm_config_cache: join(copy, 'npm-cache'), npm_config_update_notifier: 'false' };
    const r = await run(join(SYSTEM_BIN, 'npx'), ['--offline', 'fnhost', '--version'], { cwd: repo, env, timeout: 30_000 });
    expect(r.stdout).to.match(/^fnhost \d+\.\d+\.\d+\n$/);
    expect(r.stderr).to.equal('');
  });
});
