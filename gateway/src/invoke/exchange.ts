import type { FunctionRecord, Trigger, Upstream } from '@fnhost/core';
import type { ExchangeRecording } from './recording.ts';
import type { UpstreamResponse } from './upstream-request.ts';

// One execution on its way through the invocation path, and what the runs
// outside an HTTP call (./run.ts) need of that path (./proxy.ts implements it).

export interface RunRequest {
  method: string;
  /** Path and query string as the handler sees it, starting with `/`. */
  path: string;
  headers: Record<string, string>;
  body: Buffer | null;
}

export interface RunResult {
  log_id: string;
  status_code: number;
  execution_time_ms: number;
  error_message: string | null;
  headers: Record<string, string | string[]>;
  body: Buffer;
  truncated: boolean;
}

export interface Exchange {
  fn: FunctionRecord;
  trigger: Trigger;
  logId: string;
  startedAt: number;
  executedAt: number;
  /** performance.now() past which the gateway gives up on the runtime (0: not armed). */
  deadline: number;
  timedOut: boolean;
  /**
   * Set while the call waits for its runtime to start and load its module: at the deadline it
   * answers the call 504 without ending that runtime (its start and its load have bounds of their own).
   */
  expire?: () => void;
  /** The upstream the call went to (its pool is destroyed on a gateway timeout). */
  origin: string | undefined;
  logged: boolean;
  /** Whether the call waited for a runtime to start, and how long it waited for one (ExecutionLog.cold_start, wait_ms). */
  coldStart: boolean;
  waitMs: number;
  /** The thrown error's stack the runtime answered with (./error-stack.ts), for the record. */
  errorStack: string | undefined;
  /** The request and response kept for replay, when the function records them (./recording.ts). */
  recording: ExchangeRecording | undefined;
  /**
   * A replay against a throwaway version (function:replay --code): the call goes to this
   * runtime, never to the function's serving one, and is not retried elsewhere.
   */
  pinned: Upstream | undefined;
  /** A schedule run for the ledger: the time it was planned for, or null when fired by hand (`manual`). */
  scheduled: ScheduledFor | undefined;
  /** An attempt of an asynchronous call (gateway/src/async/): its id and attempt number go into the record. */
  async?: AsyncAttemptOf;
}

/** Which asynchronous call an execution is an attempt of. */
export interface AsyncAttemptOf {
  id: string;
  attempt: number;
}

/** Which planned run of a schedule an execution is: plannedAt null means fired by hand. */
export interface ScheduledFor {
  plannedAt: number | null;
}

/** How a run outside HTTP is sent: to a pinned runtime (replay --code), as a planned schedule run (the ledger). */
export interface RunOptions {
  pinned?: Upstream;
  scheduled?: ScheduledFor;
  async?: AsyncAttemptOf;
}

/** The send path as ./run.ts uses it: begin an execution, send it, write its one record. */
export interface ExecutionPath {
  /** Counts the execution in flight; from here on it ends in finish(). */
  begin(fn: FunctionRecord, trigger: Trigger, pinned?: Upstream): Exchange;
  /** Sends the call to the function's runtime with the gateway's own time limit armed. */
  send(ex: Exchange, method: string, path: string, headers: Record<string, string | string[]>, body: Buffer | null): Promise<UpstreamResponse>;
  /** Ends the execution and writes its log record. */
  finish(ex: Exchange, statusCode: number, errorMessage: string | null): void;
}
