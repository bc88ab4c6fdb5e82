// The worker thread: the only place user code runs. It loads the module, installs the
// handler's globals and turns request messages into handler(req, res) calls. The main
// thread watches it (heartbeat below) and ends it on timeout; an out-of-memory or
// process.exit ends only this thread. With FNHOST_ISOLATION=process this same module runs on
// the main thread instead (./in-thread.ts), and those ends are the process's.
import type { MessagePort as ThreadPort } from 'node:worker_threads';
import { FnRequest } from './request.ts';
import { InvalidJsonError, parseBody } from './request-body.ts';
import { compileRoutes } from './routes.ts';
import { FnResponse, type Sink } from './response.ts';
import { directOf, installEgress, parseEgressProxy } from './egress.ts';
import { internalClient, invocationContext, makeConsole, makeKv, policedFetch, policyCheck } from './globals.ts';
import { ownerConsoleText, ownerPrefixes, ownerStack } from './error-stack.ts';
import { hasLargeInlineMap, LazySourceMap } from './lazy-source-map.ts';
import { LoadError, loadHandler, type Handler } from './loader.ts';
import {
  M_ABORT, M_CONFIGURE, M_REQUEST, W_CONSOLE, W_ERROR, W_LOAD_ERROR, W_READY, W_SPARE_STALE, type ConfigureMsg, type FromWorker, type FunctionWorkerData, type RequestMsg, type ToWorker,
} from './protocol.ts';
import { timeZoneOffsets, type SpareWorkerData } from './spare-worker.ts';
import { inThreadSide } from './in-thread.ts';
import { preloadForFirstCall } from './libraries.ts';

export interface WorkerData extends FunctionWorkerData {
  heartbeat: SharedArrayBuffer;
  heartbeatMs: number;
}

// On the main thread (FNHOST_ISOLATION=process) the channel of ./in-thread.ts; node:worker_threads is then never loaded.
const inThread = inThreadSide();
const threads = inThread === undefined ? process.getBuiltinModule('node:worker_threads') : undefined;
const initial = (inThread?.data ?? threads!.workerData) as WorkerData | SpareWorkerData;
const port = (inThread?.port ?? threads!.parentPort!) as Pick<ThreadPort, 'on' | 'off' | 'postMessage'>;

// The event loop turning is what the watchdog watches: a blocked loop stops counting.
const beat = new Int32Array(initial.heartbeat);
// The first beat, now: the runtime's own modules are loaded, and the function's load time limit starts (supervisor.ts).
Atomics.add(beat, 0, 1);
// On the main thread the supervisor reads how late its own check runs instead (a blocked loop
// delays both alike), so no beat timer: an idle runtime runs as little JavaScript as it can
// (./memory.ts: every timer tick's functions are JIT-compiled in time, paging in compiler code).
if (inThread === undefined) setInterval(() => Atomics.add(beat, 0, 1), initial.heartbeatMs).unref();

/**
 * A spare worker (./spare-worker.ts) waits here, its modules loaded, for its function. Nothing
 * before this point reads the local time: the time zone is known only now.
 */
function configured(spare: SpareWorkerData): Promise<WorkerData> {
  // Idle until its function comes: the first call's libraries now (a function sent meanwhile waits
  // for them, ≈ 10 ms). They read no local time, so the zone check below holds.
  preloadForFirstCall();
  return new Promise((resolve) => {
    const onMessage = (msg: ToWorker): void => {
      if (msg.t !== M_CONFIGURE) return;
      port.off('message', onMessage);
      const { d, env, tz } = msg as ConfigureMsg;
      for (const name of Object.keys(process.env)) if (!Object.hasOwn(env, name)) delete process.env[name];
      for (const [name, value] of Object.entries(env)) process.env[name] = value;
      const own = timeZoneOffsets();
      if (own.some((offset, i) => offset !== tz[i])) {
        // The supervisor ends this worker and starts one that reads the process's TZ afresh.
        port.postMessage({ t: W_SPARE_STALE, e: `time-zone offsets ${own.join(',')} where the runtime has ${tz.join(',')}` } satisfies FromWorker);
        return;
      }
      resolve({ ...d, heartbeat: spare.heartbeat, heartbeatMs: spare.heartbeatMs });
    };
    port.on('message', onMessage);
  });
}

const data: WorkerData = 'spare' in initial ? await configured(initial) : initial;

const rawFetch = globalThis.fetch;
const client = internalClient(data.gatewayUrl, data.runtimeToken, rawFetch, () => 'the internal API');
// A call's console writes go to the main thread batched (one message per turn of this loop,
// not one per line: a message wakes the main thread), and before any answer is posted.
let consoleBatch: Array<string | number> = [];
function flushConsole(): void {
  if (consoleBatch.length === 0) return;
  const l = consoleBatch;
  consoleBatch = [];
  port.postMessage({ t: W_CONSOLE, l } satisfies FromWorker);
}
/** The module's own paths in stacks, made relative in what the owner reads (set once moduleFiles is known). */
let ownPrefixes: Array<[string, string]> = [];
const captureTo = (stream: 'o' | 'e') => (executionId: string, text: string) => {
  if (consoleBatch.length === 0) setImmediate(flushConsole);
  consoleBatch.push(executionId, stream, performance.timeOrigin + performance.now(), ownerConsoleText(text, ownPrefixes));
};
const console_ = makeConsole(data.functionName, process.stdout, process.stderr, data.captureConsole ? { out: captureTo('o'), err: captureTo('e') } : undefined);
Object.defineProperty(globalThis, 'console', { value: console_, writable: true, configurable: true });
// With the egress proxy, every connection is routed and checked there (fetch included); the internal API stays direct.
const handlerFetch =
  data.egressProxy !== undefined
    ? installEgress({ endpoint: parseEgressProxy(data.egressProxy), credential: data.runtimeToken ?? '', direct: directOf(data.gatewayUrl) }, rawFetch).fetch
    : policedFetch(rawFetch, policyCheck(client));
Object.defineProperty(globalThis, 'fetch', { value: handlerFetch, writable: true, configurable: true });
Object.defineProperty(globalThis, 'kv', { value: makeKv(client), writable: false, configurable: false, enumerable: true });

const routes = compileRoutes(data.routes);
const live = new Map<number, FnResponse>();
const sink: Sink = {
  post(msg: FromWorker, transfer?: ArrayBuffer[]) {
    flushConsole();
    port.postMessage(msg, transfer);
  },
  finished(id: number) {
    live.delete(id);
  },
};

function errorText(err: unknown): string {
  if (err instanceof Error) return `${err.name}: ${err.message}`;
  try {
    return `thrown value: ${typeof err === 'string' ? err : JSON.stringify(err)}`;
  } catch {
    return `thrown value: ${String(err)}`;
  }
}

/** The handler failed: answer 500 (kind exception) unless it already answered; always log it. */
function fail(id: number, err: unknown, how: string): void {
  const res = live.get(id);
  const store = invocationContext.getStore();
  const log = () => console_.error(`${how}:`, err);
  if (store?.id === id) log();
  else invocationContext.run({ id, executionId: executions.get(id) ?? '-' }, log);
  if (res === undefined) return;
  live.delete(id);
  res.writableEnded = true;
  const message = errorText(err);
  const stack = ownerStack(err, moduleFiles, lazyMap);
  flushConsole();
  port.postMessage({ t: W_ERROR, i: id, s: 500, k: 'exception', e: message, ...(stack === undefined ? {} : { st: stack }), body: JSON.stringify({ error: 'function_error', message: 'the function failed; its error is in the execution log' }) } satisfies FromWorker);
}

const executions = new Map<number, string>();

function handle(msg: RequestMsg, handler: Handler): void {
  const id = msg.i;
  const raw = msg.h;
  let contentType: string | undefined;
  let executionId = '-';
  for (let i = 0; i < raw.length; i += 2) {
    const n = raw[i]!;
    if (n.length === 12 && n.toLowerCase() === 'content-type') contentType ??= raw[i + 1];
    else if (n.length === 21 && n.toLowerCase() === 'x-fnhost-execution-id') executionId = raw[i + 1]!;
  }
  let body: unknown;
  try {
    body = parseBody(msg.b, contentType);
  } catch (err) {
    if (!(err instanceof InvalidJsonError)) throw err;
    port.postMessage({ t: W_ERROR, i: id, s: 400, k: '', e: err.message, body: JSON.stringify({ error: 'invalid_json', message: err.message }) } satisfies FromWorker);
    return;
  }
  const res = new FnResponse(id, sink, msg.m);
  const req = new FnRequest(msg.m, msg.u, raw, msg.a, routes, body);
  req.res = res;
  res.req = req;
  live.set(id, res);
  executions.set(id, executionId);
  invocationContext.run({ id, executionId }, () => {
    try {
      const result = handler(req, res) as Promise<unknown> | undefined;
      if (result !== null && typeof result === 'object' && typeof result.then === 'function') {
        result.then(
          () => executions.delete(id),
          (err: unknown) => {
            fail(id, err, 'the handler rejected');
            executions.delete(id);
          },
        );
      } else executions.delete(id);
    } catch (err) {
      fail(id, err, 'the handler threw');
      executions.delete(id);
    }
  });
}

/** An error outside the handler's own call (a timer, an unhandled rejection): blame the call it belongs to, or the only one running. */
function orphan(err: unknown, how: string): void {
  const store = invocationContext.getStore();
  if (store !== undefined && live.has(store.id)) return fail(store.id, err, how);
  if (store === undefined && live.size === 1) return fail(live.keys().next().value!, err, how);
  console_.error(`${how} (no invocation to answer):`, err);
}

process.on('uncaughtException', (err) => orphan(err, 'uncaught exception'));
process.on('unhandledRejection', (reason) => orphan(reason, 'unhandled rejection'));

// Before the module loads (Node reads a module's source map as it loads it): a bundle's inline
// source map then puts the user's files and lines in every stack (./error-stack.ts).
// A large map (past LARGE_MAP_BYTES) is read lazily instead, one frame at a time: decoded whole
// by Node it would take the handler's heap (./lazy-source-map.ts).
const lazyMap = hasLargeInlineMap(data.file) ? new LazySourceMap(data.file) : undefined;
process.getBuiltinModule('node:module').setSourceMapsSupport(lazyMap === undefined);
/** The module's path and the real one Node names in stacks (./error-stack.ts). */
const moduleFiles = [data.file];
try {
  // Not an ES import of node:fs (see hide-secrets.ts).
  moduleFiles.push(process.getBuiltinModule('node:fs').realpathSync(data.file));
} catch {
  // No such file: the load fails and says so; no stack will need it.
}
ownPrefixes = ownerPrefixes(moduleFiles);

try {
  const handler = await loadHandler(data.file);
  port.on('message', (msg: ToWorker) => {
    if (msg.t === M_REQUEST) handle(msg, handler);
    else if (msg.t === M_ABORT) {
      const res = live.get(msg.i);
      if (res !== undefined) {
        res.aborted = true;
        live.delete(msg.i);
      }
    }
  });
  port.postMessage({ t: W_READY } satisfies FromWorker);
  // This thread's modules (and the function's) into NODE_COMPILE_CACHE now, not only at exit (see main.ts).
  process.getBuiltinModule('node:module').flushCompileCache();
} catch (err) {
  const kind = err instanceof LoadError ? err.kind : 'failed';
  port.postMessage({ t: W_LOAD_ERROR, k: kind, e: err instanceof LoadError ? err.message : `the module failed to load: ${errorText(err)}` } satisfies FromWorker);
}
