// The runtime's main thread: HTTP server, health, and the watchdog. It never runs user
// code: that lives in one worker thread (worker.ts) with its own V8 heap limit, which this
// thread ends on a timeout (even `while (true) {}`) and replaces when it dies.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Worker } from 'node:worker_threads';
import { ConfigError, loadConfig, type RuntimeConfig } from './config.ts';
import { MAX_INVOKE_BODY_BYTES } from './limits.ts';
import {
  M_ABORT,
  M_REQUEST,
  W_CHUNK,
  W_END,
  W_ERROR,
  W_FULL,
  W_HEAD,
  W_LOAD_ERROR,
  W_READY,
  type FromWorker,
  type RequestMsg,
} from './protocol.ts';
import {
  MAX_SPECIALIZE_BODY_BYTES,
  SPECIALIZE_HEADER,
  SPECIALIZE_PATH,
  SpecializeError,
  isLoopbackAddress,
  loadGenericConfig,
  parseSpecialization,
  replaceEnv,
  sameSecret,
  type GenericConfig,
} from './specialize.ts';
import type { WorkerData } from './worker.ts';

// Not `import { createServer } from 'node:http'`: an ES module import of node:http builds its
// namespace from every export, and its lazy WebSocket/MessageEvent getters load undici, which
// this thread never uses (measured: idle RSS 80 → 69 MiB with the worker's same change).
const { createServer } = process.getBuiltinModule('node:http');

const HEARTBEAT_MS = 50;
/** At a call's deadline, a worker whose loop has not turned for this long is blocked: end it. */
const BLOCKED_AFTER_MS = 250;

interface Pending {
  res: ServerResponse;
  deadline: number;
  /** Set when the worker holds the request (not while it waits in the start-up queue). */
  sent: boolean;
}

export type ErrorKind = 'exception' | 'timeout' | 'out_of_memory' | 'exit' | 'load' | 'crash';

const STATUS_OF: Record<ErrorKind, number> = { exception: 500, timeout: 504, out_of_memory: 502, exit: 502, load: 500, crash: 502 };

function log(level: 'info' | 'warn' | 'error', msg: string, fields: Record<string, unknown> = {}): void {
  const line = JSON.stringify({ time: new Date().toISOString(), level, msg, component: 'runtime', ...fields }) + '\n';
  if (level === 'info') process.stdout.write(line);
  else process.stderr.write(line);
}

/** Answers with an outcome the runtime produced (docs/internal-protocol.md "An invocation"). */
export function answerError(res: ServerResponse, status: number, kind: string, message: string, body?: string): void {
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
  res.writeHead(status, headers).end(text);
}

class Supervisor {
  readonly #config: RuntimeConfig;
  readonly #pending = new Map<number, Pending>();
  readonly #queue: RequestMsg[] = [];
  #nextId = 1;
  #worker: Worker | undefined;
  #ready = false;
  #everReady = false;
  loadError: string | undefined;
  #heartbeat = new SharedArrayBuffer(4);
  #beats = new Int32Array(this.#heartbeat);
  #lastBeat = -1;
  #lastBeatAt = 0;
  #startedAt = 0;
  #oom = false;
  #ending: ErrorKind | undefined;
  #endingMessage = '';
  readonly #watch: NodeJS.Timeout;
  restarts = 0;

  constructor(config: RuntimeConfig) {
    this.#config = config;
    this.#watch = setInterval(() => this.#check(), HEARTBEAT_MS);
    this.#watch.unref();
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
    this.#startedAt = this.#lastBeatAt = performance.now();
    const data: WorkerData = {
      file: this.#config.functionFile,
      functionName: this.#config.functionName,
      routes: this.#config.routes,
      gatewayUrl: this.#config.gatewayUrl,
      runtimeToken: this.#config.runtimeToken,
      egressProxy: this.#config.egressProxy,
      heartbeat: this.#heartbeat,
      heartbeatMs: HEARTBEAT_MS,
    };
    const worker = new Worker(new URL('./worker.ts', import.meta.url), {
      workerData: data,
      env: { ...this.#config.functionEnv },
      resourceLimits: { maxOldGenerationSizeMb: this.#config.memoryMiB },
      name: `fnhost:${this.#config.functionName}`,
    });
    this.#worker = worker;
    worker.on('message', (msg: FromWorker) => this.#onMessage(msg));
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
      this.loadError = kind === 'out_of_memory' ? `the function module ran out of memory while loading (heap limit ${this.#config.memoryMiB} MiB)` : kind === 'exit' ? `the function module called process.exit(${code}) while loading` : message;
      log('error', 'function module failed to load', { error: this.loadError });
      this.#failAll('load', this.loadError);
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

  #check(): void {
    const now = performance.now();
    const beat = Atomics.load(this.#beats, 0);
    if (beat !== this.#lastBeat) {
      this.#lastBeat = beat;
      this.#lastBeatAt = now;
    }
    const stale = now - this.#lastBeatAt;
    let timedOut = 0;
    for (const [id, p] of this.#pending) {
      if (now < p.deadline) continue;
      this.#pending.delete(id);
      timedOut++;
      answerError(p.res, 504, 'timeout', `the function did not answer within its time limit of ${this.#config.timeoutMs} ms`);
      if (p.sent) this.#worker?.postMessage({ t: M_ABORT, i: id });
    }
    if (this.#worker === undefined || this.#ending !== undefined) return;
    if (!this.#ready && !this.#everReady && now - this.#startedAt > this.#config.timeoutMs && stale > BLOCKED_AFTER_MS) {
      this.#ending = 'load';
      this.#endingMessage = `the function module did not finish loading within ${this.#config.timeoutMs} ms`;
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
    }
  }

  #onMessage(msg: FromWorker): void {
    switch (msg.t) {
      case W_FULL: {
        const p = this.#pending.get(msg.i);
        if (p === undefined) return;
        this.#pending.delete(msg.i);
        try {
          p.res.writeHead(msg.s, msg.h);
        } catch (err) {
          answerError(p.res, 500, 'exception', `the function's response is invalid: ${(err as Error).message}`);
          return;
        }
        p.res.end(msg.b);
        return;
      }
      case W_HEAD: {
        const p = this.#pending.get(msg.i);
        if (p === undefined) return;
        try {
          p.res.writeHead(msg.s, msg.h);
          p.res.flushHeaders();
        } catch (err) {
          this.#pending.delete(msg.i);
          this.#worker?.postMessage({ t: M_ABORT, i: msg.i });
          answerError(p.res, 500, 'exception', `the function's response is invalid: ${(err as Error).message}`);
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
        if (p === undefined) return;
        this.#pending.delete(msg.i);
        answerError(p.res, msg.s, msg.k, msg.e, msg.body);
        return;
      }
      case W_READY: {
        this.#ready = true;
        if (!this.#everReady) log('info', 'function loaded', { file: this.#config.functionFile });
        this.#everReady = true;
        for (const m of this.#queue) this.#send(m);
        this.#queue.length = 0;
        return;
      }
      case W_LOAD_ERROR: {
        this.loadError = msg.e;
        log('error', 'function module failed to load', { error: msg.e });
        this.#failAll('load', msg.e);
        void this.#worker?.terminate();
        this.#worker = undefined;
        return;
      }
    }
  }

  #send(m: RequestMsg): void {
    const p = this.#pending.get(m.i);
    if (p === undefined) return;
    p.sent = true;
    this.#worker!.postMessage(m, m.b === undefined ? undefined : [m.b.buffer as ArrayBuffer]);
  }

  invoke(req: IncomingMessage, res: ServerResponse, body: Uint8Array | undefined): void {
    if (this.loadError !== undefined) {
      answerError(res, 500, 'load', this.loadError);
      return;
    }
    const id = this.#nextId++;
    const pending: Pending = { res, deadline: performance.now() + this.#config.timeoutMs, sent: false };
    this.#pending.set(id, pending);
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
    clearInterval(this.#watch);
    const w = this.#worker;
    this.#worker = undefined;
    await w?.terminate();
  }
}

function health(sup: Supervisor, res: ServerResponse): void {
  const status = sup.status;
  const body = status === 'error' ? JSON.stringify({ status, error: 'load', message: sup.loadError }) : JSON.stringify({ status });
  res.writeHead(status === 'ok' ? 200 : 503, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'cache-control': 'no-store' }).end(body);
}

function readBody(req: IncomingMessage, res: ServerResponse, done: (body: Uint8Array | undefined) => void): void {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > MAX_INVOKE_BODY_BYTES) {
    answerError(res, 413, '', `the request body (${declared} bytes) is larger than the limit of ${MAX_INVOKE_BODY_BYTES} bytes`);
    req.resume();
    return;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  let over = false;
  req.on('data', (chunk: Buffer) => {
    if (over) return;
    size += chunk.length;
    if (size > MAX_INVOKE_BODY_BYTES) {
      over = true;
      chunks.length = 0;
      answerError(res, 413, '', `the request body is larger than the limit of ${MAX_INVOKE_BODY_BYTES} bytes`);
      return;
    }
    chunks.push(chunk);
  });
  req.on('end', () => {
    if (over) return;
    if (size === 0) return done(undefined);
    // Its own ArrayBuffer (socket chunks are views of shared ones), moved to the worker without a copy.
    const body = new Uint8Array(size);
    let at = 0;
    for (const c of chunks) {
      body.set(c, at);
      at += c.length;
    }
    done(body);
  });
  req.on('error', () => undefined);
}

function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const addr = server.address();
      resolve(typeof addr === 'object' && addr !== null ? addr.port : port);
    });
  });
}

/** The request handler of a runtime serving one function (health on the same port unless separate). */
function callHandler(sup: Supervisor, separateHealth: boolean): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    if (!separateHealth && req.url === '/healthz' && (req.method === 'GET' || req.method === 'HEAD')) return health(sup, res);
    if (req.headers['content-length'] === undefined && req.headers['transfer-encoding'] === undefined) {
      sup.invoke(req, res, undefined);
      return;
    }
    readBody(req, res, (body) => sup.invoke(req, res, body));
  };
}

function newServer(handler: (req: IncomingMessage, res: ServerResponse) => void): Server {
  const server = createServer({ keepAliveTimeout: 65_000 }, handler);
  server.headersTimeout = 60_000;
  server.requestTimeout = 0;
  return server;
}

export interface RunningRuntime {
  port: number;
  healthPort: number;
  close: () => Promise<void>;
}

export async function startRuntime(config: RuntimeConfig): Promise<RunningRuntime> {
  const sup = new Supervisor(config);
  sup.start();
  const separateHealth = config.healthPort !== undefined;
  const server = newServer(callHandler(sup, separateHealth));
  const port = await listen(server, config.port, config.host);
  let healthServer: Server | undefined;
  let healthPort = port;
  if (separateHealth) {
    healthServer = createServer((req, res) => {
      if (req.url === '/healthz') return health(sup, res);
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'not_found', message: `no ${req.url} here; this port serves /healthz only` }));
    });
    healthPort = await listen(healthServer, config.healthPort!, config.host);
  }
  return {
    port,
    healthPort,
    close: async () => {
      server.close();
      healthServer?.close();
      await sup.close(config.timeoutMs);
      server.closeAllConnections();
    },
  };
}

function answerJson(res: ServerResponse, status: number, body: Record<string, unknown>): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store' }).end(text);
}

/**
 * A generic runtime of the warm pool (docs/internal-protocol.md "Warm pool"): it listens with no
 * function and no worker thread until one specialization request names its function; from then
 * on it is a runtime of that function. A second specialization is refused (409).
 */
export async function startGenericRuntime(generic: GenericConfig): Promise<RunningRuntime> {
  let state: 'generic' | 'specializing' | 'specialized' = 'generic';
  let sup: Supervisor | undefined;
  let config: RuntimeConfig | undefined;
  let calls: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;

  const specialize = (req: IncomingMessage, res: ServerResponse): void => {
    // Checked before anything else, the body included: loopback peer, then the credential.
    if (!isLoopbackAddress(req.socket.remoteAddress)) return answerJson(res, 403, { error: 'forbidden', message: 'specialization is accepted from loopback only' });
    const presented = req.headers[SPECIALIZE_HEADER];
    if (typeof presented !== 'string' || !sameSecret(presented, generic.token)) return answerJson(res, 401, { error: 'unauthorized', message: `the ${SPECIALIZE_HEADER} is wrong` });
    if (req.method !== 'POST' || req.url !== SPECIALIZE_PATH) return answerJson(res, 404, { error: 'not_found', message: `specialization is POST ${SPECIALIZE_PATH}` });
    if (state !== 'generic') {
      req.resume();
      return answerJson(res, 409, { error: 'already_specialized', message: 'this runtime already serves a function; a runtime is specialized once' });
    }
    state = 'specializing';
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_SPECIALIZE_BODY_BYTES) chunks.push(chunk);
    });
    req.on('error', () => {
      if (state === 'specializing') state = 'generic';
    });
    req.on('end', () => {
      if (size > MAX_SPECIALIZE_BODY_BYTES) {
        state = 'generic';
        return answerJson(res, 413, { error: 'payload_too_large', message: `the specialization body is larger than ${MAX_SPECIALIZE_BODY_BYTES} bytes` });
      }
      let spec;
      try {
        spec = parseSpecialization(JSON.parse(Buffer.concat(chunks).toString('utf8')), process.env);
        if (spec.cwd !== undefined) process.chdir(spec.cwd);
      } catch (err) {
        // Nothing has changed yet: the runtime stays generic and may be specialized by a correct request.
        state = 'generic';
        const invalid = err instanceof SpecializeError || err instanceof ConfigError || err instanceof SyntaxError || (err as NodeJS.ErrnoException).code === 'ENOENT';
        return answerJson(res, invalid ? 400 : 500, { error: invalid ? 'invalid_argument' : 'internal', message: (err as Error).message });
      }
      // The process environment first (setenv underneath: TZ, HOME and the like follow), then the
      // worker: it takes its env, its heap limit and the process's time zone when it is created.
      replaceEnv(spec.env);
      config = spec.config;
      sup = new Supervisor(config);
      sup.start();
      calls = callHandler(sup, false);
      state = 'specialized';
      log('info', 'specialized', { function_id: config.functionId, function_name: config.functionName, file: config.functionFile });
      answerJson(res, 200, { status: 'specialized', function_id: config.functionId, pid: process.pid });
    });
  };

  const server = newServer((req, res) => {
    if (req.headers[SPECIALIZE_HEADER] !== undefined) return specialize(req, res);
    if (calls !== undefined) return calls(req, res);
    if (req.url === '/healthz') return answerJson(res, 503, { status: 'generic' });
    req.resume();
    answerError(res, 503, '', 'this runtime serves no function yet (a generic runtime of the warm pool)', JSON.stringify({ error: 'not_specialized', message: 'this runtime serves no function yet' }));
  });
  // Loads node:crypto now, while there is nothing to do, not on the specialization's path (≈ 5 ms).
  sameSecret(generic.token, generic.token);
  const port = await listen(server, generic.port, generic.host);
  return {
    port,
    healthPort: port,
    close: async () => {
      server.close();
      if (sup !== undefined) await sup.close(config!.timeoutMs);
      server.closeAllConnections();
    },
  };
}

async function main(): Promise<void> {
  let runtime: RunningRuntime;
  let generic: GenericConfig | undefined;
  try {
    generic = loadGenericConfig(process.env);
    if (generic === undefined) {
      runtime = await startRuntime(loadConfig(process.env));
    } else {
      // The credential is needed only in memory; the handler's environment never holds it.
      delete process.env.FNHOST_SPECIALIZE_TOKEN;
      runtime = await startGenericRuntime(generic);
    }
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    log('error', err.message);
    process.exit(2);
  }
  let closing = false;
  const stop = (signal: string) => {
    if (closing) return;
    closing = true;
    log('info', 'stopping', { signal });
    runtime.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  // As PID 1 in a container, Node gets no default signal handling: handle both. Before the
  // listening line, so a parent that signals as soon as it reads the line gets a clean stop.
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  // The one line the gateway and tests read to find the port (PORT=0 picks a free one).
  const listening: Record<string, unknown> = { msg: 'listening', port: runtime.port, health_port: runtime.healthPort, pid: process.pid };
  if (generic !== undefined) listening.generic = true;
  process.stdout.write(JSON.stringify(listening) + '\n');
  // Node writes its compile cache (NODE_COMPILE_CACHE) only at exit: write it now, so the next
  // runtime on this machine starts from it even while this one keeps running (the worker writes its own).
  process.getBuiltinModule('node:module').flushCompileCache();
}

if (import.meta.main) await main();
