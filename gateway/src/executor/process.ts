import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { FnhostError } from '@fnhost/core';

// One runtime process (runtime-image/src/main.ts) as the local executor sees it: spawned with
// an environment, found listening through its first JSON line with a port, its output passed
// through, its pid kept in FNHOST_DATA_DIR/runtimes/ while it runs (so a gateway killed hard
// has its runtimes ended by the next one), stopped with SIGTERM then SIGKILL.

export class RuntimeUnavailableError extends FnhostError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('runtime_unavailable', 502, message, { ...options, expose: true });
  }
}

/** How long a stopped runtime gets to drain before SIGKILL. */
export const STOP_GRACE_MS = 2000;

export interface SpawnOptions {
  main: string;
  env: Record<string, string>;
  cwd: string;
  dataDir: string;
  /** Written into the pid file: the function id, or "pool" for a generic runtime. */
  owner: string;
  /** "the runtime of function hello": the subject of start errors. */
  subject: string;
  startTimeoutMs: number;
  forwardOutput: boolean;
}

export class RuntimeProcess {
  readonly child: ChildProcess;
  /** Resolves with `http://127.0.0.1:<port>` at the listening line; rejects when the process cannot start. */
  readonly listening: Promise<string>;
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
    const child = spawn(process.execPath, [options.main], { env: options.env, cwd: options.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
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
        clearTimeout(timer);
        reject(err);
      };
      const timer = setTimeout(() => {
        fail(new RuntimeUnavailableError(`${this.subject} did not start within ${options.startTimeoutMs} ms`));
        child.kill('SIGKILL');
      }, options.startTimeoutMs);
      createInterface({ input: child.stdout! }).on('line', (line) => {
        if (!settled && line.startsWith('{')) {
          try {
            const parsed = JSON.parse(line) as { port?: unknown };
            if (typeof parsed.port === 'number' && parsed.port > 0) {
              settled = true;
              clearTimeout(timer);
              this.origin = `http://127.0.0.1:${parsed.port}`;
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
        fail(new RuntimeUnavailableError(`${this.subject} exited while starting (${signal ?? 'code ' + code})${this.stderrTail ? ': ' + lastLine(this.stderrTail) : ''}`));
      });
    });
    // Callers that never wait for the start (a pool that is closed first) must not leave a rejection unhandled.
    this.listening.catch(() => undefined);
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

  /** SIGTERM (the runtime drains in-flight calls), SIGKILL after STOP_GRACE_MS. */
  stop(): Promise<void> {
    const child = this.child;
    if (this.exited || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
    const kill = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
    child.kill('SIGTERM');
    return this.exit.then(() => clearTimeout(kill));
  }
}

/** The most telling line of a runtime's stderr: the last one naming an error, else the last one. */
export function lastLine(text: string): string {
  const lines = text.split('\n').map((l) => l.trim()).filter((l) => l !== '' && !/^Node\.js v\d/.test(l));
  const errorLine = [...lines].reverse().find((l) => /error/i.test(l));
  return (errorLine ?? lines[lines.length - 1] ?? '').slice(0, 300);
}
