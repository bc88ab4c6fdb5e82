// Messages between the main thread (HTTP, health, watchdog) and the worker (user code).
// Small, positional-ish objects: one structured clone per message; bodies travel as
// strings or transferred ArrayBuffers.


/** main → worker */
export const M_REQUEST = 0;
export const M_ABORT = 1;
/** A spare worker (./spare-worker.ts) learns its function: configuration and environment. */
export const M_CONFIGURE = 2;
/** worker → main */
export const W_READY = 10;
export const W_LOAD_ERROR = 11;
export const W_FULL = 12;
export const W_HEAD = 13;
export const W_CHUNK = 14;
export const W_END = 15;
export const W_ERROR = 16;
export const W_CONSOLE = 17;
/** A spare worker found its clock in another time zone than the function's: it must not be used. */
export const W_SPARE_STALE = 18;

export type Body = string | Uint8Array | undefined;

export interface RequestMsg {
  t: typeof M_REQUEST;
  i: number;
  m: string;
  u: string;
  h: string[];
  b: Uint8Array | undefined;
  a: string;
}
export interface AbortMsg { t: typeof M_ABORT; i: number }
/**
 * d: the worker's configuration (its heartbeat excepted, which it has), env: the function's
 * environment, tz: the time-zone offsets (minutes) the main thread sees at ./spare-worker.ts
 * TZ_PROBES, which the worker's own clock must match.
 */
export interface ConfigureMsg { t: typeof M_CONFIGURE; d: FunctionWorkerData; env: Record<string, string>; tz: number[] }
export type ToWorker = RequestMsg | AbortMsg | ConfigureMsg;

/** What the worker needs to know of its function (WorkerData in ./worker.ts, minus its heartbeat). */
export interface FunctionWorkerData {
  file: string;
  functionName: string;
  routes: string[];
  gatewayUrl: string | undefined;
  runtimeToken: string | undefined;
  /** FNHOST_EGRESS_PROXY (docs/egress.md); undefined: fetch asks the internal policy check instead. */
  egressProxy: string | undefined;
  /** Whether console writes are posted to the main thread for the call's record (console-capture.ts). */
  captureConsole: boolean;
}

export interface ReadyMsg { t: typeof W_READY }
/** k: why (loader.ts LoadErrorKind), e: the text, which names no path. */
export interface LoadErrorMsg { t: typeof W_LOAD_ERROR; k: 'syntax' | 'no_handler' | 'failed'; e: string }
/** A whole response in one message: status, flat header list [name, value, ...], body. */
export interface FullMsg { t: typeof W_FULL; i: number; s: number; h: string[]; b: Body }
export interface HeadMsg { t: typeof W_HEAD; i: number; s: number; h: string[] }
export interface ChunkMsg { t: typeof W_CHUNK; i: number; b: Body }
export interface EndMsg { t: typeof W_END; i: number; b: Body }
/** The runtime produced the outcome: s is the status, k the x-fnhost-error-kind (empty for none), e the text. */
/** `st`: the thrown error's frames in the function's files (./error-stack.ts), when it has any. */
export interface ErrorMsg { t: typeof W_ERROR; i: number; s: number; k: string; e: string; st?: string; body: string }
export interface SpareStaleMsg { t: typeof W_SPARE_STALE; e: string }
/**
 * Console writes of calls (console-capture.ts), four entries a write: the execution id, 'o'/'e'
 * (stdout/stderr), ms since the epoch, the text. Batched per turn of the worker's loop, and sent
 * before any answer, so the main thread has a call's output up to its answer when the answer goes.
 */
export interface ConsoleMsg { t: typeof W_CONSOLE; l: Array<string | number> }
export type FromWorker = ReadyMsg | LoadErrorMsg | FullMsg | HeadMsg | ChunkMsg | EndMsg | ErrorMsg | ConsoleMsg | SpareStaleMsg;
