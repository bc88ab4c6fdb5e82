// The runtime's supervisor of the handler: one worker thread (worker.ts) with its own V8 heap
// limit, the calls it holds, and the watchdog that ends it on a timeout (even `while (true) {}`)
// and replaces it when it dies. The HTTP side (main.ts) hands calls to it.
// With FNHOST_ISOLATION=process the handler runs on this thread instead (./in-thread.ts): the
// watchdog then sees a blocked loop only once it turns again, and ending the handler ends the
// process; a loop that never turns again, or an out-of-memory, is ended by whoever started the
// process (the gateway's time limit + 1 s, the process's --max-old-space-size), who replaces it.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Worker } from 'node:worker_threads';
import type { RuntimeConfig } from './config.ts';
import { InThreadWorker, startInThread } from './in-thread.ts';
import { replaceEnv } from './specialize.ts';
import {
  M_ABORT,
  M_CONFIGURE,
  M_REQUEST,
  W_CHUNK,
  W_CONSOLE,
  W_END,
  W_ERROR,
  W_FULL,
  W_HEAD,
  W_LOAD_ERROR,
  W_READY,
  W_SPARE_STALE,
  type FromWorker,
  type FullMsg,
  type RequestMsg,
} from './protocol.ts';
import { ResponseFramingError, checkFinalStatus, declaredLength, framedHeaders } from './framing.ts';
import type { WorkerData } from './worker.ts';
import { timeZoneOffsets, type SpareWorker } from './spare-worker.ts';
import { ConsoleCapture, consoleSender } from './console-capture.ts';
import { IDLE_CHECK_MS, isIdle } from './memory.ts';

export const HEARTBEAT_MS = 50;
/** At a call's deadline, a worker whose loop has not turned for this long is blocked: end it. */
const BLOCKED_AFTER_MS = 250;
/** How long the worker may take to load the runtime's own modules before the function's load clock starts (they always finish; a machine under load makes them slow). */
const OWN_START_GRACE_MS = 30_000;
/** The exit code of a process-isolated runtime that ended itself for its handler (a blocked loop): its starter replaces it. */
export const HANDLER_ENDED_EXIT_CODE = 3;
/** How long a process-isolated runtime ending itself waits for the console output of its calls to reach the gateway. */
const END_FLUSH_MS = 1000;

interface Pending {
  res: ServerResponse;
  deadline: number;
  /** Set when the worker holds the request (not while it waits in the start-up queue). */
  sent: boolean;
}

export type ErrorKind = 'exception' | 'timeout' | 'out_of_memory' | 'exit' | 'load' | 'crash' | 'invalid_response';

const STATUS_OF: Record<ErrorKind, number> = { exception: 500, timeout: 504, out_of_memory: 502, exit: 502, load: 500, crash: 502, invalid_response: 502 };

export function log(level: 'info' | 'warn' | 'error', msg: string, fields: Record<string, unknown> = {}): void {
  const line = JSON.stringify({ time: new Date().toISOString(), level, msg, component: 'runtime', ...fields }) + '\n';
  if (level === 'info') process.stdout.write(line);
  else process.stderr.write(line);
}

/**
 * The most of an error's text x-fnhost-error carries (the execution log's error_message): a thrown
 * message can be any size, and a header over the gateway's limit would fail the call as a crash.
 */
export const MAX_ERROR_MESSAGE_CHARS = 1024;

/** Answers with an outcome the runtime produced (docs/internal-protocol.md "An invocation"). */
export function answerError(res: ServerResponse, status: number, kind: string, fullMessage: string, body?: string, stack?: string): void {
  const message = fullMessage.length <= MAX_ERROR_MESSAGE_CHARS ? fullMessage : `${fullMessage.slice(0, MAX_ERROR_MESSAGE_CHARS)}…`;
  if (res.headersSent) {
    // Streaming had begun: the status is gone, so cut the response; the caller sees it incomplete.
    res.destroy();
    return;
  }
  const text = body ?? JSON.stringify({ error: kind || 'error', message });
  const headers: Record<string, string | number> = {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'x-fnhost-error': encodeURIComponent(message),
  };
  if (kind !== '') headers['x-fnhost-error-kind'] = kind;
  // Already bounded (error-stack.ts): the frames in the function's own files.
  if (stack !== undefined) headers['x-fnhost-error-stack'] = encodeURIComponent(stack);
  res.writeHead(status, headers).end(text);
}

/** The generic body a caller gets for a response the runtime refused; the reason goes to the execution log only. */
const REFUSED_BODY = JSON.stringify({ error: 'invalid_response', message: "the function's response was refused; the reason is in the execution log" });

/** A response the runtime will not send (a status or header the handler may not set, docs/runtime.md): 502 at once, its reason in x-fnhost-error. */
function refuse(res: ServerResponse, err: unknown): void {
  const reason = err instanceof ResponseFramingError ? err.message : `the function's response is invalid: ${(err as Error).message}`;
  answerError(res, 502, 'invalid_response', reason, REFUSED_BODY);
}

/** A final status: an integer from 200 to 999 (node:http refuses the rest below 100 and above 999). */
function checkStatus(status: unknown): void {
  if (typeof status !== 'number' || !Number.isInteger(status)) throw new ResponseFramingError(`the function answered with status ${String(status).slice(0, 40)}, which is not an integer`);
  checkFinalStatus(status, 'the function answered');
}

/** The head of a response sent whole: the handler's headers as framing allows, and the body's real length. */
function wholeResponseHead(msg: FullMsg, isHead: boolean): string[] {
  checkStatus(msg.s);
  const headers = framedHeaders(msg.h, 'the response');
  if (isHead) {
    // No body follows; a handler's own length of the body a GET would get is kept when it is a number.
    const declared = declaredLength(msg.h);
    if (declared !== undefined) headers.push('Content-Length', declared);
  } else if (msg.s !== 204 && msg.s !== 304) {
    headers.push('Content-Length', String(msg.b === undefined ? 0 : typeof msg.b === 'string' ? Buffer.byteLength(msg.b) : msg.b.byteLength));
  }
  return headers;
}

export class Supervisor {
  readonly #config: RuntimeConfig;
  readonly #pending = new Map<number, Pending>();
  readonly #queue: RequestMsg[] = [];
  #nextId = 1;
  #worker: Worker | InThreadWorker | undefined;
  /** FNHOST_ISOLATION=process: the handler runs on this thread, and ends with the process. */
  readonly #inProcess: boolean;
  #lastCheckAt = performance.now();
  #ready = false;
  #everReady = false;
  loadError: string | undefined;
  /** Why the module did not load (docs/internal-protocol.md "Load errors"). */
  loadErrorKind: 'syntax' | 'no_handler' | 'failed' | undefined;
  /** Resolves once the module has loaded or failed to (what a start waits for with x-fnhost-wait-load). */
  readonly settled: Promise<void>;
  #settle!: () => void;
  #heartbeat = new SharedArrayBuffer(4);
  #beats = new Int32Array(this.#heartbeat);
  #lastBeat = -1;
  #lastBeatAt = 0;
  /** When the function's module began to load: the worker's first beat, after the runtime's own modules. */
  #startedAt = 0;
  #ownModulesLoaded = false;
  #oom = false;
  #ending: ErrorKind | undefined;
  #endingMessage = '';
  #watch: NodeJS.Timeout;
  /** The delay the pending check was scheduled with (HEARTBEAT_MS, or IDLE_CHECK_MS in process isolation once idle and collected). */
  #checkDelay = HEARTBEAT_MS;
  /** A worker started ahead by the generic runtime this one was (./spare-worker.ts); used once, by the first start. */
  #spare: SpareWorker | undefined;
  /** Whether the worker running now is the spare (tests, the specialization's log line). */
  usedSpare = false;
  /** Each call's console output for its record (console-capture.ts); undefined when off. */
  readonly #console: ConsoleCapture | undefined;
  restarts = 0;
  /** When a call was last seen (./memory.ts: slower checks once idle). */
  #lastBusyAt = 0;
  #closed = false;

  constructor(config: RuntimeConfig, spare?: SpareWorker) {
    this.#config = config;
    this.#inProcess = config.isolation === 'process';
    this.#spare = spare;
    this.#console = config.consoleCapture && config.gatewayUrl !== undefined
      ? new ConsoleCapture({
        graceMs: config.consoleGraceMs,
        now: () => performance.timeOrigin + performance.now(),
        send: consoleSender(config.gatewayUrl, config.runtimeToken, (err) => log('warn', 'console output not handed to the gateway', { error: err.message })),
      })
      : undefined;
    this.settled = new Promise((resolve) => (this.#settle = resolve));
    this.#watch = this.#schedule(HEARTBEAT_MS);
  }

  get status(): 'ok' | 'starting' | 'error' {
    if (this.loadError !== undefined) return 'error';
    return this.#everReady ? 'ok' : 'starting';
  }

  get inFlight(): number {
    return this.#pending.size;
  }

  start(): void {
    this.#ready = false;
    this.#oom = false;
    this.#ending = undefined;
    this.#heartbeat = new SharedArrayBuffer(4);
    this.#beats = new Int32Array(this.#heartbeat);
    this.#lastBeat = -1;
    this.#ownModulesLoaded = false;
    this.#startedAt = this.#lastBeatAt = performance.now();
    const fn = {
      file: this.#config.functionFile,
      functionName: this.#config.functionName,
      routes: this.#config.routes,
      gatewayUrl: this.#config.gatewayUrl,
      runtimeToken: this.#config.runtimeToken,
      egressProxy: this.#config.egressProxy,
      captureConsole: this.#console !== undefined,
    };
    const spare = this.#takeSpare();
    let worker: Worker | InThreadWorker;
    if (spare !== undefined) {
      // Its own heartbeat, beating since it started: the function's load clock starts at its next beat (#check).
      this.#heartbeat = spare.heartbeat;
      this.#beats = new Int32Array(this.#heartbeat);
      this.#lastBeat = Atomics.load(this.#beats, 0);
      worker = spare.worker;
      worker.removeAllListeners('error');
      worker.postMessage({ t: M_CONFIGURE, d: fn, env: { ...this.#config.functionEnv }, tz: timeZoneOffsets() });
    } else if (this.#inProcess) {
      // The process's environment becomes the function's, as a worker's env option would make the thread's.
      replaceEnv(this.#config.functionEnv);
      const data: WorkerData = { ...fn, heartbeat: this.#heartbeat, heartbeatMs: HEARTBEAT_MS };
      worker = startInThread(data, new URL('./worker.ts', import.meta.url));
    } else {
      const data: WorkerData = { ...fn, heartbeat: this.#heartbeat, heartbeatMs: HEARTBEAT_MS };
      // Taken here, not imported: a process-isolated runtime never loads node:worker_threads.
      const { Worker } = process.getBuiltinModule('node:worker_threads');
      worker = new Worker(new URL('./worker.ts', import.meta.url), {
        workerData: data,
        env: { ...this.#config.functionEnv },
        resourceLimits: { maxOldGenerationSizeMb: this.#config.memoryMiB },
        name: `fnhost:${this.#config.functionName}`,
      });
    }
    this.usedSpare = spare !== undefined;
    this.#worker = worker;
    if (worker instanceof InThreadWorker) worker.onTerminate = () => this.#endInProcess();
    worker.on('message', (msg: FromWorker) => {
      try {
        this.#onMessage(msg);
      } catch (err) {
        // A message no res.* method would post (the handler can reach the worker's port): end that call, never this thread.
        this.#refuseCall((msg as { i?: unknown } | null)?.i, err);
      }
    });
    worker.on('error', (err: Error & { code?: string }) => {
      if (worker !== this.#worker) return;
      if (err.code === 'ERR_WORKER_OUT_OF_MEMORY') {
        this.#oom = true;
      } else {
        this.#ending ??= 'crash';
        this.#endingMessage ||= `the function runtime crashed: ${err.message}`;
      }
    });
    worker.on('exit', (code) => {
      if (worker !== this.#worker) return;
      this.#worker = undefined;
      this.#onWorkerGone(code);
    });
  }

  /** The spare, once, when it is alive and has the function's heap limit; otherwise it is ended. */
  #takeSpare(): SpareWorker | undefined {
    const spare = this.#spare;
    this.#spare = undefined;
    if (spare === undefined || spare.exited) return undefined;
    // In process isolation the heap limit is the process's, whatever the spare was told: it is the only handler this process can have.
    if (spare.memoryMiB === this.#config.memoryMiB || spare.worker instanceof InThreadWorker) return spare;
    void spare.worker.terminate();
    return undefined;
  }

  #onWorkerGone(code: number): void {
    const wasReady = this.#ready;
    this.#ready = false;
    let kind: ErrorKind;
    let message: string;
    if (this.#oom) {
      kind = 'out_of_memory';
      message = `the function ran out of memory (heap limit ${this.#config.memoryMiB} MiB) and was restarted`;
    } else if (this.#ending !== undefined) {
      kind = this.#ending;
      message = this.#endingMessage;
    } else {
      kind = 'exit';
      message = `the function called process.exit(${code}) before answering`;
    }
    if (!wasReady && !this.#everReady) {
      // Dying while loading is a load error; retrying would only repeat it.
      this.loadErrorKind = 'failed';
      this.loadError = kind === 'out_of_memory' ? `the function module ran out of memory while loading (heap limit ${this.#config.memoryMiB} MiB)` : kind === 'exit' ? `the function module called process.exit(${code}) while loading` : message;
      log('error', 'function module failed to load', { error: this.loadError });
      this.#failAll('load', this.loadError);
      this.#settle();
      return;
    }
    log('warn', 'function worker ended; starting a new one', { reason: kind, message, in_flight: this.#pending.size });
    for (const [id, p] of this.#pending) {
      if (!p.sent) continue;
      this.#pending.delete(id);
      answerError(p.res, STATUS_OF[kind], kind, message);
    }
    this.restarts++;
    this.start();
  }

  /**
   * Process isolation: the handler cannot be ended apart from the process. A module that never
   * finished loading is a load error as in a thread (this process keeps answering 500 load, no
   * restart loop); otherwise the calls it held are answered as a worker's end answers them, and
   * the process exits for its starter to replace it (the gateway counts a restart).
   */
  #endInProcess(): void {
    if (this.#worker === undefined) return;
    this.#worker = undefined;
    const kind = this.#ending ?? 'crash';
    const message = this.#endingMessage || 'the function runtime ended';
    if (!this.#ready && !this.#everReady) {
      this.failLoad(message);
      return;
    }
    this.#ready = false;
    log('warn', 'function runtime ending; its starter replaces it', { reason: kind, message, in_flight: this.#pending.size });
    this.#failAll(kind, message);
    clearTimeout(this.#watch);
    this.#closed = true;
    const exit = () => process.exit(HANDLER_ENDED_EXIT_CODE);
    const flushed = this.#console?.flushAll() ?? Promise.resolve();
    setTimeout(exit, END_FLUSH_MS).unref();
    void flushed.then(exit, exit);
  }

  /**
   * The module cannot be loaded (referenced code that could not be fetched before any worker
   * starts: code-fetch.ts; or a module that ended its process while loading): a load error like any other (503 on /healthz, 500 to calls), no exit.
   */
  failLoad(message: string): void {
    this.loadErrorKind = 'failed';
    this.loadError = message;
    log('error', 'function module failed to load', { error: message });
    this.#failAll('load', message);
    this.#settle();
  }

  #failAll(kind: ErrorKind, message: string): void {
    for (const [id, p] of this.#pending) {
      this.#pending.delete(id);
      answerError(p.res, STATUS_OF[kind], kind, message);
    }
    this.#queue.length = 0;
  }

  /** Ends the worker (the exit handler answers its calls with `kind` and starts a new one). */
  #end(kind: ErrorKind, message: string): void {
    const worker = this.#worker;
    if (worker === undefined || this.#ending !== undefined) return;
    this.#ending = kind;
    this.#endingMessage = message;
    this.#ready = false;
    void worker.terminate();
  }

  /** The next check in `delayMs`; each check schedules the one after it (#tick). */
  #schedule(delayMs: number): NodeJS.Timeout {
    this.#checkDelay = delayMs;
    const t = setTimeout(() => this.#tick(), delayMs);
    t.unref();
    return t;
  }

  #tick(): void {
    if (this.#closed) return;
    this.#check();
    if (this.#closed) return;
    // In process isolation, once idle, a check a second: 20 checks a second would get their
    // functions compiled by Maglev and TurboFan within minutes of idling (./memory.ts).
    const slow = this.#inProcess && this.#ready && isIdle({ now: performance.now(), lastBusyAt: this.#lastBusyAt, inFlight: this.#pending.size + this.#queue.length });
    this.#watch = this.#schedule(slow ? IDLE_CHECK_MS : HEARTBEAT_MS);
  }

  /** A call arrived while checks are a second apart: back to HEARTBEAT_MS, so its time limit is kept to the heartbeat. */
  #busy(): void {
    this.#lastBusyAt = performance.now();
    if (this.#checkDelay === HEARTBEAT_MS || this.#closed) return;
    clearTimeout(this.#watch);
    // The slow wait so far counts as a check's: the loop was free until now.
    this.#lastCheckAt = performance.now() - HEARTBEAT_MS;
    this.#watch = this.#schedule(HEARTBEAT_MS);
  }

  #check(): void {
    const now = performance.now();
    const beat = Atomics.load(this.#beats, 0);
    if (beat !== this.#lastBeat) {
      this.#lastBeat = beat;
      this.#lastBeatAt = now;
      if (beat > 0 && !this.#ownModulesLoaded) {
        this.#ownModulesLoaded = true;
        this.#startedAt = now;
      }
    }
    // On the handler's own thread the beat and this check run in the same loop: how late this
    // check comes is how long the loop was just blocked.
    const stale = this.#inProcess ? now - this.#lastCheckAt - this.#checkDelay : now - this.#lastBeatAt;
    this.#lastCheckAt = now;
    let timedOut = 0;
    for (const [id, p] of this.#pending) {
      if (now < p.deadline) continue;
      this.#pending.delete(id);
      timedOut++;
      answerError(p.res, 504, 'timeout', `the function did not answer within its time limit of ${this.#config.timeoutMs} ms`);
      if (p.sent) this.#worker?.postMessage({ t: M_ABORT, i: id });
    }
    if (this.#worker === undefined || this.#ending !== undefined) return;
    // A module's load has a bound of its own (FNHOST_LOAD_TIMEOUT_MS), not the calls' time limit: a
    // heavy import may block longer than a short limit and still come up. Not counting the runtime's
    // own start (slower on a loaded machine). A load that awaits (not blocked) is bounded by its starter.
    const loadLimit = this.#ownModulesLoaded ? this.#config.loadTimeoutMs : this.#config.loadTimeoutMs + OWN_START_GRACE_MS;
    if (!this.#ready && !this.#everReady && now - this.#startedAt > loadLimit && stale > BLOCKED_AFTER_MS) {
      this.#ending = 'load';
      this.#endingMessage = `the function module did not finish loading within its load bound of ${this.#config.loadTimeoutMs} ms`;
      void this.#worker.terminate();
      return;
    }
    // A call ran out of time while the loop is blocked, or the loop has been blocked for a whole time limit
    // (deferred work after an early answer): only ending the thread frees it.
    // The second rule only when no call is waiting on the worker: a waiting call's own deadline decides
    // (the heartbeat may have stopped just before it arrived, so its stale time can exceed its own age).
    let waiting = false;
    if (timedOut === 0) for (const p of this.#pending.values()) if (p.sent) waiting = true;
    if (this.#ready && ((timedOut > 0 && stale > BLOCKED_AFTER_MS) || (!waiting && stale > this.#config.timeoutMs))) {
      log('warn', 'function event loop blocked; ending the worker', { blocked_ms: Math.round(stale) });
      this.#end('crash', `the runtime restarted because the function blocked its event loop for over ${Math.round(stale)} ms while an invocation ran past its time limit`);
      return;
    }
    if (this.#pending.size > 0) this.#lastBusyAt = now;
  }

  #refuseCall(id: unknown, err: unknown): void {
    const p = typeof id === 'number' ? this.#pending.get(id) : undefined;
    log('warn', 'the function posted a message the runtime cannot send', { error: (err as Error)?.message });
    if (p === undefined) return;
    this.#pending.delete(id as number);
    this.#worker?.postMessage({ t: M_ABORT, i: id });
    refuse(p.res, err);
  }

  /**
   * Process isolation: a call whose handler blocked this thread past its deadline answers after
   * the deadline, before the watchdog could run: it is a timeout, as in a thread, where the
   * watchdog answers 504 while the handler is still blocked.
   */
  #late(id: number, p: Pending): boolean {
    if (!this.#inProcess || performance.now() <= p.deadline) return false;
    this.#pending.delete(id);
    answerError(p.res, 504, 'timeout', `the function did not answer within its time limit of ${this.#config.timeoutMs} ms`);
    return true;
  }

  #onMessage(msg: FromWorker): void {
    switch (msg.t) {
      case W_FULL: {
        const p = this.#pending.get(msg.i);
        if (p === undefined || this.#late(msg.i, p)) return;
        this.#pending.delete(msg.i);
        let headers: string[];
        try {
          headers = wholeResponseHead(msg, p.res.req.method === 'HEAD');
          p.res.writeHead(msg.s, headers);
        } catch (err) {
          refuse(p.res, err);
          return;
        }
        p.res.end(msg.b);
        return;
      }
      case W_HEAD: {
        const p = this.#pending.get(msg.i);
        if (p === undefined || this.#late(msg.i, p)) return;
        try {
          checkStatus(msg.s);
          p.res.writeHead(msg.s, framedHeaders(msg.h, 'the response'));
          p.res.flushHeaders();
        } catch (err) {
          this.#pending.delete(msg.i);
          this.#worker?.postMessage({ t: M_ABORT, i: msg.i });
          refuse(p.res, err);
        }
        return;
      }
      case W_CHUNK: {
        const p = this.#pending.get(msg.i);
        if (p !== undefined && msg.b !== undefined) p.res.write(msg.b);
        return;
      }
      case W_END: {
        const p = this.#pending.get(msg.i);
        if (p === undefined) return;
        this.#pending.delete(msg.i);
        p.res.end(msg.b);
        return;
      }
      case W_ERROR: {
        const p = this.#pending.get(msg.i);
        if (p === undefined || this.#late(msg.i, p)) return;
        this.#pending.delete(msg.i);
        answerError(p.res, msg.s, msg.k, msg.e, msg.body, msg.st);
        return;
      }
      case W_CONSOLE: {
        // The handler can reach the worker's port: take only well-formed entries.
        const l = msg.l;
        if (this.#console === undefined || !Array.isArray(l)) return;
        for (let i = 0; i + 3 < l.length; i += 4) {
          const [id, stream, at, text] = [l[i], l[i + 1], l[i + 2], l[i + 3]];
          if (typeof id === 'string' && typeof at === 'number' && typeof text === 'string') this.#console.write(id, stream === 'e' ? 'e' : 'o', at, text);
        }
        return;
      }
      case W_READY: {
        this.#ready = true;
        // A load that blocked the loop (a heavy import) is the load's, bounded apart: not a blocked
        // handler the watchdog would end the moment the module is ready.
        this.#lastCheckAt = this.#lastBeatAt = performance.now();
        if (!this.#everReady) {
          log('info', 'function loaded', { file: this.#config.functionFile });
          this.#lastBusyAt = performance.now();
        }
        this.#everReady = true;
        this.#settle();
        for (const m of this.#queue) this.#send(m);
        this.#queue.length = 0;
        return;
      }
      case W_SPARE_STALE: {
        // The spare's clock is in another time zone than the function's: a new worker instead,
        // before it loaded anything of the function.
        log('warn', 'the spare worker cannot be used; starting a new one', { reason: msg.e });
        const stale = this.#worker;
        this.#worker = undefined;
        void stale?.terminate();
        this.start();
        return;
      }
      case W_LOAD_ERROR: {
        this.loadError = msg.e;
        this.loadErrorKind = msg.k;
        log('error', 'function module failed to load', { error: msg.e, kind: msg.k });
        this.#failAll('load', msg.e);
        this.#settle();
        // On this thread (process isolation) there is nothing to end: the module failed, and nothing else of it runs.
        if (!this.#inProcess) void this.#worker?.terminate();
        this.#worker = undefined;
        return;
      }
    }
  }

  #send(m: RequestMsg): void {
    const p = this.#pending.get(m.i);
    if (p === undefined) return;
    p.sent = true;
    p.deadline = Math.min(p.deadline, performance.now() + this.#config.timeoutMs);
    this.#worker!.postMessage(m, m.b === undefined ? undefined : [m.b.buffer as ArrayBuffer]);
  }

  invoke(req: IncomingMessage, res: ServerResponse, body: Uint8Array | undefined): void {
    if (this.loadError !== undefined) {
      answerError(res, 500, 'load', this.loadError);
      return;
    }
    const id = this.#nextId++;
    // A call that waits for the worker to (re)start is not charged for the start: its time limit
    // runs from when the worker gets it (#send), within OWN_START_GRACE_MS of waiting. On a loaded
    // machine a worker's start takes a second or more, which a 1 s function would answer 504 for.
    const deadline = performance.now() + this.#config.timeoutMs + (this.#ready ? 0 : OWN_START_GRACE_MS);
    const pending: Pending = { res, deadline, sent: false };
    this.#pending.set(id, pending);
    this.#busy();
    const executionId = req.headers['x-fnhost-execution-id'];
    if (this.#console !== undefined && typeof executionId === 'string') {
      const capture = this.#console;
      capture.begin(executionId);
      res.once('close', () => capture.answered(executionId));
    }
    res.once('close', () => {
      if (this.#pending.get(id) !== pending) return;
      // The caller went away: drop the call's output (its code keeps running to completion).
      this.#pending.delete(id);
      if (pending.sent) this.#worker?.postMessage({ t: M_ABORT, i: id });
    });
    const msg: RequestMsg = { t: M_REQUEST, i: id, m: req.method ?? 'GET', u: req.url ?? '/', h: req.rawHeaders, b: body, a: req.socket.remoteAddress ?? '' };
    if (this.#ready) this.#send(msg);
    else this.#queue.push(msg);
  }

  async close(graceMs: number): Promise<void> {
    const until = performance.now() + graceMs;
    while (this.#pending.size > 0 && performance.now() < until) await new Promise((r) => setTimeout(r, 20));
    clearTimeout(this.#watch);
    this.#closed = true;
    await this.#console?.flushAll();
    const w = this.#worker;
    this.#worker = undefined;
    // On this thread the process's own exit ends the handler.
    if (!(w instanceof InThreadWorker)) await w?.terminate();
  }
}
