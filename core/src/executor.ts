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
}

export type RecycleReason = 'timeout' | 'crash' | 'out_of_memory';

export interface Executor {
  /**
   * Where to send one call of this function; waits (bounded) while a runtime
   * starts. Throws FnhostError when none can be had.
   */
  acquire(fn: FunctionRecord): Promise<Upstream>;
  /** A call found the runtime stuck or dead: replace it. */
  recycle(functionId: string, reason: RecycleReason): void;
  /** Converge on the current record: start, restart on change, or stop (inactive, or null when deleted). */
  sync(functionId: string, fn: FunctionRecord | null): Promise<void>;
  close(): Promise<void>;
}
