import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { FnhostError, type Executor, type FunctionRecord, type RecycleReason, type Upstream } from '@fnhost/core';
import type { Logger } from '../log.ts';
import type { Metrics } from '../metrics.ts';

// One runtime process per active function, on loopback, configured by the
// environment of docs/internal-protocol.md. A runtime starts eagerly when a
// function is created or changed (sync) and lazily on the first call after a
// gateway restart or a crash (acquire). A change of code, env, routes,
// timeout or memory gives a new config hash and so a new process; the old
// one is stopped once the new one is up.

export const DEFAULT_RUNTIME_MAIN = fileURLToPath(new URL('../../../runtime-image/src/main.ts', import.meta.url));

/** After a runtime failed to start, calls fail fast with that error for this long before another start. */
export const START_RETRY_MS = 1000;

/** The runtime process's own heap above the handler's limit. */
export const RUNTIME_HEAP_HEADROOM_MIB = 64;

export class RuntimeUnavailableError extends FnhostError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('runtime_unavailable', 502, message, { ...options, expose: true });
  }
}

/** The module file extension: .mjs for ES module syntax, .cjs otherwise, so the nearest package.json's "type" never matters. */
export function moduleExtension(code: string): '.mjs' | '.cjs' {
  return /^\s*(import\s*[\w{*'"]|export\s)/m.test(code) ? '.mjs' : '.cjs';
}

const hashes = new WeakMap<FunctionRecord, string>();

/** What a running process was started from: any change means a restart. Records are replaced, never mutated, so the hash is kept per record. */
export function configHash(fn: FunctionRecord): string {
  let hash = hashes.get(fn);
  if (hash === undefined) {
    hash = createHash('sha256')
      .update(JSON.stringify([fn.code, fn.env, fn.routes, fn.timeout_seconds, fn.memory_mib, fn.name]))
      .digest('hex')
      .slice(0, 16);
    hashes.set(fn, hash);
  }
  return hash;
}

export interface RuntimeTokenSource {
  tokenFor(functionId: string): string;
}

export interface LocalExecutorOptions {
  dataDir: string;
  /** Base URL of the gateway's internal API (KV, policy check), known once it listens. */
  gatewayUrl: () => string;
  tokens: RuntimeTokenSource;
  runtimeMain?: string;
  startTimeoutMs?: number;
  logger: Logger;
  metrics: Metrics;
  /** Pass the runtimes' stdout/stderr lines through to the gateway's (default true). */
  forwardOutput?: boolean;
  /** Called when an origin will never answer again (so the proxy can close its pool). */
  onOriginGone?: (origin: string) => void;
}

interface Runtime {
  functionId: string;
  hash: string;
  child: ChildProcess | undefined;
  origin: string | undefined;
  ready: Promise<Upstream>;
  exited: boolean;
  /** Why the process ended, when it did (out of memory is told apart from a crash). */
  exitReason: RecycleReason | 'stopped' | undefined;
  stderrTail: string;
}

export class LocalExecutor implements Executor {
  readonly #opts: LocalExecutorOptions;
  readonly #runtimes = new Map<string, Runtime>();
  readonly #lastExit = new Map<string, RecycleReason>();
  /** A start that failed recently: calls fail fast with its error instead of spawning a process each. */
  readonly #failedStart = new Map<string, { hash: string; at: number; error: Error }>();
  #closed = false;

  constructor(options: LocalExecutorOptions) {
    this.#opts = options;
  }

  /**
   * Ends runtimes a previous gateway left behind (it was killed before it could
   * stop them): each runtime's pid is kept in FNHOST_DATA_DIR/runtimes/ while it
   * runs. A pid is only signalled when /proc shows it still runs the runtime, so
   * a reused pid is never hit. Returns how many were ended.
   */
  async reapStale(): Promise<number> {
    const dir = join(this.#opts.dataDir, 'runtimes');
    let names: string[];
    try {
      names = await readdir(dir);
    } catch {
      return 0;
    }
    const main = this.#opts.runtimeMain ?? DEFAULT_RUNTIME_MAIN;
    let ended = 0;
    for (const name of names) {
      const pid = Number(name);
      if (Number.isInteger(pid) && pid > 0) {
        const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
        if (cmdline.includes(main)) {
          try {
            process.kill(pid, 'SIGKILL');
            ended++;
          } catch {
            // already gone
          }
        }
      }
      await rm(join(dir, name), { force: true });
    }
    if (ended > 0) this.#opts.logger.warn('ended runtimes a previous gateway left running', { count: ended });
    return ended;
  }

  get running(): number {
    let n = 0;
    for (const r of this.#runtimes.values()) if (!r.exited) n++;
    return n;
  }

  /** The pid of a function's runtime (tests kill it to check recovery). */
  pid(functionId: string): number | undefined {
    return this.#runtimes.get(functionId)?.child?.pid;
  }

  /** How the function's last runtime ended, if it ended unexpectedly. */
  lastExit(functionId: string): RecycleReason | undefined {
    return this.#lastExit.get(functionId);
  }

  /** After a failed call: waits up to waitMs for the runtime to exit and says why it did (undefined: still running). */
  async diagnose(functionId: string, waitMs: number): Promise<RecycleReason | undefined> {
    const deadline = Date.now() + waitMs;
    for (;;) {
      const current = this.#runtimes.get(functionId);
      if (current === undefined || current.exited) return this.#lastExit.get(functionId);
      if (Date.now() >= deadline) return undefined;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  acquire(fn: FunctionRecord): Promise<Upstream> {
    const current = this.#runtimes.get(fn.function_id);
    if (current !== undefined && !current.exited && current.hash === configHash(fn)) return current.ready;
    const failed = this.#failedStart.get(fn.function_id);
    if (failed !== undefined && failed.hash === configHash(fn) && Date.now() - failed.at < START_RETRY_MS) return Promise.reject(failed.error);
    return this.#start(fn, current);
  }

  recycle(functionId: string, reason: RecycleReason): void {
    const current = this.#runtimes.get(functionId);
    if (current === undefined) return;
    this.#runtimes.delete(functionId);
    this.#lastExit.set(functionId, reason);
    this.#opts.metrics.runtimeRestarts++;
    this.#opts.logger.warn('recycling runtime', { function_id: functionId, reason, pid: current.child?.pid });
    this.#stop(current);
  }

  async sync(functionId: string, fn: FunctionRecord | null): Promise<void> {
    this.#failedStart.delete(functionId);
    if (fn === null || !fn.active) {
      const current = this.#runtimes.get(functionId);
      if (current !== undefined) {
        this.#runtimes.delete(functionId);
        await this.#stop(current);
      }
      if (fn === null) await rm(join(this.#opts.dataDir, 'functions', functionId), { recursive: true, force: true });
      return;
    }
    const current = this.#runtimes.get(functionId);
    if (current !== undefined && !current.exited && current.hash === configHash(fn)) return;
    // Eager start; a failure here is reported on the first call instead.
    await this.#start(fn, current).then(
      () => undefined,
      () => undefined,
    );
  }

  #start(fn: FunctionRecord, previous: Runtime | undefined): Promise<Upstream> {
    if (this.#closed) return Promise.reject(new RuntimeUnavailableError('the gateway is shutting down'));
    const hash = configHash(fn);
    const runtime: Runtime = { functionId: fn.function_id, hash, child: undefined, origin: undefined, ready: undefined as never, exited: false, exitReason: undefined, stderrTail: '' };
    runtime.ready = this.#launch(fn, runtime);
    this.#runtimes.set(fn.function_id, runtime);
    if (previous !== undefined) {
      if (!previous.exited) this.#opts.metrics.runtimeRestarts++;
      // Let calls already sent to the old process finish on it; new calls go to the new one.
      void runtime.ready.then(
        () => this.#stop(previous),
        () => this.#stop(previous),
      );
    }
    runtime.ready.then(
      () => this.#failedStart.delete(fn.function_id),
      (error: Error) => {
        if (this.#runtimes.get(fn.function_id) === runtime) this.#runtimes.delete(fn.function_id);
        if (runtime.exitReason !== 'stopped') this.#failedStart.set(fn.function_id, { hash, at: Date.now(), error });
      },
    );
    return runtime.ready;
  }

  async #launch(fn: FunctionRecord, runtime: Runtime): Promise<Upstream> {
    const dir = join(this.#opts.dataDir, 'functions', fn.function_id);
    const file = join(dir, runtime.hash + moduleExtension(fn.code));
    await mkdir(dir, { recursive: true });
    await writeFile(file, fn.code, { mode: 0o600 });
    if (runtime.exitReason !== undefined) throw new RuntimeUnavailableError(`the runtime of function ${fn.name} was stopped while starting`);
    const env: Record<string, string> = {
      ...fn.env,
      PORT: '0',
      HOST: '127.0.0.1',
      FNHOST_FUNCTION_FILE: file,
      FNHOST_FUNCTION_ID: fn.function_id,
      FNHOST_FUNCTION_NAME: fn.name,
      FNHOST_ROUTES: JSON.stringify(fn.routes),
      FNHOST_TIMEOUT_MS: String(fn.timeout_seconds * 1000),
      FNHOST_MEMORY_MIB: String(fn.memory_mib),
      FNHOST_GATEWAY_URL: this.#opts.gatewayUrl(),
      FNHOST_RUNTIME_TOKEN: this.#opts.tokens.tokenFor(fn.function_id),
    };
    if (process.env.TZ !== undefined && env.TZ === undefined) env.TZ = process.env.TZ;
    // Node's compile cache cuts a runtime's start (the TypeScript of runtime-image compiled once per
    // machine, not per process): about 2-3x faster create → first 200 (bench/gateway.ts, P5).
    if (env.NODE_COMPILE_CACHE === undefined) env.NODE_COMPILE_CACHE = join(this.#opts.dataDir, 'compile-cache');
    // A process-wide heap cap as a backstop (the runtime limits the handler itself, FNHOST_MEMORY_MIB).
    const heapCap = `--max-old-space-size=${fn.memory_mib + RUNTIME_HEAP_HEADROOM_MIB}`;
    const child = spawn(process.execPath, [heapCap, this.#opts.runtimeMain ?? DEFAULT_RUNTIME_MAIN], {
      env,
      cwd: dir,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    runtime.child = child;
    this.#opts.metrics.runtimeStarts++;
    const pidFile = child.pid === undefined ? undefined : join(this.#opts.dataDir, 'runtimes', String(child.pid));
    if (pidFile !== undefined) {
      void mkdir(join(this.#opts.dataDir, 'runtimes'), { recursive: true })
        .then(() => writeFile(pidFile, fn.function_id))
        .then(() => (runtime.exited ? rm(pidFile, { force: true }) : undefined))
        .catch(() => undefined);
      child.once('exit', () => void rm(pidFile, { force: true }).catch(() => undefined));
    }
    const logger = this.#opts.logger;
    return await new Promise<Upstream>((resolve, reject) => {
      let settled = false;
      const timer = setTimeout(() => {
        fail(new RuntimeUnavailableError(`the runtime of function ${fn.name} did not start within ${this.#opts.startTimeoutMs ?? 15000} ms`));
        child.kill('SIGKILL');
      }, this.#opts.startTimeoutMs ?? 15_000);
      const fail = (err: Error) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        reject(err);
      };
      const lines = createInterface({ input: child.stdout! });
      lines.on('line', (line) => {
        if (!settled && line.startsWith('{')) {
          try {
            const parsed = JSON.parse(line) as { port?: unknown };
            if (typeof parsed.port === 'number' && parsed.port > 0) {
              settled = true;
              clearTimeout(timer);
              runtime.origin = `http://127.0.0.1:${parsed.port}`;
              this.#lastExit.delete(fn.function_id);
              logger.info('runtime started', { function_id: fn.function_id, pid: child.pid, port: parsed.port });
              resolve({ origin: runtime.origin });
              return;
            }
          } catch {
            // not the port line
          }
        }
        // The runtime's own lines (console output of the handler) pass through as they are.
        if (this.#opts.forwardOutput !== false) process.stdout.write(line + '\n');
      });
      child.stderr!.setEncoding('utf8');
      child.stderr!.on('data', (chunk: string) => {
        runtime.stderrTail = (runtime.stderrTail + chunk).slice(-4096);
        if (this.#opts.forwardOutput !== false) process.stderr.write(chunk);
      });
      child.on('error', (err) => fail(new RuntimeUnavailableError(`cannot start the runtime of function ${fn.name}: ${err.message}`, { cause: err })));
      child.on('exit', (code, signal) => {
        runtime.exited = true;
        const oom = /heap out of memory|ERR_WORKER_OUT_OF_MEMORY|Allocation failed/i.test(runtime.stderrTail);
        if (runtime.exitReason === undefined) {
          runtime.exitReason = oom ? 'out_of_memory' : 'crash';
          this.#lastExit.set(fn.function_id, runtime.exitReason);
          if (this.#runtimes.get(fn.function_id) === runtime) {
            this.#runtimes.delete(fn.function_id);
            this.#opts.metrics.runtimeRestarts++;
          }
          logger.warn('runtime exited', { function_id: fn.function_id, pid: child.pid, code, signal, reason: runtime.exitReason });
        }
        if (runtime.origin !== undefined) this.#opts.onOriginGone?.(runtime.origin);
        fail(new RuntimeUnavailableError(`the runtime of function ${fn.name} exited while starting (${signal ?? 'code ' + code})${runtime.stderrTail ? ': ' + lastLine(runtime.stderrTail) : ''}`));
      });
    });
  }

  #stop(runtime: Runtime): Promise<void> {
    if (runtime.exitReason === undefined) runtime.exitReason = 'stopped';
    const child = runtime.child;
    if (child === undefined || runtime.exited || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const kill = setTimeout(() => child.kill('SIGKILL'), 2000);
      child.once('exit', () => {
        clearTimeout(kill);
        resolve();
      });
      child.kill('SIGTERM');
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    const all = [...this.#runtimes.values()];
    this.#runtimes.clear();
    await Promise.all(all.map((r) => this.#stop(r)));
  }
}

/** The most telling line of a runtime's stderr: the last one naming an error, else the last one. */
export function lastLine(text: string): string {
  const lines = text.split('\n').map((l) => l.trim()).filter((l) => l !== '' && !/^Node\.js v\d/.test(l));
  const errorLine = [...lines].reverse().find((l) => /error/i.test(l));
  return (errorLine ?? lines[lines.length - 1] ?? '').slice(0, 300);
}
