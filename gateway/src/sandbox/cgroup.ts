import { chownSync, mkdirSync, writeFileSync } from 'node:fs';
import { access, constants, mkdir, readdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isRunning } from '../pid.ts';
import { cpuCgroupValues, DEFAULT_CPU, SANDBOXES_PARENT_SHARES, writeCpu, type CpuSetting } from './cpu.ts';

// cgroup v1 memory and pids controllers for each sandbox (docs/sandbox.md "Limits"), where the
// gateway runs as root and they are writable. Memory: bubblewrap sets none, and RLIMIT_AS does
// not fit V8 (it reserves far more address space than it uses: its pointer cage and every
// WebAssembly memory), so the cgroup limits what a runtime really uses, /tmp's tmpfs included.
// pids: a second bound on processes and threads besides RLIMIT_NPROC. cpu (where mounted): each
// runtime's weight and optional ceiling (cpu.ts), under a parent group weighted below the gateway,
// so that a busy function, and every process it left running after a call, competes for CPU as one
// function and cannot starve the gateway or its neighbours.

export const CGROUP_V1_ROOT = '/sys/fs/cgroup';
const CONTROLLERS = ['memory', 'pids'];
/** Optional: a v1 machine without the cpu controller mounted still gets memory and pids. */
const CPU_CONTROLLER = 'cpu';
const ALL_CONTROLLERS = [...CONTROLLERS, CPU_CONTROLLER];

export interface RuntimeCgroup {
  /** The cgroup.procs files the sandbox's first process writes itself into. */
  procs: string[];
  setMemory(bytes: number): Promise<void>;
  /** The function's CPU weight and ceiling (cpu.ts); no-op without the cpu controller. */
  setCpu(setting: CpuSetting): void;
  remove(): Promise<void>;
}

export class CgroupV1 {
  readonly #root: string;
  readonly #group: string;
  /** Whether the cpu controller is mounted and writable (every runtime then has a CPU group). */
  readonly cpu: boolean;

  private constructor(root: string, group: string, cpu: boolean) {
    this.#root = root;
    this.#group = group;
    this.cpu = cpu;
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
    let cpu = false;
    try {
      await access(join(root, CPU_CONTROLLER, 'cgroup.procs'), constants.W_OK);
      await mkdir(join(root, CPU_CONTROLLER, group), { recursive: true });
      await writeFile(join(root, CPU_CONTROLLER, group, 'cpu.shares'), String(SANDBOXES_PARENT_SHARES));
      cpu = true;
    } catch {
      // no cpu controller: runtimes compete with the gateway by their sessions (docs/sandbox.md "CPU")
    }
    return new CgroupV1(root, group, cpu);
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
    for (const c of ALL_CONTROLLERS) {
      for (const name of await readdir(join(root, c)).catch(() => [] as string[])) {
        const m = /^fnhost-(\d+)$/.exec(name);
        if (m !== null && !alive(Number(m[1]))) groups.add(name);
      }
    }
    for (const group of groups) {
      for (const c of ALL_CONTROLLERS) {
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
    for (const c of this.#controllers()) await rmdir(join(this.#root, c, this.#group)).catch(() => undefined);
  }

  #controllers(): string[] {
    return this.cpu ? ALL_CONTROLLERS : CONTROLLERS;
  }

  /** Synchronous: a few small writes to cgroupfs, on the warm pool's synchronous spawn path. */
  create(id: string, uid: number | undefined, memoryBytes: number, pids: number): RuntimeCgroup {
    const memory = join(this.#root, 'memory', this.#group, id);
    const pidsDir = join(this.#root, 'pids', this.#group, id);
    const cpuDir = this.cpu ? join(this.#root, CPU_CONTROLLER, this.#group, id) : undefined;
    mkdirSync(memory, { recursive: true });
    mkdirSync(pidsDir, { recursive: true });
    writeFileSync(join(memory, 'memory.limit_in_bytes'), String(memoryBytes));
    writeFileSync(join(pidsDir, 'pids.max'), String(pids));
    // A new group has the default CPU values (1024 shares, no quota): nothing to write until a
    // function with a CPU setting specializes this runtime (setCpu).
    if (cpuDir !== undefined) mkdirSync(cpuDir, { recursive: true });
    const dirs = cpuDir === undefined ? [memory, pidsDir] : [memory, pidsDir, cpuDir];
    const procs = dirs.map((d) => join(d, 'cgroup.procs'));
    // The sandbox's first process runs under its own uid and joins by writing its pid here.
    if (uid !== undefined) for (const p of procs) chownSync(p, uid, uid);
    let limit = memoryBytes;
    let cpu = JSON.stringify(DEFAULT_CPU);
    return {
      procs,
      // Most functions keep the default memory, which a warm-pool sandbox starts with: no write then.
      setMemory: async (bytes) => {
        if (bytes === limit) return;
        await writeFile(join(memory, 'memory.limit_in_bytes'), String(bytes));
        limit = bytes;
      },
      setCpu: (setting) => {
        if (cpuDir === undefined || JSON.stringify(setting) === cpu) return;
        writeCpu(cpuDir, 1, cpuCgroupValues(setting));
        cpu = JSON.stringify(setting);
      },
      // Every process still in the groups is ended: the runtime's and whatever its calls left running.
      remove: async () => {
        for (const dir of dirs) await removeGroupDir(dir);
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
