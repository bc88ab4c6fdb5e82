import { expect } from 'chai';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { endStraySandboxes, isStraySandboxInit, parseStatus, type ProcessFacts } from '../../gateway/src/sandbox/strays.ts';
import { CgroupV1 } from '../../gateway/src/sandbox/cgroup.ts';

// Which processes a starting gateway ends as strays of dead gateways (gateway/src/sandbox/strays.ts),
// and which cgroups it removes. The real thing is in sandbox-strays.int.test.ts.

const ours = ['bwrap', '--die-with-parent', '--new-session', '--unshare-all', '--unshare-user', '--uid', '1000', '--gid', '1000', '--hostname', 'fnhost', '--cap-drop', 'ALL', '--info-fd', '3', '--', 'node'];
const stray: ProcessFacts = { pid: 4242, comm: 'bwrap', ppid: 1, nspid: [4242, 1], argv: ours };

describe('stray sandboxes: the decision', () => {
  it('a bwrap of our command line, reparented to init, PID 1 of its own namespace, is a stray', () => {
    expect(isStraySandboxInit(stray)).to.equal(true);
  });

  it('a live sandbox (its outer bwrap still its parent) is not', () => {
    expect(isStraySandboxInit({ ...stray, ppid: 4241 })).to.equal(false);
  });

  it('a bwrap in the host PID namespace (the outer one, or anybody\'s) is not', () => {
    expect(isStraySandboxInit({ ...stray, nspid: [4242] })).to.equal(false);
    expect(isStraySandboxInit({ ...stray, nspid: [4242, 7] })).to.equal(false);
  });

  it('another program\'s bwrap (Flatpak\'s, say) or another program named bwrap is not', () => {
    const flatpak = ['bwrap', '--args', '40', '--', 'app'];
    expect(isStraySandboxInit({ ...stray, argv: flatpak })).to.equal(false);
    expect(isStraySandboxInit({ ...stray, argv: ours.map((a) => (a === 'fnhost' ? 'other' : a)) })).to.equal(false);
    expect(isStraySandboxInit({ ...stray, comm: 'node' })).to.equal(false);
  });

  it('reads PPid and NSpid from /proc/<pid>/status', () => {
    expect(parseStatus('Name:\tbwrap\nPPid:\t1\nTracerPid:\t0\nNSpid:\t4242\t1\n')).to.deep.equal({ ppid: 1, nspid: [4242, 1] });
    expect(parseStatus('Name:\tbwrap\nPPid:\t1\n')).to.equal(undefined);
  });
});

describe('stray sandboxes: the sweep over a /proc', () => {
  let root: string;
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'fnhost-proc-'));
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  const proc = async (pid: number, comm: string, ppid: number, nspid: string, argv: string[]) => {
    await mkdir(join(root, String(pid)));
    await writeFile(join(root, String(pid), 'comm'), comm + '\n');
    await writeFile(join(root, String(pid), 'status'), `Name:\t${comm}\nPPid:\t${ppid}\nNSpid:\t${nspid}\n`);
    await writeFile(join(root, String(pid), 'cmdline'), argv.join('\0') + '\0');
  };

  it('kills the strays and nothing else', async () => {
    await proc(10, 'bwrap', 1, '10\t1', ours); // stray
    await proc(11, 'bwrap', 9, '11\t1', ours); // live sandbox
    await proc(12, 'node', 1, '12', ['node', 'x']);
    await proc(13, 'bwrap', 1, '13\t1', ours); // stray
    await mkdir(join(root, 'self'));
    const killed: number[] = [];
    const ended = await endStraySandboxes(root, (pid) => killed.push(pid));
    expect(ended.sort()).to.deep.equal([10, 13]);
    expect(killed.sort()).to.deep.equal([10, 13]);
  });

  it('a kill the kernel refuses (another user\'s stray) is not counted', async () => {
    await proc(10, 'bwrap', 1, '10\t1', ours);
    const ended = await endStraySandboxes(root, () => {
      throw Object.assign(new Error('EPERM'), { code: 'EPERM' });
    });
    expect(ended).to.deep.equal([]);
  });
});

describe('stale sandbox cgroups', () => {
  let root: string;
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'fnhost-cgroup-'));
    for (const c of ['memory', 'pids']) {
      await mkdir(join(root, c, 'fnhost-100', 'aa'), { recursive: true });
      await mkdir(join(root, c, 'fnhost-200', 'bb'), { recursive: true });
      await mkdir(join(root, c, 'other-300'), { recursive: true });
    }
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('removes the groups of gateways that are gone, with their sandboxes\' groups, and keeps the live ones and others\'', async () => {
    const removed = await CgroupV1.removeStale(root, (pid) => pid === 200 || pid === 300);
    expect(removed).to.equal(1);
    for (const c of ['memory', 'pids']) {
      expect(existsSync(join(root, c, 'fnhost-100'))).to.equal(false);
      expect(existsSync(join(root, c, 'fnhost-200', 'bb'))).to.equal(true);
      expect(existsSync(join(root, c, 'other-300'))).to.equal(true);
    }
  });
});
