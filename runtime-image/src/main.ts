// The runtime's main process: its HTTP server (a TCP port, or a Unix socket in a sandbox), health,
// the warm pool's specialization, and signals. It never runs user code: the supervisor
// (supervisor.ts) runs the handler in a worker thread; with FNHOST_ISOLATION=process, on this
// thread (in-thread.ts), and the process is what its starter ends and replaces.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { ConfigError, loadConfig, type RuntimeConfig } from './config.ts';
import { MAX_INVOKE_BODY_BYTES } from './limits.ts';
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
import { HEARTBEAT_MS, Supervisor, answerError, log } from './supervisor.ts';
import { startSpareWorker } from './spare-worker.ts';
import { startWithCode } from './code-fetch.ts';
import { placeInlineCode } from './specialize-remote.ts';
import { SECRETS_ON_STDIN, SecretScrubError, hideSecrets, readSecretLines } from './hide-secrets.ts';

export { answerError, type ErrorKind } from './supervisor.ts';

// Not `import { createServer } from 'node:http'`: an ES module import of node:http builds its
// namespace from every export, and its lazy WebSocket/MessageEvent getters load undici, which
// this thread never uses (measured: idle RSS 80 → 69 MiB with the worker's same change).
const { createServer } = process.getBuiltinModule('node:http');

/** A start sends this header on /healthz to be answered once the module has loaded or failed to (the gateway's only x-fnhost-* request header to a function). */
export const WAIT_LOAD_HEADER = 'x-fnhost-wait-load';

function health(sup: Supervisor, req: IncomingMessage, res: ServerResponse): void {
  if (req.headers[WAIT_LOAD_HEADER] !== undefined && sup.status === 'starting') {
    void sup.settled.then(() => health(sup, req, res));
    return;
  }
  const status = sup.status;
  // The load error's text only for the gateway's start (a caller's /invoke/{id}/healthz reaches here too, without x-fnhost-* headers).
  const detail = req.headers[WAIT_LOAD_HEADER] !== undefined ? { kind: sup.loadErrorKind, message: sup.loadError } : {};
  const body = status === 'error' ? JSON.stringify({ status, error: 'load', ...detail }) : JSON.stringify({ status });
  res.writeHead(status === 'ok' ? 200 : 503, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'cache-control': 'no-store' }).end(body);
}

/** How a specialization's load went, for the answer that waited for it (docs/internal-protocol.md "Remote specialization"). */
function loadOutcome(sup: Supervisor, ms: number): { status: 'ok' | 'error'; ms: number; kind?: string; message?: string } {
  const waited = Math.round(ms * 10) / 10;
  return sup.status === 'ok' ? { status: 'ok', ms: waited } : { status: 'error', ms: waited, kind: sup.loadErrorKind, message: sup.loadError };
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

/** Listens on the Unix socket when one is given (a sandboxed runtime has no network to listen on), else on host:port. */
async function listen(server: Server, port: number, host: string, socket?: string): Promise<number> {
  if (socket !== undefined) {
    // A socket file left by an earlier process in the same folder would make listen fail with EADDRINUSE.
    await process.getBuiltinModule('node:fs/promises').rm(socket, { force: true });
  }
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    const done = () => {
      server.off('error', reject);
      const addr = server.address();
      resolve(typeof addr === 'object' && addr !== null ? addr.port : 0);
    };
    if (socket !== undefined) server.listen(socket, done);
    else server.listen(port, host, done);
  });
}

/** The request handler of a runtime serving one function (health on the same port unless separate). */
function callHandler(sup: Supervisor, separateHealth: boolean): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    if (!separateHealth && req.url === '/healthz' && (req.method === 'GET' || req.method === 'HEAD')) return health(sup, req, res);
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
  /** 0 when listening on a Unix socket. */
  port: number;
  socket: string | undefined;
  healthPort: number;
  close: () => Promise<void>;
}

export async function startRuntime(config: RuntimeConfig): Promise<RunningRuntime> {
  const sup = new Supervisor(config);
  // Referenced code is fetched (or found in the pod's cache) first; the server listens meanwhile.
  startWithCode(sup, config);
  const separateHealth = config.healthPort !== undefined;
  const server = newServer(callHandler(sup, separateHealth));
  const port = await listen(server, config.port, config.host, config.socket);
  let healthServer: Server | undefined;
  let healthPort = port;
  if (separateHealth) {
    healthServer = createServer((req, res) => {
      if (req.url === '/healthz') return health(sup, req, res);
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'not_found', message: `no ${req.url} here; this port serves /healthz only` }));
    });
    healthPort = await listen(healthServer, config.healthPort!, config.host);
  }
  return {
    port,
    socket: config.socket,
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
    // On a Unix socket the peer is whoever can open the socket file: the gateway, outside the sandbox.
    // A remote generic runtime (a cluster's pool pod) takes it from the network: the credential is the guard.
    if (!generic.remote && generic.socket === undefined && !isLoopbackAddress(req.socket.remoteAddress)) return answerJson(res, 403, { error: 'forbidden', message: 'specialization is accepted from loopback only' });
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
        spec = parseSpecialization(JSON.parse(Buffer.concat(chunks).toString('utf8')), process.env, generic.remote);
        if (spec.cwd !== undefined) process.chdir(spec.cwd);
        if (spec.code !== undefined) placeInlineCode(spec.config.functionFile, spec.code);
      } catch (err) {
        // Nothing has changed yet: the runtime stays generic and may be specialized by a correct request.
        state = 'generic';
        const invalid = err instanceof SpecializeError || err instanceof ConfigError || err instanceof SyntaxError || (err as NodeJS.ErrnoException).code === 'ENOENT';
        return answerJson(res, invalid ? 400 : 500, { error: invalid ? 'invalid_argument' : 'internal', message: (err as Error).message });
      }
      // The process environment first (setenv underneath: TZ, HOME and the like follow), then the
      // worker: it takes its env, its heap limit and the process's time zone when it is created.
      // The runtime token stays in memory only (hide-secrets.ts): not in the environment a child inherits.
      replaceEnv(withoutSecrets(spec.env));
      config = { ...spec.config, isolation: generic.isolation };
      sup = new Supervisor(config, spare);
      spare = undefined;
      // Referenced code (a remote specialization) is fetched by digest first; other code starts at once.
      startWithCode(sup, config);
      calls = callHandler(sup, false);
      state = 'specialized';
      log('info', 'specialized', { function_id: config.functionId, function_name: config.functionName, file: config.functionFile, warm_worker: sup.usedSpare });
      const answered = { status: 'specialized', function_id: config.functionId, pid: process.pid };
      // Asked with the start's wait header (a cluster's gateway), the answer waits for the module
      // and says how its load went: one exchange instead of this one and a /healthz wait.
      if (req.headers[WAIT_LOAD_HEADER] === undefined) return answerJson(res, 200, answered);
      const loading = performance.now();
      const running = sup;
      void running.settled.then(() => answerJson(res, 200, { ...answered, load: loadOutcome(running, performance.now() - loading) }));
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
  const port = await listen(server, generic.port, generic.host, generic.socket);
  // After listening: the pool counts this runtime as ready while its worker starts beside it.
  let spare = generic.warmWorkerMemoryMiB === undefined ? undefined : startSpareWorker(generic.warmWorkerMemoryMiB, HEARTBEAT_MS, generic.isolation);
  return {
    port,
    socket: generic.socket,
    healthPort: port,
    close: async () => {
      server.close();
      if (sup !== undefined) await sup.close(config!.timeoutMs);
      await spare?.worker.terminate();
      server.closeAllConnections();
    },
  };
}

/** Credentials the runtime reads from its environment and then keeps in memory only. */
export const RUNTIME_SECRETS = ['FNHOST_RUNTIME_TOKEN'] as const;

function withoutSecrets(env: Record<string, string>): Record<string, string> {
  const out = { ...env };
  for (const name of RUNTIME_SECRETS) delete out[name];
  return out;
}

function hideOrWarn(names: readonly string[]): void {
  try {
    hideSecrets(names);
  } catch (err) {
    if (!(err instanceof SecretScrubError)) throw err;
    // Still out of the environment children inherit; only /proc/<pid>/environ may show it.
    log('warn', 'the runtime credential is out of the environment but may still show in /proc/<pid>/environ', { error: err.message });
  }
}

async function main(): Promise<void> {
  let runtime: RunningRuntime;
  let generic: GenericConfig | undefined;
  // Read before the start: with FNHOST_ISOLATION=process the process environment becomes the function's.
  const parentPipe = process.env.FNHOST_PARENT_PIPE === '1';
  delete process.env.FNHOST_PARENT_PIPE;
  try {
    // One machine: the credentials come over stdin (never in an environment; hide-secrets.ts). Held in
    // process.env only until the config is read, then removed with the rest.
    if (process.env[SECRETS_ON_STDIN] === '1') {
      delete process.env[SECRETS_ON_STDIN];
      Object.assign(process.env, readSecretLines(0, [...RUNTIME_SECRETS, 'FNHOST_SPECIALIZE_TOKEN']));
    }
    generic = loadGenericConfig(process.env);
    if (generic === undefined) {
      const config = loadConfig(process.env);
      // Read once: from now on only in memory, never in an environment a child inherits or /proc shows.
      hideOrWarn(RUNTIME_SECRETS);
      runtime = await startRuntime(config);
    } else {
      // The credential is needed only in memory; the handler's environment never holds it.
      hideOrWarn(['FNHOST_SPECIALIZE_TOKEN']);
      runtime = await startGenericRuntime(generic);
    }
  } catch (err) {
    if (!(err instanceof ConfigError) && !(err instanceof SecretScrubError)) throw err;
    log('error', (err as Error).message);
    process.exit(2);
  }
  // A sandboxed runtime's stdin is a pipe from the gateway: its end means the gateway is gone, so is this runtime.
  if (parentPipe) {
    process.stdin.on('end', () => process.exit(1));
    process.stdin.on('error', () => process.exit(1));
    process.stdin.resume();
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
  if (runtime.socket !== undefined) listening.socket = runtime.socket;
  if (generic !== undefined) listening.generic = true;
  process.stdout.write(JSON.stringify(listening) + '\n');
  // Node writes its compile cache (NODE_COMPILE_CACHE) only at exit: write it now, so the next
  // runtime on this machine starts from it even while this one keeps running (the worker writes its own).
  process.getBuiltinModule('node:module').flushCompileCache();
}

if (import.meta.main) await main();
