import type { FunctionRecord } from './model.ts';

// Where a function's code runs. On one machine: a runtime process per active
// function on loopback (gateway/src/executor/local.ts). On Kubernetes: the
// function's ready pods, found from EndpointSlices. The gateway's proxy code is
// the same for both: it asks for an upstream and sends HTTP to it.

export interface Upstream {
  /** `http://host:port` of one runtime instance (a name only, when socketPath is set). */
  origin: string;
  /** A sandboxed runtime on one machine is reached over this Unix socket. */
  socketPath?: string;
  /** The call waited for this runtime to start (one machine: started or still loading; cluster: held for a pod). */
  coldStart?: boolean;
}

export type RecycleReason = 'timeout' | 'crash' | 'out_of_memory';

/** A runtime started and loaded for a record before it is stored (Executor.prepare). */
export interface PreparedRuntime {
  /** The record is stored: the runtime becomes the function's, and its previous one stops. */
  commit(): void;
  /** The record is not stored (or inactive): the runtime stops; the previous one keeps serving. */
  discard(): Promise<void>;
  /**
   * The module parsed and named a handler but its top level threw while loading (a missing env
   * variable, say): the owner's text, with the place in the user's source. The function service
   * refuses such a write unless asked to store it anyway (docs/gateway.md "Broken code").
   */
  loadError?: string;
  /** The load did not finish within its load bound (FNHOST_LOAD_TIMEOUT_SECONDS): loadError says so, and the runtime is already ended. */
  loadTimedOut?: boolean;
}

/** A runtime started for one call to an unstored version (Executor.throwaway). */
export interface ThrowawayRuntime {
  upstream: Upstream;
  discard(): Promise<void>;
}

export interface Executor {
  /**
   * Where to send one call of this function; waits (bounded) while a runtime
   * starts. Throws FnhostError when none can be had.
   */
  acquire(fn: FunctionRecord): Promise<Upstream>;
  /**
   * What acquire() would resolve to at once, without a promise, when the call would not wait
   * (one machine: this configuration's runtime has started and loaded); undefined otherwise,
   * and the call goes through acquire(). The invocation path asks this first: a promise, its
   * wrapper and two microtask turns per call are measurable at thousands of calls a second.
   */
  readyNow?(fn: FunctionRecord): Upstream | undefined;
  /**
   * One machine: starts a runtime for `fn` as it is about to be stored and waits until its
   * module has loaded there, leaving the function's current runtime serving. Rejects with a
   * 400 FnhostError when the module does not parse or exports no handler: the check that runs
   * the user's code runs in the runtime, not in the caller. (Cluster mode has none: the
   * operator parses the code, Ready=False CodeDoesNotParse.)
   */
  prepare?(fn: FunctionRecord): Promise<PreparedRuntime>;
  /**
   * One machine: a runtime of its own for a version of `fn` that is never stored (function:replay
   * --code): started as a start would (same sandbox, environment, KV namespace), its module loaded,
   * the function's serving runtime untouched. Rejects with a 400 FnhostError for code that does not
   * parse or exports no handler, with another FnhostError when no runtime can be had. The caller
   * discards it after its one call. (Cluster mode has none: the gateway makes a throwaway Function
   * resource instead, gateway/src/cluster/throwaway.ts, docs/replay.md.)
   */
  throwaway?(fn: FunctionRecord): Promise<ThrowawayRuntime>;
  /**
   * One machine: a call to the function began / ended (HTTP, a schedule firing, a test run). A
   * runtime with a call in flight is never stopped for idleness (gateway/src/executor/idle.ts).
   */
  callStarted?(functionId: string): void;
  callEnded?(functionId: string): void;
  /** A call found the runtime stuck or dead: replace it. */
  recycle(functionId: string, reason: RecycleReason): void;
  /**
   * Cluster mode: a connection to `origin` was refused, so the call never reached it (a pod
   * stopping while its EndpointSlice still lists it as ready). The call is sent again; the
   * executor passes that origin over for a while, so it goes to another pod or is held for one.
   */
  unreachable?(fn: FunctionRecord, origin: string): void;
  /** Converge on the current record: start, restart on change, or stop (inactive, or null when deleted). */
  sync(functionId: string, fn: FunctionRecord | null): Promise<void>;
  close(): Promise<void>;
}
