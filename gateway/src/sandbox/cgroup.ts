import { chownSync, mkdirSync, writeFileSync } from 'node:fs';
import { access, constants, mkdir, readdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isRunning } from '../pid.ts';

// cgroup v1 memory and pids controllers for each sandbox (docs/sandbox.md "Limits"), where the
// gateway runs as root and they are writable. Memory: bubblewrap sets none, and RLIMIT_AS does
// not fit V8 (it reserves far more address space than it uses: its pointer cage and every
// WebAssembly memory), so the cgroup limits what a runtime really uses, /tmp's tmpfs included.
// pids: a second bound on processes and threads besides RLIMIT_NPROC.

export const CGROUP_V1_ROOT = '/sys/fs/cgroup';
const CONTROLLERS = ['memory', 'pids'];

export interface RuntimeCgroup {
  /** The cgroup.procs files the sandbox's first process writes itself into. */
  procs: string[];
  setMemory(bytes: number): Promise<void>;
  remove(): Promise<void>;
}

export class CgroupV1 {
  readonly #root: string;
  readonly #group: string;

  private constructor(root: string, group: string) {
    this.#root = root;
    this.#group = group;
  }

  /** The controllers when both are mounted and writable (root), else undefined (the sandbox then runs without them). */
  static async detect(group: string, root = CGROUP_V1_ROOT): Promise<CgroupV1 | undefined> {
    if (process.getuid?.() !== 0) return undefined;
    try {
      for (const c of CONTROLLERS) {
        await access(join(root, c, 'cgroup.procs'), constants.W_OK);
        await mkdir(join(root, c, group), { recursive: true });
      }
    } catch {
      return undefined;
    }
    return new CgroupV1(root, group);
  }

  /**
   * The groups of gateways that are gone (killed, so their stop never removed them): every process
   * still in them is ended (a stray sandbox init, strays.ts) and the groups removed. A group is
   * named after its gateway's pid; a live pid is left alone, whoever has it now. Returns how many
   * gateways' groups were removed.
   */
  static async removeStale(root = CGROUP_V1_ROOT, alive: (pid: number) => boolean = isRunning): Promise<number> {
    let removed = 0;
    const groups = new Set<string>();
    for (const c of CONTROLLERS) {
      for (const name of await readdir(join(root, c)).catch(() => [] as string[])) {
        const m = /^fnhost-(\d+)$/.exec(name);
        if (m !== null && !alive(Number(m[1]))) groups.add(name);
      }
    }
    for (const group of groups) {
      for (const c of CONTROLLERS) {
        const dir = join(root, c, group);
        for (const child of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
          if (child.isDirectory()) await removeGroupDir(join(dir, child.name));
        }
        await rmdir(dir).catch(() => undefined);
      }
      removed++;
    }
    return removed;
  }

  /** The gateway's own group, once every runtime's group is gone (its stop). */
  async removeGroup(): Promise<void> {
    for (const c of CONTROLLERS) await rmdir(join(this.#root, c, this.#group)).catch(() => undefined);
  }

  /** Synchronous: a few small writes to cgroupfs, on the warm pool's synchronous spawn path. */
  create(id: string, uid: number | undefined, memoryBytes: number, pids: number): RuntimeCgroup {
    const memory = join(this.#root, 'memory', this.#group, id);
    const pidsDir = join(this.#root, 'pids', this.#group, id);
    mkdirSync(memory, { recursive: true });
    mkdirSync(pidsDir, { recursive: true });
    writeFileSync(join(memory, 'memory.limit_in_bytes'), String(memoryBytes));
    writeFileSync(join(pidsDir, 'pids.max'), String(pids));
    const procs = [join(memory, 'cgroup.procs'), join(pidsDir, 'cgroup.procs')];
    // The sandbox's first process runs under its own uid and joins by writing its pid here.
    if (uid !== undefined) for (const p of procs) chownSync(p, uid, uid);
    let limit = memoryBytes;
    return {
      procs,
      // Most functions keep the default memory, which a warm-pool sandbox starts with: no write then.
      setMemory: async (bytes) => {
        if (bytes === limit) return;
        await writeFile(join(memory, 'memory.limit_in_bytes'), String(bytes));
        limit = bytes;
      },
      remove: async () => {
        for (const dir of [memory, pidsDir]) await removeGroupDir(dir);
      },
    };
  }
}

/**
 * Removes one sandbox's group. Its processes are normally gone with the sandbox's PID namespace;
 * whatever is still in it is ended first: the group holds that sandbox's processes and nothing
 * else, so this cannot reach anything of the machine's. A stray init (strays.ts) of a sandbox
 * whose start was cut short is the usual one. The last processes may take a moment to be reaped.
 */
async function removeGroupDir(dir: string): Promise<void> {
  for (let attempt = 0; attempt < 50; attempt++) {
    try {
      await rmdir(dir);
      return;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return;
      if (code !== 'EBUSY') throw err;
      const procs = await readFile(join(dir, 'cgroup.procs'), 'utf8').catch(() => '');
      for (const pid of procs.split('\n').filter((l) => /^\d+$/.test(l))) {
        try {
          process.kill(Number(pid), 'SIGKILL');
        } catch {
          // reaped meanwhile
        }
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}
