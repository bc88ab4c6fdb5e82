import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, request } from 'undici';
import { FnhostError, type CodeStore, type Executor, type FunctionRecord, type PreparedRuntime, type RecycleReason, type ThrowawayRuntime, type Upstream } from '@fnhost/core';
import { SANDBOX_CODE_DIR } from '../sandbox/argv.ts';
import { Sandboxes, type SandboxInstance } from '../sandbox/sandbox.ts';
import type { Logger } from '../log.ts';
import type { Metrics } from '../metrics.ts';
import { CodeRefusedError, FunctionFailedToLoadError, loadFailureText } from '../functions/code-check.ts';
import { loadsAsModule, moduleExtension } from './module-file.ts';
import { writeModuleFile } from '../code/module-writer.ts';
import { WAIT_LOAD_HEADER, loadFailureOf } from './load-check.ts';
import { WarmPool, warmPoolSize, type GenericRuntime } from './pool.ts';
import { loggingOnly, type BackgroundFailures } from '../background.ts';
import { IdleRuntimes } from './idle.ts';
import { cpuSettingOf } from '../sandbox/cpu.ts';
import type { Clock } from '@fnhost/core/clock.ts';
import { DEFAULT_LOAD_TIMEOUT_SECONDS, DEFAULT_MEMORY_MIB } from '@fnhost/core/limits.ts';
import { systemClock } from '../scheduler/local.ts';
import { RuntimeProcess, lastLine } from './process.ts';
import { startBoundsOf, watchStart } from './start-progress.ts';
import { FunctionLoadTimeoutError, RuntimeUnavailableError, loadTimeoutText } from './errors.ts';

export { WAIT_LOAD_HEADER, lastLine, moduleExtension };

// One runtime process per active function, on loopback, configured by the
// environment of docs/internal-protocol.md. A runtime starts eagerly when a
// function is created or changed (sync) and lazily on the first call after a
// gateway restart or a crash (acquire). A change of code, env, routes,
// timeout or memory gives a new config hash and so a new process; the old
// one is stopped once the new one is up. A start takes a generic runtime from
// the warm pool when one waits (pool.ts) and specializes it with the very
// environment it would have been started with; otherwise it spawns one. A
// runtime with no call for FNHOST_RUNTIME_IDLE_SECONDS is stopped (idle.ts) and
// started again, from the pool, by the next call.

export const DEFAULT_RUNTIME_MAIN = fileURLToPath(new URL('../../../runtime-image/src/main.ts', import.meta.url));

/** After a runtime failed to start, calls fail fast with that error for this long before another start. */
export const START_RETRY_MS = 1000;
/** A start's timeout when the options set none: how long a start, a specialization or the warm-up may use no CPU. */
const DEFAULT_START_TIMEOUT_MS = 15_000;

/** The warm pool's step of the internal protocol (docs/internal-protocol.md "Warm pool"). */
export const SPECIALIZE_PATH = '/_fnhost/specialize';
export const SPECIALIZE_HEADER = 'x-fnhost-specialize-token';

/**
 * Variables that Node, libuv, OpenSSL or the C library read only when a process starts: a
 * generic runtime started before the function cannot honour them, so a function that sets one
 * gets a process started for it. (TZ, HOME and the like are read later and follow the
 * specialization, which sets the process environment before the worker exists.)
 */
export const START_ONLY_ENV = /^(NODE_|UV_|OPENSSL_|SSL_CERT_|LD_|MALLOC_|GLIBC_|LANG$|LANGUAGE$|LC_)/;

/** Whether a generic runtime can become exactly this function's runtime. */
export function poolable(fn: FunctionRecord): boolean {
  return !Object.keys(fn.env).some((name) => START_ONLY_ENV.test(name));
}


const hashes = new WeakMap<FunctionRecord, string>();

/** What a running process was started from: any change means a restart. Records are replaced, never mutated, so the hash is kept per record. */
export function configHash(fn: FunctionRecord): string {
  let hash = hashes.get(fn);
  if (hash === undefined) {
    hash = createHash('sha256')
      .update(JSON.stringify([fn.code, fn.env, fn.routes, fn.timeout_seconds, fn.memory_mib, fn.name, ...(fn.cpu === undefined ? [] : [fn.cpu]), ...(fn.code_ref === undefined ? [] : [fn.code_ref.digest])]))
      .digest('hex')
      .slice(0, 16);
    hashes.set(fn, hash);
  }
  return hash;
}

/** A sandboxed runtime's working directory: its code folder. */
const SANDBOX_CWD = SANDBOX_CODE_DIR;

function portOf(origin: string): number | undefined {
  const port = new URL(origin).port;
  return port === '' ? undefined : Number(port);
}

export interface RuntimeTokenSource {
  tokenFor(functionId: string): string;
}

export interface LocalExecutorOptions {
  dataDir: string;
  /** Where code by reference (a function's code_ref) is read from (core/src/code/). */
  code?: CodeStore;
  /** Base URL of the gateway's internal API (KV, policy check), known once it listens. */
  gatewayUrl: () => string;
  /** false: runtimes capture no console output for the records (FNHOST_CONSOLE_CAPTURE=off). */
  consoleCapture?: boolean;
  /** FNHOST_EGRESS_PROXY for runtimes: the gateway's egress proxy (docs/egress.md); undefined: none. */
  egressProxy?: () => string | undefined;
  tokens: RuntimeTokenSource;
  runtimeMain?: string;
  /** A runtime's start timeout (start-progress.ts: the CPU stall that fails it); DEFAULT_START_TIMEOUT_MS when unset. */
  startTimeoutMs?: number;
  /**
   * The bound of a function module's load, apart from its calls' time limit (FNHOST_LOAD_TIMEOUT_SECONDS,
   * default 15 s: docs/gateway.md "A load longer than the time limit"). Counted from the runtime
   * listening; past it the runtime is ended, logged, and its waiting calls answered 504.
   */
  loadTimeoutMs?: number;
  logger: Logger;
  metrics: Metrics;
  /** Pass the runtimes' stdout/stderr lines through to the gateway's (default true). */
  forwardOutput?: boolean;
  /** Called when an origin will never answer again (so the proxy can close its pool). */
  onOriginGone?: (origin: string) => void;
  /** Generic runtimes kept started ahead (default FNHOST_WARM_POOL, else 1; 0: none). */
  warmPool?: number;
  /** Runs each runtime in a sandbox of its own (docs/sandbox.md); unsandboxed when undefined. */
  sandboxes?: Sandboxes;
  /**
   * Where a runtime runs its handler (FNHOST_ISOLATION, docs/runtime.md "Isolation: a thread or
   * the process"). Default `process`: on the runtime's main thread, with the function's heap limit
   * on the process; a runtime stuck past its time limit is killed and replaced, and one that ran
   * out of memory is replaced (both counted in fnhost_runtime_restarts_total).
   */
  isolation?: RuntimeIsolation;
  /** A function's runtime with no call for this long is stopped (FNHOST_RUNTIME_IDLE_SECONDS; 0 or undefined: never). */
  idleMs?: number;
  /** The idle timer's clock (tests inject one). */
  clock?: Clock;
  /** Where failures of the executor's background work (pool refills, idle stops, stops) are reported (../background.ts). */
  background?: BackgroundFailures;
}

/** A generic runtime waits with the default heap's memory (its spare worker's heap limit); the specialization sets its function's. */
const GENERIC_MEMORY_MIB = DEFAULT_MEMORY_MIB;

export type RuntimeIsolation = 'thread' | 'process';

/**
 * The node flags a runtime is started with: in process isolation the function's heap limit is the
 * process's (V8 fixes it when the process starts). In thread isolation none: --max-old-space-size
 * is process-wide and overrides the worker's resourceLimits, so it would give the handler
 * memory_mib + headroom instead of memory_mib (measured).
 */
export function runtimeNodeArgs(isolation: RuntimeIsolation, memoryMib: number): string[] {
  return isolation === 'process' ? [`--max-old-space-size=${memoryMib}`] : [];
}

/**
 * Whether a warm-pool runtime can become fn's: its env must allow a late start (poolable), and in
 * process isolation its heap limit, fixed when it started, must be the function's.
 */
export function poolFits(fn: FunctionRecord, isolation: RuntimeIsolation): boolean {
  return poolable(fn) && (isolation === 'thread' || fn.memory_mib === GENERIC_MEMORY_MIB);
}
const MIB = 1024 * 1024;

interface Runtime {
  functionId: string;
  name: string;
  hash: string;
  /** Its process, once spawned or taken from the pool. */
  proc: RuntimeProcess | undefined;
  /** Resolves once the process listens. */
  ready: Promise<Upstream>;
  /**
   * Resolves once its module has loaded or failed to (a failed load answers its calls itself), within
   * the load bound: what a call waits for, so that no call reaches a runtime still loading and no
   * call's deadline ends a runtime that is loading (its load is bounded apart).
   */
  loaded: Promise<Upstream>;
  /** `loaded` has resolved: a call from now on does not wait for this runtime (Upstream.coldStart). */
  started?: boolean;
  /** What `loaded` resolved to, once it did: readyNow()'s answer. */
  upstream?: Upstream;
  /** Why the process ended, when it did (out of memory is told apart from a crash). */
  exitReason: RecycleReason | 'stopped' | undefined;
}

/** The upstream of a call that waited for its runtime to start. */
function cold(upstream: Upstream): Upstream {
  return { ...upstream, coldStart: true };
}

export class LocalExecutor implements Executor {
  readonly #opts: LocalExecutorOptions;
  readonly #runtimes = new Map<string, Runtime>();
  readonly #lastExit = new Map<string, RecycleReason>();
  /** A start that failed recently: calls fail fast with its error instead of spawning a process each. */
  readonly #failedStart = new Map<string, { hash: string; at: number; error: Error }>();
  readonly #pool: WarmPool | undefined;
  readonly #idle: IdleRuntimes | undefined;
  readonly #background: BackgroundFailures;
  /**
   * The compile cache's warm-up while it runs (sandboxed only). A runtime started before it ends
   * would strip and compile the runtime's TypeScript itself (the cache is read-only in its sandbox),
   * and would keep that cold start's memory (amaro, the uncached code: ≈ 93 MiB RSS against 56)
   * for as long as it runs; a function's start waits for it instead, which costs no time, as a cold
   * start takes about as long as the warm-up (bench/RESULTS.md, issue 31).
   */
  #warming: Promise<void> | undefined;
  #closed = false;

  constructor(options: LocalExecutorOptions) {
    this.#opts = options;
    const size = options.warmPool ?? warmPoolSize(process.env.FNHOST_WARM_POOL);
    this.#background = options.background ?? loggingOnly(options.logger);
    this.#pool = size > 0 ? new WarmPool({ size, spawn: (token) => this.#spawnGeneric(token), logger: options.logger, background: this.#background }) : undefined;
    const idleMs = options.idleMs ?? 0;
    this.#idle = idleMs > 0 ? new IdleRuntimes({ idleMs, clock: options.clock ?? systemClock, stop: (functionId) => this.#stopIdle(functionId), background: this.#background }) : undefined;
  }

  callStarted(functionId: string): void {
    this.#idle?.callStarted(functionId);
  }

  callEnded(functionId: string): void {
    this.#idle?.callEnded(functionId);
  }

  /** Idle for FNHOST_RUNTIME_IDLE_SECONDS with no call in flight: the normal stop (SIGTERM, drain), and the next call starts another. */
  #stopIdle(functionId: string): void {
    const current = this.#runtimes.get(functionId);
    if (current === undefined || this.#closed) return;
    this.#runtimes.delete(functionId);
    this.#opts.metrics.runtimeIdleStops++;
    this.#opts.logger.info('runtime stopped after idling', { function_id: functionId, pid: current.proc?.pid, idle_seconds: (this.#opts.idleMs ?? 0) / 1000 });
    void this.#stop(current);
  }

  /**
   * Ends runtimes a previous gateway left behind (it was killed before it could
   * stop them): each runtime's pid is kept in FNHOST_DATA_DIR/runtimes/ while it
   * runs. A pid is only signalled when /proc shows it still runs the runtime, so
   * a reused pid is never hit. Returns how many were ended. Then fills the warm
   * pool (not before: the pool's own pids live in the same folder).
   */
  async reapStale(): Promise<number> {
    const ended = await this.#reap();
    const sandboxes = this.#opts.sandboxes;
    if (sandboxes === undefined) this.#pool?.fill();
    else {
      // The pool's sandboxes, and every function's, start from a filled compile cache; the warm-up runs beside the gateway's start.
      this.#warming = this.#warmCompileCache(sandboxes)
        .catch((err: Error) => this.#background.failed('compile_cache', err))
        .then(() => {
          this.#warming = undefined;
          this.#pool?.fill();
        });
    }
    return ended;
  }

  async #reap(): Promise<number> {
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

  /**
   * Fills the sandboxes' compile cache (read-only in every other sandbox): one sandbox with the
   * cache writable runs the runtime on a built-in hello module until it answers /healthz (its
   * worker has loaded and flushed its cache), then stops. No function's code runs with the cache
   * writable. Without it each sandboxed start compiles the runtime's TypeScript again (measured:
   * create → first 200 ≈ 5× slower).
   */
  async #warmCompileCache(sandboxes: Sandboxes): Promise<void> {
    const sandbox = sandboxes.create(this.#sandboxCommand(GENERIC_MEMORY_MIB), this.#memoryBytes(GENERIC_MEMORY_MIB), { writableCompileCache: true });
    const file = join(sandbox.codeDir, 'hello.mjs');
    await writeFile(file, 'export default (req, res) => res.end();\n', { mode: 0o400 });
    await sandbox.own(file);
    const env = this.#withProcessDefaults({ FNHOST_FUNCTION_FILE: sandbox.inside('hello.mjs'), FNHOST_FUNCTION_ID: 'compile-cache-warmup', FNHOST_FUNCTION_NAME: 'warmup' });
    const proc = this.#spawn(env, SANDBOX_CWD, 'warmup', 'the compile cache warm-up', GENERIC_MEMORY_MIB, sandbox);
    try {
      const origin = await proc.listening;
      const client = new Client(origin, { connect: { socketPath: proc.socketPath! } });
      // Until the module has loaded, bounded by the warm-up's own progress (start-progress.ts), as a start is.
      let stuck = false;
      const watch = watchStart(proc.pid, startBoundsOf(this.#startTimeoutMs), () => {
        stuck = true;
      });
      try {
        for (;;) {
          const r = await client.request({ path: '/healthz', method: 'GET' });
          await r.body.dump();
          if (r.statusCode === 200 || stuck) break;
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      } finally {
        watch.stop();
        await client.close();
      }
    } finally {
      await proc.stop();
      await sandboxes.sealCompileCache();
    }
  }

  get #startTimeoutMs(): number {
    return this.#opts.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS;
  }

  /** Function runtimes running now (the warm pool's generic ones are not counted). */
  get running(): number {
    let n = 0;
    for (const r of this.#runtimes.values()) if (r.proc !== undefined && !r.proc.exited) n++;
    return n;
  }

  /** The warm pool: its configured size, and the pids of the generic runtimes waiting now (tests, bench). */
  get warmPool(): { size: number; ready: number; pids: number[] } {
    return { size: this.#pool?.size ?? 0, ready: this.#pool?.ready ?? 0, pids: this.#pool?.pids() ?? [] };
  }

  /** The pid of a function's runtime (tests kill it to check recovery). */
  pid(functionId: string): number | undefined {
    return this.#runtimes.get(functionId)?.proc?.pid;
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
      if (current === undefined || current.proc?.exited === true) return this.#lastExit.get(functionId);
      if (Date.now() >= deadline) return undefined;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  readyNow(fn: FunctionRecord): Upstream | undefined {
    const current = this.#runtimes.get(fn.function_id);
    // The same test as acquire()'s first branch, for a runtime whose `loaded` has resolved.
    return current !== undefined && current.started === true && current.proc?.exited !== true && current.hash === configHash(fn) ? current.upstream : undefined;
  }

  acquire(fn: FunctionRecord): Promise<Upstream> {
    const current = this.#runtimes.get(fn.function_id);
    if (current !== undefined && current.proc?.exited !== true && current.hash === configHash(fn)) return current.started === true ? current.loaded : current.loaded.then(cold);
    const failed = this.#failedStart.get(fn.function_id);
    if (failed !== undefined && failed.hash === configHash(fn) && Date.now() - failed.at < START_RETRY_MS) return Promise.reject(failed.error);
    return this.#start(fn, current).then(cold);
  }

  /**
   * Starts fn's runtime as a start would (a warm-pool runtime specialized, or a spawned one) and
   * waits for its module to load, without touching the function's current runtime. The module is
   * imported in the runtime (in its sandbox): that is where a missing handler shows. Refuses
   * (CodeRefusedError) a module that does not parse or exports no handler. Any other outcome
   * (a top-level throw, a runtime that cannot start, a load slower than the start timeout) is
   * not the code's fault as such: the record is stored and its calls see it, as before.
   */
  async prepare(fn: FunctionRecord): Promise<PreparedRuntime> {
    const nothing: PreparedRuntime = { commit: () => undefined, discard: async () => undefined };
    const current = this.#runtimes.get(fn.function_id);
    if (this.#closed || (current !== undefined && current.proc?.exited !== true && current.hash === configHash(fn))) return nothing;
    const runtime = this.#newRuntime(fn);
    runtime.ready = this.#run(fn, runtime);
    let upstream: Upstream;
    try {
      upstream = await runtime.ready;
    } catch {
      await this.#stop(runtime);
      return nothing;
    }
    let timedOut = false;
    const failure = await loadFailureOf(upstream, this.#loadBoundOf(fn)).catch((err: Error) => {
      if (err.name === 'TimeoutError' && runtime.exitReason === undefined) timedOut = true;
      else this.#opts.logger.warn('could not learn whether a function\'s module loaded; accepting it', { function_id: fn.function_id, error: err.message });
      return undefined;
    });
    if (timedOut) {
      // Past its load bound: ended now, as a restart's load would be; the write is refused unless stored anyway.
      this.#loadTimedOut(runtime, this.#loadBoundOf(fn));
      return { loadError: loadTimeoutText(this.#loadBoundOf(fn)), loadTimedOut: true, commit: () => undefined, discard: async () => undefined };
    }
    runtime.loaded = Promise.resolve(upstream);
    runtime.upstream = upstream;
    runtime.started = true;
    if (failure !== undefined && (failure.kind === 'syntax' || failure.kind === 'no_handler')) {
      await this.#stop(runtime);
      throw new CodeRefusedError(failure.kind, loadFailureText(failure.kind, failure.message, fn.code, loadsAsModule(fn.code)));
    }
    return {
      ...(failure === undefined ? {} : { loadError: failure.message }),
      commit: () => {
        if (this.#closed || runtime.exitReason !== undefined) return;
        const previous = this.#runtimes.get(fn.function_id);
        this.#runtimes.set(fn.function_id, runtime);
        this.#idle?.started(fn.function_id);
        this.#failedStart.delete(fn.function_id);
        if (previous !== undefined && previous !== runtime) {
          if (previous.proc?.exited !== true) this.#opts.metrics.runtimeRestarts++;
          void this.#stop(previous);
        }
      },
      discard: () => this.#stop(runtime),
    };
  }

  /**
   * A runtime for one call to a version of fn that is never stored (function:replay --code): started
   * as prepare() starts one (warm pool or spawn, in a sandbox of its own, the function's environment),
   * never put in #runtimes, so the serving runtime and the function's calls never see it.
   */
  async throwaway(fn: FunctionRecord): Promise<ThrowawayRuntime> {
    if (this.#closed) throw new RuntimeUnavailableError('the gateway is shutting down');
    const runtime = this.#newRuntime(fn);
    runtime.ready = this.#run(fn, runtime);
    let upstream: Upstream;
    try {
      upstream = await runtime.ready;
      const failure = await loadFailureOf(upstream, this.#loadBoundOf(fn)).catch((err: Error) => {
        throw err.name === 'TimeoutError' ? new FunctionLoadTimeoutError(this.#loadBoundOf(fn)) : err;
      });
      if (failure !== undefined) {
        if (failure.kind === 'syntax' || failure.kind === 'no_handler') {
          throw new CodeRefusedError(failure.kind, loadFailureText(failure.kind, failure.message, fn.code, loadsAsModule(fn.code)));
        }
        throw new FunctionFailedToLoadError(failure.message);
      }
    } catch (err) {
      await this.#stop(runtime);
      throw err instanceof FnhostError ? err : new RuntimeUnavailableError(`the throwaway version's runtime did not start: ${(err as Error).message}`, { cause: err });
    }
    return { upstream, discard: () => this.#stop(runtime) };
  }

  recycle(functionId: string, reason: RecycleReason): void {
    const current = this.#runtimes.get(functionId);
    if (current === undefined) return;
    this.#runtimes.delete(functionId);
    this.#lastExit.set(functionId, reason);
    this.#opts.metrics.runtimeRestarts++;
    this.#opts.logger.warn('recycling runtime', { function_id: functionId, reason, pid: current.proc?.pid });
    // Past the gateway's own bound (time limit + 1 s) a runtime cannot answer at all: in process
    // isolation its handler has blocked the only thread, which no SIGTERM reaches, so no drain.
    void this.#stop(current, reason === 'timeout' && this.#isolation === 'process' ? 'kill' : 'drain');
  }

  async sync(functionId: string, fn: FunctionRecord | null): Promise<void> {
    this.#failedStart.delete(functionId);
    if (fn === null || !fn.active) {
      const current = this.#runtimes.get(functionId);
      this.#idle?.forget(functionId);
      if (current !== undefined) {
        this.#runtimes.delete(functionId);
        await this.#stop(current);
      }
      if (fn === null) await rm(join(this.#opts.dataDir, 'functions', functionId), { recursive: true, force: true });
      return;
    }
    const current = this.#runtimes.get(functionId);
    if (current !== undefined && current.proc?.exited !== true && current.hash === configHash(fn)) return;
    // Eager start; a failure here is reported on the first call instead.
    await this.#start(fn, current).then(
      () => undefined,
      () => undefined,
    );
  }

  #start(fn: FunctionRecord, previous: Runtime | undefined): Promise<Upstream> {
    if (this.#closed) return Promise.reject(new RuntimeUnavailableError('the gateway is shutting down'));
    const hash = configHash(fn);
    const runtime = this.#newRuntime(fn);
    runtime.ready = this.#run(fn, runtime);
    runtime.loaded = runtime.ready.then((upstream) => this.#awaitLoad(fn, runtime, upstream));
    runtime.loaded.then((upstream) => {
      runtime.upstream = upstream;
      runtime.started = true;
    }, () => undefined);
    this.#runtimes.set(fn.function_id, runtime);
    this.#idle?.started(fn.function_id);
    if (previous !== undefined) {
      if (previous.proc?.exited !== true) this.#opts.metrics.runtimeRestarts++;
      // Let calls already sent to the old process finish on it; new calls go to the new one.
      void runtime.loaded.then(
        () => this.#stop(previous),
        () => this.#stop(previous),
      );
    }
    runtime.loaded.then(
      () => this.#failedStart.delete(fn.function_id),
      (error: Error) => {
        if (this.#runtimes.get(fn.function_id) === runtime) this.#runtimes.delete(fn.function_id);
        if (runtime.exitReason !== 'stopped') this.#failedStart.set(fn.function_id, { hash, at: Date.now(), error });
      },
    );
    return runtime.loaded;
  }

  #newRuntime(fn: FunctionRecord): Runtime {
    return { functionId: fn.function_id, name: fn.name, hash: configHash(fn), proc: undefined, ready: undefined as never, loaded: undefined as never, exitReason: undefined };
  }

  /**
   * fn's load bound: the setting, or its time limit when that is longer (a function given 60 s
   * keeps the load it always had; the bound only stops a short limit from cutting a load short).
   */
  #loadBoundOf(fn: FunctionRecord): number {
    return Math.max(this.#opts.loadTimeoutMs ?? DEFAULT_LOAD_TIMEOUT_SECONDS * 1000, fn.timeout_seconds * 1000);
  }

  /**
   * Waits for a listening runtime's module to load (or fail to: a failed load answers its calls
   * 500 itself) within the load bound; past it the runtime is ended and the calls waiting for it
   * get FunctionLoadTimeoutError (those whose own limit came first were answered 504 already).
   */
  async #awaitLoad(fn: FunctionRecord, runtime: Runtime, upstream: Upstream): Promise<Upstream> {
    try {
      await loadFailureOf(upstream, this.#loadBoundOf(fn));
    } catch (err) {
      if (runtime.exitReason === undefined && (err as Error).name === 'TimeoutError') {
        this.#loadTimedOut(runtime, this.#loadBoundOf(fn));
        throw new FunctionLoadTimeoutError(this.#loadBoundOf(fn));
      }
      throw new RuntimeUnavailableError(`the runtime of function ${fn.name} ended while loading its module (${(err as Error).message})`, { cause: err });
    }
    return upstream;
  }

  /** A load past its bound: the runtime is ended at once (a blocked load answers no SIGTERM), logged and counted as a restart. */
  #loadTimedOut(runtime: Runtime, boundMs: number): void {
    if (this.#runtimes.get(runtime.functionId) === runtime) this.#runtimes.delete(runtime.functionId);
    // Not 'stopped': calls in the next START_RETRY_MS fail fast with the load's timeout (#start).
    runtime.exitReason = 'timeout';
    this.#opts.metrics.runtimeRestarts++;
    this.#opts.logger.warn('a function module did not finish loading within its load bound; ending its runtime', { function_id: runtime.functionId, pid: runtime.proc?.pid, load_timeout_seconds: boundMs / 1000 });
    void this.#stop(runtime, 'kill');
  }

  /** The environment of a runtime for fn (docs/internal-protocol.md "Starting a runtime"), the same whether spawned or specialized. */
  #envFor(fn: FunctionRecord, file: string): Record<string, string> {
    const sandboxed = this.#opts.sandboxes !== undefined;
    const env: Record<string, string> = {
      ...fn.env,
      PORT: '0',
      HOST: '127.0.0.1',
      FNHOST_FUNCTION_FILE: file,
      FNHOST_FUNCTION_ID: fn.function_id,
      FNHOST_FUNCTION_NAME: fn.name,
      FNHOST_ROUTES: JSON.stringify(fn.routes),
      FNHOST_TIMEOUT_MS: String(fn.timeout_seconds * 1000),
      FNHOST_LOAD_TIMEOUT_MS: String(this.#loadBoundOf(fn)),
      FNHOST_MEMORY_MIB: String(fn.memory_mib),
      // A sandbox has no network: the gateway's internal API is a Unix socket bound into it.
      FNHOST_GATEWAY_URL: sandboxed ? Sandboxes.gatewayUrl : this.#opts.gatewayUrl(),
      FNHOST_RUNTIME_TOKEN: this.#opts.tokens.tokenFor(fn.function_id),
    };
    const egress = this.#opts.egressProxy?.();
    if (egress !== undefined) env.FNHOST_EGRESS_PROXY = egress;
    if (this.#opts.consoleCapture === false) env.FNHOST_CONSOLE_CAPTURE = 'off';
    return this.#withProcessDefaults(env);
  }

  #withProcessDefaults(env: Record<string, string>): Record<string, string> {
    if (process.env.TZ !== undefined && env.TZ === undefined) env.TZ = process.env.TZ;
    // Node's compile cache cuts a runtime's start (the TypeScript of runtime-image compiled once per
    // machine, not per process): about 2-3x faster create → first 200 (bench/gateway.ts, P5).
    if (env.NODE_COMPILE_CACHE === undefined) env.NODE_COMPILE_CACHE = this.#opts.sandboxes?.compileCache ?? join(this.#opts.dataDir, 'compile-cache');
    return env;
  }

  // The heap limit: see runtimeNodeArgs (a sandbox's command carries it, #sandboxCommand).
  #spawn(env: Record<string, string>, cwd: string, owner: string, subject: string, memoryMib: number, sandbox?: SandboxInstance): RuntimeProcess {
    env = { ...env, FNHOST_ISOLATION: this.#isolation };
    if (sandbox !== undefined) env.FNHOST_RUNTIME_SOCKET = Sandboxes.runtimeSocket;
    const proc = new RuntimeProcess({
      sandbox,
      main: this.#opts.runtimeMain ?? DEFAULT_RUNTIME_MAIN,
      nodeArgs: runtimeNodeArgs(this.#isolation, memoryMib),
      env,
      cwd,
      dataDir: this.#opts.dataDir,
      owner,
      subject,
      startTimeoutMs: this.#startTimeoutMs,
      forwardOutput: this.#opts.forwardOutput !== false,
    });
    this.#opts.metrics.runtimeStarts++;
    return proc;
  }

  /** The host side of a new sandbox for one runtime (undefined when runtimes run unsandboxed). */
  #sandbox(memoryMib: number): SandboxInstance | undefined {
    const sandboxes = this.#opts.sandboxes;
    return sandboxes?.create(this.#sandboxCommand(memoryMib), this.#memoryBytes(memoryMib));
  }

  #sandboxCommand(memoryMib: number): string[] {
    return [process.execPath, ...runtimeNodeArgs(this.#isolation, memoryMib), this.#opts.runtimeMain ?? DEFAULT_RUNTIME_MAIN];
  }

  get #isolation(): RuntimeIsolation {
    return this.#opts.isolation ?? 'process';
  }

  #memoryBytes(memoryMib: number): number {
    return (memoryMib + (this.#opts.sandboxes?.memoryHeadroomMib ?? 0)) * MIB;
  }

  #spawnGeneric(token: string): RuntimeProcess {
    // Its function's worker thread starts ahead too, with the heap most functions have (the default):
    // a specialization then only loads the function's module (runtime-image/src/spare-worker.ts).
    const env = this.#withProcessDefaults({ PORT: '0', HOST: '127.0.0.1', FNHOST_SPECIALIZE_TOKEN: token, FNHOST_WARM_WORKER_MEMORY_MIB: String(GENERIC_MEMORY_MIB) });
    const sandbox = this.#sandbox(GENERIC_MEMORY_MIB);
    if (sandbox !== undefined) return this.#spawn(env, '/', 'pool', 'a warm-pool runtime', GENERIC_MEMORY_MIB, sandbox);
    // Its working directory until the specialization moves it to the function's folder.
    mkdirSync(this.#opts.dataDir, { recursive: true });
    return this.#spawn(env, this.#opts.dataDir, 'pool', 'a warm-pool runtime', GENERIC_MEMORY_MIB);
  }

  async #run(fn: FunctionRecord, runtime: Runtime): Promise<Upstream> {
    const name = runtime.hash;
    if (this.#warming !== undefined) await this.#warming;
    const generic = poolFits(fn, this.#isolation) ? this.#pool?.take() : undefined;
    if (generic !== undefined) {
      try {
        const sandbox = generic.proc.sandbox;
        // Before the function's code runs: its connections to the gateway count for it from the first one.
        sandbox?.serve(fn.function_id);
        // A sandboxed runtime sees the function's code in its own /fn, written there now: the code is bound at specialization.
        // Its memory limit is set meanwhile (both before the specialization: the function's code runs only after it).
        const [file] = await Promise.all([sandbox === undefined ? this.#writeCode(fn, name) : this.#writeSandboxCode(sandbox, fn, name), sandbox?.setMemory(this.#memoryBytes(fn.memory_mib))]);
        sandbox?.setCpu(cpuSettingOf(fn.cpu));
        if (runtime.exitReason !== undefined) throw new RuntimeUnavailableError(`the runtime of function ${fn.name} was stopped while starting`);
        return await this.#specialize(fn, runtime, generic, this.#envFor(fn, file), sandbox === undefined ? join(this.#opts.dataDir, 'functions', fn.function_id) : SANDBOX_CWD);
      } catch (err) {
        runtime.proc = undefined;
        void generic.proc.stop();
        if (runtime.exitReason !== undefined) throw new RuntimeUnavailableError(`the runtime of function ${fn.name} was stopped while starting`);
        this.#opts.logger.warn('a warm-pool runtime could not be specialized; starting one for the function', { function_id: fn.function_id, pid: generic.proc.pid, error: (err as Error).message });
      }
    }
    return await this.#launch(fn, runtime, name);
  }

  /** Unsandboxed: the code in FNHOST_DATA_DIR/functions/<id>/, the runtime's working directory (`name` without its extension). */
  async #writeCode(fn: FunctionRecord, name: string): Promise<string> {
    const dir = join(this.#opts.dataDir, 'functions', fn.function_id);
    await mkdir(dir, { recursive: true });
    return await writeModuleFile(dir, name, fn, 0o600, this.#opts.code);
  }

  /** Sandboxed: the code in the sandbox's own folder (its /fn, read-only inside), readable by its uid only. */
  async #writeSandboxCode(sandbox: SandboxInstance, fn: FunctionRecord, name: string): Promise<string> {
    const file = await writeModuleFile(sandbox.codeDir, name, fn, 0o400, this.#opts.code);
    await sandbox.own(file);
    return sandbox.inside(basename(file));
  }

  async #launch(fn: FunctionRecord, runtime: Runtime, name: string): Promise<Upstream> {
    const sandbox = this.#sandbox(fn.memory_mib);
    // Before the function's code runs: its connections to the gateway count for it from the first one.
    sandbox?.serve(fn.function_id);
    let file: string;
    try {
      file = sandbox === undefined ? await this.#writeCode(fn, name) : await this.#writeSandboxCode(sandbox, fn, name);
      sandbox?.setCpu(cpuSettingOf(fn.cpu));
    } catch (err) {
      await sandbox?.release();
      throw err;
    }
    if (runtime.exitReason !== undefined) {
      await sandbox?.release();
      throw new RuntimeUnavailableError(`the runtime of function ${fn.name} was stopped while starting`);
    }
    const cwd = sandbox === undefined ? join(this.#opts.dataDir, 'functions', fn.function_id) : SANDBOX_CWD;
    const proc = this.#spawn(this.#envFor(fn, file), cwd, fn.function_id, `the runtime of function ${fn.name}`, fn.memory_mib, sandbox);
    runtime.proc = proc;
    this.#watch(runtime, proc);
    const origin = await proc.listening;
    this.#lastExit.delete(fn.function_id);
    this.#opts.logger.info('runtime started', { function_id: fn.function_id, pid: proc.pid, port: portOf(origin), sandbox: sandbox?.id });
    return { origin, socketPath: proc.socketPath };
  }

  /** Turns a generic runtime into fn's: one authenticated loopback request with the environment a start would have had. */
  async #specialize(fn: FunctionRecord, runtime: Runtime, generic: GenericRuntime, env: Record<string, string>, dir: string): Promise<Upstream> {
    const proc = generic.proc;
    runtime.proc = proc; // so a stop (delete, deactivate, recycle) during the specialization ends it
    const origin = await proc.listening;
    const { PORT: _port, HOST: _host, ...specEnv } = env;
    const client = proc.socketPath === undefined ? undefined : new Client(origin, { connect: { socketPath: proc.socketPath } });
    // Bounded by the runtime's own progress, as its start is (start-progress.ts): a few
    // milliseconds of work on a quiet machine, stretched without end on a loaded one.
    const aborted = new AbortController();
    const watch = watchStart(proc.pid, startBoundsOf(this.#startTimeoutMs), (reason) => aborted.abort(new Error(`the warm-pool runtime being specialized ${reason}`)));
    try {
      const response = await request(origin + SPECIALIZE_PATH, {
        method: 'POST',
        headers: { [SPECIALIZE_HEADER]: generic.token, 'content-type': 'application/json' },
        body: JSON.stringify({ env: specEnv, cwd: dir }),
        signal: aborted.signal,
        dispatcher: client,
      });
      const text = await response.body.text();
      if (response.statusCode !== 200) throw new Error(`the specialization answered ${response.statusCode}: ${text.slice(0, 300)}`);
    } finally {
      watch.stop();
      void client?.close().catch(() => undefined);
    }
    await proc.adopt(fn.function_id, `the runtime of function ${fn.name}`);
    this.#watch(runtime, proc);
    if (proc.exited) throw new Error('the warm-pool runtime exited while being specialized');
    this.#lastExit.delete(fn.function_id);
    this.#opts.logger.info('runtime started', { function_id: fn.function_id, pid: proc.pid, port: portOf(origin), sandbox: proc.sandbox?.id, warm_pool: true });
    return { origin, socketPath: proc.socketPath };
  }

  /** What the end of a function's runtime process means: a crash or out of memory unless it was stopped. */
  #watch(runtime: Runtime, proc: RuntimeProcess): void {
    void proc.exit.then(() => {
      if (runtime.proc !== proc) return;
      if (runtime.exitReason === undefined) {
        runtime.exitReason = proc.outOfMemory ? 'out_of_memory' : 'crash';
        this.#lastExit.set(runtime.functionId, runtime.exitReason);
        if (this.#runtimes.get(runtime.functionId) === runtime) {
          this.#runtimes.delete(runtime.functionId);
          this.#opts.metrics.runtimeRestarts++;
        }
        this.#opts.logger.warn('runtime exited', { function_id: runtime.functionId, pid: proc.pid, code: proc.exitCode, signal: proc.exitSignal, reason: runtime.exitReason });
      }
      if (proc.origin !== undefined) this.#opts.onOriginGone?.(proc.origin);
    });
  }

  /**
   * Never rejects: a stop runs unawaited from timers and recycles, so its failure is reported, not thrown.
   * `kill`: SIGKILL at once, no drain (a runtime that cannot run its SIGTERM handler).
   */
  async #stop(runtime: Runtime, how: 'drain' | 'kill' = 'drain'): Promise<void> {
    if (runtime.exitReason === undefined) runtime.exitReason = 'stopped';
    try {
      await (how === 'kill' ? runtime.proc?.kill() : runtime.proc?.stop());
    } catch (err) {
      this.#background.failed('runtime_stop', err, { function_id: runtime.functionId });
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#idle?.close();
    const all = [...this.#runtimes.values()];
    this.#runtimes.clear();
    await Promise.all([this.#pool?.close(), ...all.map((r) => this.#stop(r))]);
  }
}
