import { expect } from 'chai';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, rmdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startGateway, type RunningGateway } from '../helpers/platform.ts';
import { pollUntil } from '../helpers/wait.ts';

// A gateway killed while a sandbox was starting leaves that sandbox's init behind: bubblewrap's
// inner process, waiting forever for user-namespace maps its killed parent will never write
// (gateway/src/sandbox/strays.ts). The next gateway's start ends it, and (as root) removes the
// dead gateway's cgroups. Made here for real and deterministically: bubblewrap's
// --userns-block-fd holds the inner process at the same wait, and its parent is SIGKILLed.
// Checked to fail without the sweep (the stray outlives the gateway's start).

const CGROUP = '/sys/fs/cgroup';
const asRoot = process.getuid?.() === 0;
const cgroupsWritable = asRoot && existsSync(join(CGROUP, 'memory', 'cgroup.procs')) && existsSync(join(CGROUP, 'pids', 'cgroup.procs'));

function statusOf(pid: number): { ppid: number; nspid: number[] } | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    return { ppid: Number(/^PPid:\s*(\d+)$/m.exec(status)![1]), nspid: /^NSpid:\s*([\d\s]+)$/m.exec(status)![1]!.trim().split(/\s+/).map(Number) };
  } catch {
    return undefined;
  }
}

/** A pid no process has now (a child that has exited), to name a dead gateway's cgroup after. */
function deadPid(): number {
  const done = spawnSync('/bin/true');
  return done.pid;
}

/**
 * Starts a sandbox as the gateway does (our command line's marks: the host name and --info-fd),
 * held before its user-namespace maps, optionally inside cgroups, kills its outer bubblewrap, and
 * returns the inner one's pid once it is a stray (parent init).
 */
async function makeStray(cgroupProcs: string[] = []): Promise<number> {
  const bwrap = ['bwrap', '--die-with-parent', '--unshare-all', '--unshare-user', '--hostname', 'fnhost', '--cap-drop', 'ALL', '--info-fd', '3', '--userns-block-fd', '4',
    '--ro-bind', '/usr', '/usr', '--symlink', 'usr/lib', '/lib', '--symlink', 'usr/lib64', '/lib64', '--symlink', 'usr/bin', '/bin', '--', '/bin/true'];
  const joins = cgroupProcs.map((p) => `echo $$ > ${p} && `).join('');
  const outer: ChildProcess = spawn('/bin/sh', ['-c', `${joins}exec "$@"`, 'stray', ...bwrap], { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] });
  let info = '';
  (outer.stdio[3] as NodeJS.ReadableStream).setEncoding('utf8');
  (outer.stdio[3] as NodeJS.ReadableStream).on('data', (chunk: string) => (info += chunk));
  let stderr = '';
  outer.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const inner = await pollUntil('bwrap\'s child-pid', async () => {
    const m = /"child-pid":\s*(\d+)/.exec(info);
    if (m === null) throw new Error(`not yet; bwrap's stderr: ${stderr}`);
    return Number(m[1]);
  }, 20_000, 20);
  const exited = new Promise((r) => outer.once('exit', r));
  outer.kill('SIGKILL');
  await exited;
  await pollUntil(`process ${inner} reparented to init`, async () => statusOf(inner)?.ppid === 1, 20_000, 20);
  return inner;
}

describe('stray sandboxes of a killed gateway are ended by the next gateway\'s start (real bubblewrap)', function () {
  this.timeout(120_000);
  const gateways: RunningGateway[] = [];
  const strays: number[] = [];

  after(async () => {
    for (const gw of gateways) await gw.stop();
    for (const pid of strays) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // ended, as it should be
      }
    }
  });

  it('a stray is ended at start; a sandbox another gateway is running goes on serving', async () => {
    // A live gateway with a running sandboxed function: its sandbox must not be taken for a stray.
    const live = await startGateway();
    gateways.push(live);
    const headers = { authorization: `Bearer ${live.token}`, 'content-type': 'application/json' };
    const created = await fetch(`${live.url}/api/v1/functions`, { method: 'POST', headers, body: JSON.stringify({ name: 'alive', code: 'const id = Math.random(); export default (req, res) => res.json({ id });' }) });
    expect(created.status, await created.clone().text()).to.equal(201);
    const { function_id } = (await created.json()) as { function_id: string };
    const first = (await (await fetch(`${live.url}/invoke/${function_id}`)).json()) as { id: number };

    const stray = await makeStray();
    strays.push(stray);
    expect(statusOf(stray)!.nspid.at(-1), 'PID 1 of its own namespace').to.equal(1);

    const next = await startGateway();
    gateways.push(next);
    await pollUntil(`stray ${stray} ended by the next gateway's start`, async () => {
      if (statusOf(stray) !== undefined) throw new Error(`still there; the gateway's output: ${next.output()}`);
      return true;
    }, 20_000, 50);

    // The same runtime (same module-level id) still answers: nothing of the live gateway's was ended.
    const again = await fetch(`${live.url}/invoke/${function_id}`);
    expect(again.status).to.equal(200);
    expect(((await again.json()) as { id: number }).id).to.equal(first.id);
  });

  it('as root: a dead gateway\'s cgroups, with the stray still in them, are removed', async () => {
    expect(cgroupsWritable, 'this test runs as root on cgroup v1, as make test does on this machine kind').to.equal(true);
    const dead = deadPid();
    const dirs = ['memory', 'pids'].map((c) => join(CGROUP, c, `fnhost-${dead}`, 'abc123'));
    for (const d of dirs) await mkdir(d, { recursive: true });
    try {
      const stray = await makeStray(dirs.map((d) => join(d, 'cgroup.procs')));
      strays.push(stray);
      expect(readFileSync(join(dirs[0]!, 'cgroup.procs'), 'utf8')).to.include(String(stray));
      const gw = await startGateway();
      gateways.push(gw);
      await pollUntil('the stray ended and the dead gateway\'s groups removed', async () => {
        const left = dirs.filter((d) => existsSync(join(d, '..')));
        if (statusOf(stray) !== undefined || left.length > 0) throw new Error(`stray ${statusOf(stray) === undefined ? 'ended' : 'alive'}, groups left: ${left.join(', ')}`);
        return true;
      }, 20_000, 50);
    } finally {
      for (const d of dirs) {
        await rmdir(d).catch(() => undefined);
        await rmdir(join(d, '..')).catch(() => undefined);
      }
    }
  });
});
