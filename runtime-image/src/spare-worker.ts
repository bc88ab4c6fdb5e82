// A spare worker thread (docs/internal-protocol.md "Warm pool"): a generic runtime starts the
// worker that will run its function before it knows the function, so a specialization only
// loads the function's module. Starting a worker thread (Node's bootstrap of a new isolate and
// the runtime's own modules) is most of what a specialization cost: 35-42 ms of CPU.
//
// What cannot be changed once a worker exists decides whether the spare can be used:
// - its heap limit (resourceLimits): the spare is started with the memory the gateway expects
//   most functions to have (FNHOST_WARM_WORKER_MEMORY_MIB, the platform's default); a function
//   with another memory size gets a new worker, as without a spare;
// - its clock's time zone: V8 caches it per isolate on the first local-time operation, and a
//   TZ set in the process afterwards does not reach a worker that already has the cache. The
//   spare does no local-time operation before it is configured; to be sure, the main thread
//   sends the offsets it sees at TZ_PROBES and the worker compares its own, and when they differ
//   the spare is discarded (W_SPARE_STALE) and a new worker started.
// Everything else (the environment, the function's configuration) is sent in M_CONFIGURE.
// With FNHOST_ISOLATION=process the "spare" is worker.ts loaded ahead on the main thread
// (./in-thread.ts): its modules are evaluated while the runtime waits, the heap limit is the
// process's, and M_CONFIGURE sets the process's environment.
import type { Worker } from 'node:worker_threads';
import { functionEnvOf, type Isolation } from './config.ts';
import { InThreadWorker, startInThread } from './in-thread.ts';

/** Instants whose local-time offsets show the time zone, summer and winter of both hemispheres. */
export const TZ_PROBES = [Date.UTC(2026, 0, 15, 12), Date.UTC(2026, 6, 15, 12)];

/** The offsets, in minutes, of this thread's clock at TZ_PROBES. */
export function timeZoneOffsets(): number[] {
  return TZ_PROBES.map((t) => new Date(t).getTimezoneOffset());
}

export interface SpareWorkerData {
  spare: true;
  heartbeat: SharedArrayBuffer;
  heartbeatMs: number;
}

export interface SpareWorker {
  worker: Worker | InThreadWorker;
  heartbeat: SharedArrayBuffer;
  memoryMiB: number;
  /** Set when the spare ended before it was used (it is then never used). */
  exited: boolean;
}

export function startSpareWorker(memoryMiB: number, heartbeatMs: number, isolation: Isolation = 'thread'): SpareWorker {
  const heartbeat = new SharedArrayBuffer(4);
  const data: SpareWorkerData = { spare: true, heartbeat, heartbeatMs };
  if (isolation === 'process') return { worker: startInThread(data, new URL('./worker.ts', import.meta.url)), heartbeat, memoryMiB, exited: false };
  const { Worker } = process.getBuiltinModule('node:worker_threads');
  const worker = new Worker(new URL('./worker.ts', import.meta.url), {
    workerData: data,
    // The generic runtime's environment as a function's would be (NODE_COMPILE_CACHE among it: the
    // worker reads it as it starts, and without it compiles every module afresh); M_CONFIGURE
    // replaces it with the function's.
    env: functionEnvOf(process.env),
    resourceLimits: { maxOldGenerationSizeMb: memoryMiB },
    name: 'fnhost:spare',
  });
  const spare: SpareWorker = { worker, heartbeat, memoryMiB, exited: false };
  // Until a supervisor takes it: an error ends it, and it is then not used.
  const onError = (): void => undefined;
  worker.on('error', onError);
  worker.once('exit', () => (spare.exited = true));
  return spare;
}
