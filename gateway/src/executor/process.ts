import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { secretsApart } from './secrets-pipe.ts';
import { createInterface } from 'node:readline';
import { getPriority, setPriority } from 'node:os';
import { runtimePidOf, type SandboxInstance } from '../sandbox/sandbox.ts';
import { RUNTIME_NICE } from '../sandbox/cpu.ts';
import { RuntimeUnavailableError } from './errors.ts';
import { startBoundsOf, watchStart } from './start-progress.ts';

// One runtime process (runtime-image/src/main.ts) as the local executor sees it: spawned with
// an environment (inside its sandbox when it has one, sandbox/), found listening through its
// first JSON line with a port or a Unix socket, its output passed
// through, its pid kept in FNHOST_DATA_DIR/runtimes/ while it runs (so a gateway killed hard
// has its runtimes ended by the next one), stopped with SIGTERM then SIGKILL.

/** How long a stopped runtime gets to drain before SIGKILL. */
export const STOP_GRACE_MS = 2000;

export interface SpawnOptions {
  main: string;
  /** Node flags before main (the heap limit in process isolation); a sandbox's command carries its own. */
  nodeArgs?: string[];
  env: Record<string, string>;
  cwd: string;
  dataDir: string;
  /** Written into the pid file: the function id, or "pool" for a generic runtime. */
  owner: string;
  /** "the runtime of function hello": the subject of start errors. */
  subject: string;
  startTimeoutMs: number;
  forwardOutput: boolean;
  /** Spawned inside this sandbox (its folders, uid and cgroups are released when the process is gone). */
  sandbox?: SandboxInstance;
}

export class RuntimeProcess {
  readonly child: ChildProcess;
  /** Resolves with `http://127.0.0.1:<port>` (or a name of the sandbox's socket) at the listening line; rejects when the process cannot start. */
  readonly listening: Promise<string>;
  /** The runtime's Unix socket (host path) when it is sandboxed. */
  readonly socketPath: string | undefined;
  readonly sandbox: SandboxInstance | undefined;
  /** The sandbox's PID namespace init (host pid), from bubblewrap's info fd. */
  #initPid: Promise<number | undefined> = Promise.resolve(undefined);
  readonly exit: Promise<void>;
  origin: string | undefined;
  exited = false;
  exitCode: number | null = null;
  exitSignal: NodeJS.Signals | null = null;
  /** The last 4 KiB of stderr: the cause of a failed start, and how out of memory is told apart from a crash. */
  stderrTail = '';
  subject: string;
  readonly #pidFile: string | undefined;

  constructor(options: SpawnOptions) {
    this.subject = options.subject;
    const sandbox = options.sandbox;
    this.sandbox = sandbox;
    this.socketPath = sandbox?.socketPath;
    let child: ChildProcess;
    // Credentials go over stdin, never in an environment the runtime's children inherit (secrets-pipe.ts).
    const { env, message: secrets } = secretsApart(options.env);
    if (sandbox === undefined) {
      child = spawn(process.execPath, [...(options.nodeArgs ?? []), options.main], { env, cwd: options.cwd, stdio: [secrets === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
      // No sandbox, so no cgroup: the runtime (just exec'd, before its threads and the function's code) weighs below the gateway.
      if (child.pid !== undefined) lowerPriority(child.pid);
    } else {
      const s = sandbox.spawn;
      try {
        // stdin is a pipe the gateway never writes: it ends when the gateway dies, however it dies, and the
        // runtime then exits (FNHOST_PARENT_PIPE). --die-with-parent alone is not enough: the kernel clears a
        // parent-death signal when credentials change, and the sandbox's init outlived a SIGKILLed gateway (seen).
        child = spawn(s.argv[0]!, s.argv.slice(1), { env: { ...env, FNHOST_PARENT_PIPE: '1' }, cwd: s.cwd, uid: s.uid, gid: s.gid, stdio: ['pipe', 'pipe', 'pipe', ...s.extraStdio] });
      } finally {
        sandbox.closeFds();
      }
      this.#initPid = readInitPid(child.stdio[s.infoFd] as NodeJS.ReadableStream | null);
    }
    // Written at once (a pipe buffers far more than these lines); stdin stays open: in a sandbox its end tells the runtime the gateway is gone.
    if (secrets !== undefined && child.stdin !== null) {
      child.stdin.on('error', () => undefined);
      child.stdin.write(secrets);
    }
    this.child = child;
    this.exit = new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      // A spawn that failed (no pid) emits 'error' and no 'exit'.
      child.once('error', () => {
        if (child.pid !== undefined) return;
        this.exited = true;
        resolve();
      });
    });
    if (sandbox !== undefined) void this.exit.then(() => sandbox.release());
    const pidDir = join(options.dataDir, 'runtimes');
    this.#pidFile = child.pid === undefined ? undefined : join(pidDir, String(child.pid));
    if (this.#pidFile !== undefined) {
      const pidFile = this.#pidFile;
      void mkdir(pidDir, { recursive: true })
        .then(() => writeFile(pidFile, options.owner))
        .then(() => (this.exited ? rm(pidFile, { force: true }) : undefined))
        .catch(() => undefined);
    }
    this.listening = new Promise<string>((resolve, reject) => {
      let settled = false;
      const fail = (err: Error) => {
        if (settled) return;
        settled = true;
        watch.stop();
        reject(err);
      };
      // Bounded by the start's own progress (start-progress.ts): a loaded machine stretches a start, a stuck one stops using CPU.
      const watch = watchStart(child.pid, startBoundsOf(options.startTimeoutMs), (reason) => {
        fail(new RuntimeUnavailableError(`${this.subject} ${reason}`));
        child.kill('SIGKILL');
      });
      createInterface({ input: child.stdout! }).on('line', (line) => {
        if (!settled && line.startsWith('{')) {
          try {
            const parsed = JSON.parse(line) as { port?: unknown; socket?: unknown };
            const onSocket = sandbox !== undefined && typeof parsed.socket === 'string';
            if (onSocket || (typeof parsed.port === 'number' && parsed.port > 0)) {
              settled = true;
              watch.stop();
              // A sandboxed runtime is reached through its socket; the origin only names it (undici keys pools by origin).
              this.origin = onSocket ? `http://sandbox-${sandbox.id}.fnhost.invalid` : `http://127.0.0.1:${parsed.port as number}`;
              resolve(this.origin);
              return;
            }
          } catch {
            // not the port line
          }
        }
        // The runtime's own lines (console output of the handler) pass through as they are.
        if (options.forwardOutput) process.stdout.write(line + '\n');
      });
      child.stderr!.setEncoding('utf8');
      child.stderr!.on('data', (chunk: string) => {
        this.stderrTail = (this.stderrTail + chunk).slice(-4096);
        if (options.forwardOutput) process.stderr.write(chunk);
      });
      child.on('error', (err) => fail(new RuntimeUnavailableError(`cannot start ${this.subject}: ${err.message}`, { cause: err })));
      child.on('exit', (code, signal) => {
        this.exited = true;
        this.exitCode = code;
        this.exitSignal = signal;
        if (this.#pidFile !== undefined) void rm(this.#pidFile, { force: true }).catch(() => undefined);
        // bubblewrap gone (killed alone, say): the runtime inside sees its stdin end and exits, and its PID namespace with it.
        child.stdin?.destroy();
        fail(new RuntimeUnavailableError(`${this.subject} exited while starting (${signal ?? 'code ' + code})${this.stderrTail ? ': ' + lastLine(this.stderrTail) : ''}`));
      });
    });
    // Callers that never wait for the start (a pool that is closed first) must not leave a rejection unhandled.
    this.listening.catch(() => undefined);
    const initPid = this.#initPid;
    if (sandbox?.niced === true && initPid !== undefined) {
      void this.listening.then(async () => {
        const init = await initPid;
        if (init !== undefined && this.#running) await lowerAutogroup(init);
      }, () => undefined);
    }
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get outOfMemory(): boolean {
    return /heap out of memory|ERR_WORKER_OUT_OF_MEMORY|Allocation failed/i.test(this.stderrTail);
  }

  /** A generic runtime now serves a function: its pid file names it. */
  async adopt(owner: string, subject: string): Promise<void> {
    this.subject = subject;
    if (this.#pidFile !== undefined && !this.exited) await writeFile(this.#pidFile, owner).catch(() => undefined);
  }

  /** Our own child (the runtime, or bubblewrap) has not been reaped: the pids we know still name its processes. */
  get #running(): boolean {
    return !this.exited && this.child.exitCode === null && this.child.signalCode === null;
  }

  /**
   * SIGKILL; in a sandbox to its PID namespace's init first, which ends every process in it.
   * Never once the sandbox has ended: pids are reused within seconds here (pid_max 32768), and a
   * stale one would be some other process of the machine (a root gateway would kill it).
   */
  async kill(): Promise<void> {
    if (!this.#running) return;
    const init = this.sandbox === undefined ? undefined : await Promise.race([this.#initPid, this.exit.then(() => undefined)]);
    if (init !== undefined && this.#running) {
      try {
        process.kill(init, 'SIGKILL');
      } catch {
        // gone already
      }
    }
    this.child.kill('SIGKILL');
  }

  /**
   * SIGTERM (the runtime drains in-flight calls), SIGKILL after STOP_GRACE_MS. In a sandbox the
   * SIGTERM goes to the runtime itself: bubblewrap forwards no signal, and a SIGTERM to it would
   * end the sandbox (--die-with-parent) without the runtime seeing it, losing the drain.
   */
  async stop(): Promise<void> {
    const child = this.child;
    if (this.exited || child.exitCode !== null || child.signalCode !== null) return;
    const kill = setTimeout(() => void this.kill(), STOP_GRACE_MS);
    if (this.sandbox === undefined) {
      child.kill('SIGTERM');
    } else {
      const init = await Promise.race([this.#initPid, this.exit.then(() => undefined)]);
      const runtime = init === undefined ? undefined : await runtimePidOf(init);
      try {
        if (runtime === undefined || !this.#running) throw new Error('no runtime inside');
        process.kill(runtime, 'SIGTERM');
      } catch {
        // Not started far enough to have a runtime: nothing to drain.
        await this.kill();
      }
    }
    await this.exit;
    clearTimeout(kill);
  }
}

/** bubblewrap's --info-fd JSON: {"child-pid": N}, N the host pid of the sandbox's PID namespace init. */
function readInitPid(stream: NodeJS.ReadableStream | null): Promise<number | undefined> {
  if (stream === null) return Promise.resolve(undefined);
  return new Promise((resolve) => {
    let text = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      text += chunk;
      const m = /"child-pid"\s*:\s*(\d+)/.exec(text);
      if (m !== null) resolve(Number(m[1]));
    });
    stream.on('end', () => resolve(undefined));
    stream.on('error', () => resolve(undefined));
  });
}

/** The most telling line of a runtime's stderr: the last one naming an error, else the last one. */
export function lastLine(text: string): string {
  const lines = text.split('\n').map((l) => l.trim()).filter((l) => l !== '' && !/^Node\.js v\d/.test(l));
  const errorLine = [...lines].reverse().find((l) => /error/i.test(l));
  return (errorLine ?? lines[lines.length - 1] ?? '').slice(0, 300);
}

/** Sets a process RUNTIME_NICE below the gateway (as `nice -n` does; docs/sandbox.md "CPU"); a process gone meanwhile is no error. */
function lowerPriority(pid: number): void {
  try {
    setPriority(pid, Math.min(19, getPriority() + RUNTIME_NICE));
  } catch {
    // gone already
  }
}

/**
 * A sandboxed runtime without a cpu cgroup runs at RUNTIME_NICE, but its sandbox is a session of its
 * own, and where the kernel autogroups sessions the group's nice is what weighs against the gateway:
 * it is lowered too, through the runtime's /proc/<pid>/autogroup (raising a nice needs no privilege).
 */
async function lowerAutogroup(initPid: number): Promise<void> {
  const runtime = await runtimePidOf(initPid);
  if (runtime !== undefined) await writeFile(`/proc/${runtime}/autogroup`, String(RUNTIME_NICE)).catch(() => undefined);
}
