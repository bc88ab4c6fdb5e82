import { expect } from 'chai';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sandboxArgv, type SandboxArgv } from '../../gateway/src/sandbox/argv.ts';
import { CgroupV1 } from '../../gateway/src/sandbox/cgroup.ts';
import { isLoopbackHost, sandboxStatus, SandboxUnavailableError } from '../../gateway/src/sandbox/fallback.ts';
import { loadSandboxSettings } from '../../gateway/src/sandbox/settings.ts';
import { UidAllocator } from '../../gateway/src/sandbox/uids.ts';
import { ConfigError } from '../../gateway/src/config.ts';

const base: SandboxArgv = {
  bwrap: '/usr/bin/bwrap',
  prlimit: '/usr/bin/prlimit',
  system: [{ path: '/usr' }, { path: '/lib', symlink: 'usr/lib' }],
  binds: [
    { fd: 4, dest: '/fn' },
    { fd: 5, dest: '/run/fnhost', writable: true },
  ],
  infoFd: 3,
  tmpBytes: 1048576,
  limits: { processes: 256, openFiles: 4096, fileBytes: 67108864 },
  cgroupProcs: [],
  command: ['/node', '/rt/main.ts'],
  cwd: '/fn',
};

/** The values following each occurrence of a flag. */
function after(argv: string[], flag: string, count = 1): string[][] {
  const out: string[][] = [];
  argv.forEach((a, i) => {
    if (a === flag) out.push(argv.slice(i + 1, i + 1 + count));
  });
  return out;
}

describe('sandbox: the bwrap command line (pure)', () => {
  it('starts with prlimit bounding processes, open files, file size and core dumps, then bwrap', () => {
    const argv = sandboxArgv(base);
    expect(argv.slice(0, 6)).to.deep.equal(['/usr/bin/prlimit', '--nofile=4096', '--fsize=67108864', '--core=0', '--nproc=256', '--']);
    expect(argv[6]).to.equal('/usr/bin/bwrap');
  });

  it('leaves RLIMIT_NPROC out when there is no uid of the runtime\'s own (it would count the gateway\'s processes)', () => {
    const argv = sandboxArgv({ ...base, limits: { ...base.limits, processes: undefined } });
    expect(argv.some((a) => a.startsWith('--nproc'))).to.equal(false);
  });

  it('unshares every namespace (network: loopback only), dies with its parent, a new session, no capabilities', () => {
    const argv = sandboxArgv(base);
    for (const flag of ['--unshare-all', '--die-with-parent', '--new-session']) expect(argv).to.include(flag);
    expect(after(argv, '--cap-drop')).to.deep.equal([['ALL']]);
    expect(argv).not.to.include('--share-net');
  });

  it('binds system paths read-only, symlinks as symlinks, nothing writable but the socket folder', () => {
    const argv = sandboxArgv(base);
    expect(after(argv, '--ro-bind', 2)).to.deep.equal([['/usr', '/usr']]);
    expect(after(argv, '--symlink', 2)).to.deep.equal([['usr/lib', '/lib']]);
    expect(after(argv, '--ro-bind-fd', 2)).to.deep.equal([['4', '/fn']]);
    expect(after(argv, '--bind-fd', 2)).to.deep.equal([['5', '/run/fnhost']]);
    expect(argv).not.to.include('--bind');
  });

  it('gives a private size-bounded /tmp, its own /proc and a minimal /dev; the root and /dev read-only, after every mount', () => {
    const argv = sandboxArgv(base);
    expect(after(argv, '--remount-ro')).to.deep.equal([['/dev'], ['/']]);
    expect(argv.lastIndexOf('--remount-ro')).to.be.greaterThan(argv.lastIndexOf('--bind-fd'));
    const i = argv.indexOf('--size');
    expect(argv.slice(i, i + 4)).to.deep.equal(['--size', '1048576', '--tmpfs', '/tmp']);
    expect(after(argv, '--proc')).to.deep.equal([['/proc']]);
    expect(after(argv, '--dev')).to.deep.equal([['/dev']]);
  });

  it('ends with the command after --, run in cwd, reporting its init pid on the info fd', () => {
    const argv = sandboxArgv(base);
    expect(argv.slice(-3)).to.deep.equal(['--', '/node', '/rt/main.ts']);
    expect(after(argv, '--chdir')).to.deep.equal([['/fn']]);
    expect(after(argv, '--info-fd')).to.deep.equal([['3']]);
  });

  it('without a cpu cgroup, everything in the sandbox runs under nice (RUNTIME_NICE), outermost', () => {
    const argv = sandboxArgv({ ...base, nice: { path: '/usr/bin/nice', value: 10 } });
    expect(argv.slice(0, 4)).to.deep.equal(['/usr/bin/nice', '-n', '10', '/usr/bin/prlimit']);
    expect(sandboxArgv(base)[0]).to.equal('/usr/bin/prlimit');
  });

  it('with cgroups, a shell joins each cgroup.procs before anything forks, then execs prlimit', () => {
    const argv = sandboxArgv({ ...base, cgroupProcs: ['/cg/memory/x/cgroup.procs', '/cg/pids/x/cgroup.procs'] });
    expect(argv.slice(0, 2)).to.deep.equal(['/bin/sh', '-c']);
    expect(argv[2]).to.equal('echo $$ > "$1" && echo $$ > "$2" && shift 2 && exec "$@"');
    expect(argv.slice(3, 7)).to.deep.equal(['fnhost-sandbox', '/cg/memory/x/cgroup.procs', '/cg/pids/x/cgroup.procs', '/usr/bin/prlimit']);
  });
});

describe('sandbox: settings, uids and the fallback rule', () => {
  it('reads defaults and names a bad value', () => {
    const s = loadSandboxSettings({});
    expect(s).to.include({ disabled: false, require: false, unsafeNoSandbox: false, processes: 256, uidBase: 1_500_000_000 });
    expect(loadSandboxSettings({ FNHOST_SANDBOX: 'off' }).disabled).to.equal(true);
    expect(() => loadSandboxSettings({ FNHOST_SANDBOX: 'maybe' })).to.throw(ConfigError, /FNHOST_SANDBOX="maybe"/);
    expect(() => loadSandboxSettings({ FNHOST_SANDBOX_MAX_PROCESSES: '3' })).to.throw(ConfigError, /FNHOST_SANDBOX_MAX_PROCESSES="3"/);
    expect(() => loadSandboxSettings({ FNHOST_REQUIRE_SANDBOX: 'yes' })).to.throw(ConfigError, /FNHOST_REQUIRE_SANDBOX="yes" must be 1 or 0/);
  });

  it('hands out distinct uids from the range, reuses released ones last, and names exhaustion', () => {
    const uids = new UidAllocator(1000, 3);
    const taken = [uids.take(), uids.take(), uids.take()];
    expect(taken).to.deep.equal([1000, 1001, 1002]);
    expect(() => uids.take()).to.throw(/all 3 sandbox uids from 1000 are in use/);
    uids.release(1001);
    expect(uids.take()).to.equal(1001);
  });

  it('falls back on loopback with a warning; refuses beyond loopback unless unsafe; refuses always when required', () => {
    const no = { sandboxed: false as const, reason: 'bubblewrap is not installed' };
    const settings = loadSandboxSettings({});
    const local = sandboxStatus(no, settings, '127.0.0.1');
    expect(local.enabled).to.equal(false);
    expect(local.warning).to.match(/WITHOUT a sandbox: bubblewrap is not installed/);
    expect(() => sandboxStatus(no, settings, '0.0.0.0')).to.throw(SandboxUnavailableError, /listens on 0\.0\.0\.0, beyond loopback.*FNHOST_UNSAFE_NO_SANDBOX=1/);
    expect(sandboxStatus(no, loadSandboxSettings({ FNHOST_UNSAFE_NO_SANDBOX: '1' }), '0.0.0.0').enabled).to.equal(false);
    expect(() => sandboxStatus(no, loadSandboxSettings({ FNHOST_REQUIRE_SANDBOX: '1' }), '127.0.0.1')).to.throw(SandboxUnavailableError, /FNHOST_REQUIRE_SANDBOX=1/);
    expect(isLoopbackHost('localhost') && isLoopbackHost('::1') && isLoopbackHost('127.0.0.2')).to.equal(true);
    expect(isLoopbackHost('10.0.0.1')).to.equal(false);
  });
});

describe('sandbox: cgroup v1 limits (a temporary folder stands for /sys/fs/cgroup)', () => {
  let root: string;
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'fnhost-cgroup-'));
    for (const c of ['memory', 'pids']) {
      await mkdir(join(root, c));
      await writeFile(join(root, c, 'cgroup.procs'), '');
    }
  });
  afterEach(() => rm(root, { recursive: true, force: true }));

  it('sets the memory and process limits at creation; a specialization writes the memory limit only when it changes', async () => {
    const cgroups = await CgroupV1.detect('fnhost-test', root);
    if (process.getuid?.() !== 0) {
      // Only root may move processes between cgroups: the sandbox runs without them.
      expect(cgroups).to.equal(undefined);
      return;
    }
    const group = cgroups!.create('abc', undefined, 384 * 1024 * 1024, 256);
    const limit = join(root, 'memory', 'fnhost-test', 'abc', 'memory.limit_in_bytes');
    expect(await readFile(limit, 'utf8')).to.equal(String(384 * 1024 * 1024));
    expect(await readFile(join(root, 'pids', 'fnhost-test', 'abc', 'pids.max'), 'utf8')).to.equal('256');
    expect(group.procs).to.deep.equal([join(root, 'memory', 'fnhost-test', 'abc', 'cgroup.procs'), join(root, 'pids', 'fnhost-test', 'abc', 'cgroup.procs')]);
    // A marker shows whether a write happened.
    await writeFile(limit, 'untouched');
    await group.setMemory(384 * 1024 * 1024);
    expect(await readFile(limit, 'utf8'), 'the same limit: no write').to.equal('untouched');
    await group.setMemory(768 * 1024 * 1024);
    expect(await readFile(limit, 'utf8')).to.equal(String(768 * 1024 * 1024));
    await group.setMemory(384 * 1024 * 1024);
    expect(await readFile(limit, 'utf8'), 'back to the first limit: written again').to.equal(String(384 * 1024 * 1024));
  });
});
