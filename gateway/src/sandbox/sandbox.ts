import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, closeSync, lstatSync, mkdirSync, openSync, readlinkSync, rmSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { chmod, chown, copyFile, cp, link, lstat, mkdir, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { EGRESS_SOCKET } from '../egress/start.ts';
import { CgroupV1, type RuntimeCgroup } from './cgroup.ts';
import { RUNTIME_NICE, type CpuSetting } from './cpu.ts';
import type { SandboxGatewaySockets } from './gateway-sockets.ts';
import {
  GATEWAY_SOCKET_NAME,
  RUNTIME_SOCKET_NAME,
  SANDBOX_CODE_DIR,
  SANDBOX_GATEWAY_DIR,
  SANDBOX_RUN_DIR,
  SYSTEM_DIRS,
  SYSTEM_ETC,
  sandboxArgv,
  type BindFd,
  type SystemEntry,
} from './argv.ts';
import type { SandboxSettings } from './settings.ts';
import { endStraySandboxes } from './strays.ts';
import { UidAllocator } from './uids.ts';

// The sandbox of each runtime on one machine (docs/sandbox.md): detection of what the OS offers,
// and per runtime the folders, uid, cgroups and command line (argv.ts) a spawn needs.

/** What the gateway found at start: sandboxed runtimes, or the reason why not. */
export type SandboxSupport =
  | { sandboxed: true; sandboxes: Sandboxes; /** What dead gateways had left, ended at this start. */ leftovers?: { strays: number; staleCgroups: number } }
  | { sandboxed: false; reason: string };

/** Unix socket paths hold at most 107 bytes. */
const MAX_SOCKET_PATH = 107;

export interface SandboxesOptions {
  settings: SandboxSettings;
  dataDir: string;
  /** The runtime's main module (runtime-image/src/main.ts); its package folder is bound read-only at the same path. */
  runtimeMain: string;
}

export interface SandboxSpawn {
  argv: string[];
  uid: number | undefined;
  gid: number | undefined;
  /** stdio of the spawn from index 3: the info pipe, then the bound folders' fds. */
  extraStdio: Array<'pipe' | number>;
  /** The index in stdio of bwrap's info pipe. */
  infoFd: number;
  /** The runtime's environment for inside (paths as the sandbox sees them). */
  cwd: string;
}

/** One sandbox's host side: its folders, uid and cgroups, released when its processes are gone. */
export class SandboxInstance {
  readonly id: string;
  /** Host path of the folder the sandbox sees as /fn (read-only inside): the function's code goes here. */
  readonly codeDir: string;
  /** Host path of the runtime's socket. */
  readonly socketPath: string;
  readonly uid: number | undefined;
  readonly spawn: SandboxSpawn;
  /** Runs at RUNTIME_NICE (no cpu cgroup): its session's autogroup is lowered once the runtime runs. */
  readonly niced: boolean;
  readonly #dir: string;
  readonly #cgroup: RuntimeCgroup | undefined;
  readonly #release: () => void;
  readonly #gatewaySockets: SandboxGatewaySockets | undefined;
  #fds: number[];
  #released = false;

  constructor(init: { id: string; dir: string; codeDir: string; socketPath: string; uid: number | undefined; spawn: SandboxSpawn; cgroup: RuntimeCgroup | undefined; fds: number[]; release: () => void; niced?: boolean; gatewaySockets?: SandboxGatewaySockets }) {
    this.id = init.id;
    this.niced = init.niced === true;
    this.#dir = init.dir;
    this.codeDir = init.codeDir;
    this.socketPath = init.socketPath;
    this.uid = init.uid;
    this.spawn = init.spawn;
    this.#cgroup = init.cgroup;
    this.#fds = init.fds;
    this.#release = init.release;
    this.#gatewaySockets = init.gatewaySockets;
  }

  /** The sandbox now runs functionId's code: its gateway sockets count connections for that function. */
  serve(functionId: string): void {
    this.#gatewaySockets?.assign(this.id, functionId);
  }

  /** The path a file of codeDir has inside the sandbox. */
  inside(file: string): string {
    return join(SANDBOX_CODE_DIR, file);
  }

  /** Makes a file written into codeDir readable by the sandbox's uid. */
  async own(path: string): Promise<void> {
    if (this.uid !== undefined) await chown(path, this.uid, this.uid);
  }

  /** The memory the runtime may use: its function's heap plus the headroom (set again at specialization). */
  async setMemory(bytes: number): Promise<void> {
    await this.#cgroup?.setMemory(bytes);
  }

  /** The function's CPU weight and ceiling (cpu.ts; set again at specialization, like the memory). */
  setCpu(setting: CpuSetting): void {
    this.#cgroup?.setCpu(setting);
  }

  /** The spawn has the fds now (or failed): the gateway's copies are closed. */
  closeFds(): void {
    for (const fd of this.#fds) closeSync(fd);
    this.#fds = [];
  }

  /** After the sandbox's processes are gone: its folders, cgroups and uid are given back. */
  async release(): Promise<void> {
    if (this.#released) return;
    this.#released = true;
    this.closeFds();
    this.#gatewaySockets?.close(this.id);
    await this.#cgroup?.remove().catch(() => undefined);
    await rm(this.#dir, { recursive: true, force: true }).catch(() => undefined);
    this.#release();
  }
}

function which(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '/usr/bin:/bin').split(delimiter)) {
    const path = join(dir, name);
    try {
      if (lstatSync(path).isFile() || lstatSync(path).isSymbolicLink()) return path;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** The host's system entries that exist: symlinks (merged /usr) as symlinks, the rest read-only. */
export function systemEntries(paths: string[] = [...SYSTEM_DIRS, ...SYSTEM_ETC]): SystemEntry[] {
  const out: SystemEntry[] = [];
  for (const path of paths) {
    try {
      const st = lstatSync(path);
      out.push(st.isSymbolicLink() ? { path, symlink: readlinkSync(path) } : { path });
    } catch {
      // absent on this system
    }
  }
  return out;
}

/** The folder holding the runtime's package.json (bound whole, read-only). */
function packageDir(main: string): string {
  return dirname(dirname(main));
}

/** Where the sandbox root keeps its copies of what every sandbox runs (stageShared). */
function sharedPaths(root: string): { node: string; runtimePackage: string } {
  return { node: join(root, 'shared', 'node'), runtimePackage: join(root, 'shared', 'runtime') };
}

/**
 * Copies of the node binary (a hard link where it can) and of the runtime's package under the
 * sandbox root, which every runtime's uid may traverse. The originals can sit below a folder
 * only the gateway's user may enter (a checkout in /root, or in a `mktemp -d` folder, 0700):
 * bubblewrap, already running as the runtime's uid, could not open them there.
 */
async function stageShared(root: string, runtimeMain: string): Promise<void> {
  const paths = sharedPaths(root);
  await mkdir(dirname(paths.node), { mode: 0o755 });
  await link(process.execPath, paths.node).catch(async () => {
    await copyFile(process.execPath, paths.node);
    await chmod(paths.node, 0o755);
  });
  await cp(packageDir(runtimeMain), paths.runtimePackage, { recursive: true, filter: (src) => !src.split('/').includes('node_modules') });
  const open = async (path: string): Promise<void> => {
    const st = await lstat(path);
    if (st.isDirectory()) {
      await chmod(path, 0o755);
      for (const name of await readdir(path)) await open(join(path, name));
    } else if (st.isFile()) {
      await chmod(path, st.mode & 0o111 ? 0o755 : 0o644);
    }
  };
  await open(paths.runtimePackage);
}

export class Sandboxes {
  readonly #o: SandboxesOptions;
  readonly #bwrap: string;
  readonly #prlimit: string;
  readonly #system: SystemEntry[];
  readonly #uids: UidAllocator | undefined;
  readonly #cgroups: CgroupV1 | undefined;
  /** The gateway's internal socket folder (host path), bound read-only into every sandbox that has no sockets of its own. */
  readonly gatewaySocketDir: string;
  /**
   * The gateway's sockets per sandbox (gateway-sockets.ts), set by the platform once its internal
   * API and egress proxy exist (before the first sandbox is made): each sandbox then sees sockets of
   * its own at /run/fnhost-gateway instead of the shared folder.
   */
  gatewaySockets: SandboxGatewaySockets | undefined;

  private constructor(o: SandboxesOptions, bwrap: string, prlimit: string, cgroups: CgroupV1 | undefined, root: string) {
    this.#o = o;
    this.#bwrap = bwrap;
    this.#prlimit = prlimit;
    this.#system = systemEntries();
    this.#uids = process.getuid?.() === 0 ? new UidAllocator(o.settings.uidBase, o.settings.uidCount) : undefined;
    this.#cgroups = cgroups;
    this.#root = root;
    this.gatewaySocketDir = join(root, 'gateway');
    this.#nice = which('nice');
  }

  readonly #root: string;
  /** The `nice` program (coreutils), for runtimes without a cpu cgroup. */
  readonly #nice: string | undefined;

  /** Runtimes run at RUNTIME_NICE (no cpu cgroup): their session's autogroup should be lowered too, once the runtime runs. */
  get niced(): boolean {
    return !this.cpuCgroups && this.#nice !== undefined;
  }

  /**
   * The host folders of the sandboxes. Not in the data folder: bubblewrap runs under each
   * runtime's uid and must traverse the path of what it binds, and the data folder (token,
   * database) stays 0700. A folder of its own in the system's temporary folder, 0711 (others may
   * pass through, not list), named after the data folder so the next gateway clears what a killed
   * one left; refused unless it is a real folder owned by the gateway's user.
   */
  static async rootFor(dataDir: string): Promise<string> {
    const root = join(tmpdir(), `fnhost-sandboxes-${createHash('sha256').update(dataDir).digest('hex').slice(0, 12)}`);
    await mkdir(root, { mode: 0o711 }).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'EEXIST') throw err;
    });
    const st = await lstat(root);
    if (!st.isDirectory() || st.uid !== process.getuid?.()) throw new Error(`${root} is not a folder owned by the gateway's user: refusing to use it for sandboxes`);
    await chmod(root, 0o711);
    for (const stale of ['sandboxes', 'gateway', 'compile-cache', 'shared']) await rm(join(root, stale), { recursive: true, force: true });
    await mkdir(join(root, 'sandboxes'), { mode: 0o711 });
    await mkdir(join(root, 'gateway'), { mode: 0o755 });
    return root;
  }

  /** Node's compile cache for sandboxes: written by the gateway's trusted warm-up only, read-only inside. */
  get compileCache(): string {
    return join(this.#root, 'compile-cache');
  }

  /**
   * After the warm-up: the compile cache becomes the gateway's again, readable by every sandbox's
   * uid and writable by none (Node made its folders 0700 for the warm-up's uid).
   */
  async sealCompileCache(): Promise<void> {
    const uid = process.getuid?.() ?? 0;
    const gid = process.getgid?.() ?? 0;
    const walk = async (path: string): Promise<void> => {
      const st = await lstat(path);
      if (st.isSymbolicLink()) return;
      await chown(path, uid, gid);
      await chmod(path, st.isDirectory() ? 0o755 : 0o644);
      if (st.isDirectory()) for (const name of await readdir(path)) await walk(join(path, name));
    };
    await walk(this.compileCache);
  }

  /** Removes the sandboxes' folder (the gateway's stop, after every runtime has ended). */
  async removeRoot(): Promise<void> {
    await this.#cgroups?.removeGroup();
    await rm(this.#root, { recursive: true, force: true }).catch(() => undefined);
  }

  /** Inside every sandbox: FNHOST_EGRESS_PROXY. */
  static readonly egressProxy = `unix:${SANDBOX_GATEWAY_DIR}/${EGRESS_SOCKET}`;
  /** Inside every sandbox: FNHOST_GATEWAY_URL. */
  static readonly gatewayUrl = `unix:${SANDBOX_GATEWAY_DIR}/${GATEWAY_SOCKET_NAME}`;
  static readonly runtimeSocket = `${SANDBOX_RUN_DIR}/${RUNTIME_SOCKET_NAME}`;

  get memoryHeadroomMib(): number {
    return this.#o.settings.memoryHeadroomMib;
  }

  get cgroups(): boolean {
    return this.#cgroups !== undefined;
  }

  /** Whether each runtime has a CPU cgroup (docs/sandbox.md "CPU"). */
  get cpuCgroups(): boolean {
    return this.#cgroups?.cpu === true;
  }

  get perRuntimeUids(): boolean {
    return this.#uids !== undefined;
  }

  /**
   * Whether this machine can sandbox: Linux, bubblewrap and prlimit installed, and a trial
   * sandbox (user namespace when unprivileged, network and PID namespaces) runs. The reason
   * names what is missing.
   */
  static async detect(o: SandboxesOptions): Promise<SandboxSupport> {
    if (o.settings.disabled) return { sandboxed: false, reason: 'FNHOST_SANDBOX=off' };
    if (process.platform !== 'linux') return { sandboxed: false, reason: `runtimes can be sandboxed on Linux only (this is ${process.platform})` };
    const bwrap = which('bwrap');
    if (bwrap === undefined) return { sandboxed: false, reason: 'bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)' };
    const prlimit = which('prlimit');
    if (prlimit === undefined) return { sandboxed: false, reason: 'prlimit is not installed (Debian/Ubuntu: apt-get install util-linux)' };
    const asRoot = process.getuid?.() === 0;
    const trial = spawnSync(bwrap, ['--die-with-parent', '--unshare-all', '--cap-drop', 'ALL', ...systemEntries(SYSTEM_DIRS).flatMap((e) => (e.symlink !== undefined ? ['--symlink', e.symlink, e.path] : ['--ro-bind', e.path, e.path])), '--proc', '/proc', '--dev', '/dev', '--', '/bin/true'], {
      uid: asRoot ? o.settings.uidBase : undefined,
      gid: asRoot ? o.settings.uidBase : undefined,
      env: {},
      encoding: 'utf8',
      timeout: 10_000,
    });
    if (trial.status !== 0) {
      const why = (trial.stderr || trial.error?.message || `exit ${trial.status ?? trial.signal}`).trim().split('\n').pop();
      return { sandboxed: false, reason: `bubblewrap cannot create a sandbox here (${why}); unprivileged user namespaces may be off (Ubuntu >= 23.10 needs an AppArmor profile for bwrap)` };
    }
    // What killed gateways left behind (strays.ts): half-made sandboxes, then their cgroups.
    const strays = await endStraySandboxes();
    const cgroups = await CgroupV1.detect(`fnhost-${process.pid}`);
    const staleCgroups = cgroups === undefined ? 0 : await CgroupV1.removeStale();
    const root = await Sandboxes.rootFor(o.dataDir);
    await stageShared(root, o.runtimeMain);
    return { sandboxed: true, sandboxes: new Sandboxes(o, bwrap, prlimit, cgroups, root), leftovers: { strays: strays.length, staleCgroups } };
  }

  /** Makes the host side of one sandbox (folders, uid, cgroups) and its command line. Synchronous: the warm pool spawns synchronously. */
  create(command: string[], memoryBytes: number, options: { writableCompileCache?: boolean } = {}): SandboxInstance {
    const s = this.#o.settings;
    const id = randomBytes(6).toString('hex');
    const dir = join(this.#root, 'sandboxes', id);
    const codeDir = join(dir, 'fn');
    const runDir = join(dir, 'run');
    const socketPath = join(runDir, RUNTIME_SOCKET_NAME);
    if (Buffer.byteLength(socketPath) > MAX_SOCKET_PATH) {
      throw new Error(`the runtime socket path ${socketPath} is longer than ${MAX_SOCKET_PATH} bytes: use a shorter FNHOST_DATA_DIR`);
    }
    const uid = this.#uids?.take();
    const release = () => {
      if (uid !== undefined) this.#uids!.release(uid);
    };
    const fds: number[] = [];
    try {
      mkdirSync(dir, { mode: 0o711 });
      mkdirSync(codeDir, { mode: 0o700 });
      mkdirSync(runDir, { mode: 0o700 });
      if (uid !== undefined) {
        chownSync(codeDir, uid, uid);
        chownSync(runDir, uid, uid);
      }
      const cgroup = this.#cgroups?.create(id, uid, memoryBytes, s.processes);
      const binds: BindFd[] = [];
      const infoFd = 3;
      const bind = (path: string, dest: string, writable = false) => {
        fds.push(openSync(path, 'r'));
        binds.push({ fd: infoFd + fds.length, dest, writable });
      };
      // The staged copies, at the paths the runtime is started with.
      const shared = sharedPaths(this.#root);
      bind(shared.node, process.execPath);
      bind(shared.runtimePackage, packageDir(this.#o.runtimeMain));
      bind(codeDir, SANDBOX_CODE_DIR);
      bind(runDir, SANDBOX_RUN_DIR, true);
      const gatewayDir = join(dir, 'gateway');
      if (this.gatewaySockets !== undefined) this.gatewaySockets.open(id, gatewayDir, uid);
      bind(this.gatewaySockets === undefined ? this.gatewaySocketDir : gatewayDir, SANDBOX_GATEWAY_DIR);
      mkdirSync(this.compileCache, { recursive: true, mode: 0o755 });
      // Writable only for the gateway's warm-up (LocalExecutor), which runs no function's code.
      if (options.writableCompileCache === true && uid !== undefined) chownSync(this.compileCache, uid, uid);
      bind(this.compileCache, this.compileCache, options.writableCompileCache === true);
      const argv = sandboxArgv({
        bwrap: this.#bwrap,
        prlimit: this.#prlimit,
        system: this.#system,
        binds,
        infoFd,
        tmpBytes: s.tmpBytes,
        // RLIMIT_NPROC counts every process of the real uid: only a uid of the runtime's own makes it a per-runtime bound.
        limits: { processes: uid === undefined ? undefined : s.processes, openFiles: s.openFiles, fileBytes: s.fileBytes },
        cgroupProcs: cgroup?.procs ?? [],
        nice: this.cpuCgroups || this.#nice === undefined ? undefined : { path: this.#nice, value: RUNTIME_NICE },
        command,
        cwd: SANDBOX_CODE_DIR,
      });
      return new SandboxInstance({
        id,
        dir,
        codeDir,
        socketPath,
        uid,
        cgroup,
        fds,
        release,
        niced: this.niced,
        gatewaySockets: this.gatewaySockets,
        spawn: { argv, uid, gid: uid, extraStdio: ['pipe', ...fds], infoFd, cwd: '/' },
      });
    } catch (err) {
      for (const fd of fds) closeSync(fd);
      this.gatewaySockets?.close(id);
      rmSync(dir, { recursive: true, force: true });
      release();
      throw err;
    }
  }
}

/** The runtime inside a sandbox: the one child of the PID namespace's init (bwrap's child-pid), found through /proc. */
export async function runtimePidOf(initPid: number): Promise<number | undefined> {
  const children = await readFile(`/proc/${initPid}/task/${initPid}/children`, 'utf8').catch(() => '');
  const first = Number(children.trim().split(/\s+/)[0]);
  return Number.isInteger(first) && first > 0 ? first : undefined;
}
