import type { FunctionAsyncSettings } from './async-call.ts';
import type { RecordedRequest, RecordedResponse, RequestRecording, RetentionPolicy } from './model.ts';
import type { Change } from './replay-diff.ts';
import type { FunctionScalingSettings } from './scaling.ts';
import type { ScheduleRun } from './schedule-ledger.ts';

// The management API's wire shapes (gateway/openapi.yaml), as its clients
// receive them: the CLI and the admin panel import these instead of each
// keeping a copy. Records the gateway stores are in model.ts.

export interface ApiSchedule {
  cron: string;
  timezone: string;
  enabled: boolean;
  /** ISO 8601 UTC; null when disabled or when the expression never fires. */
  next_run_at?: string | null;
}

/** A function as `GET /api/v1/functions/{ref}` returns it. */
export interface ApiFunction {
  function_id: string;
  name: string;
  namespace: string;
  code?: string;
  /** Code held apart by digest (core/src/code/): present instead of `code`. */
  code_ref?: { digest: string; size: number };
  env: Record<string, string>;
  routes: string[];
  timeout_seconds: number;
  memory_mib: number;
  active: boolean;
  retention: RetentionPolicy;
  schedule: ApiSchedule | null;
  /** Request recording for replay (docs/replay.md); off unless turned on. */
  record_requests?: RequestRecording;
  total_executions: number;
  invocation_url: string;
  created_at: string;
  /** When the function last changed, by the API or (cluster mode) by any writer of its spec, kubectl included. */
  updated_at: string;
  /** Cluster mode only: how the function scales and its CPU (PUT /functions/{ref}/scaling). */
  scaling?: FunctionScalingSettings;
  /** One machine only: the runtime's CPU request and limit (PUT /functions/{ref}/scaling with only `cpu`; docs/sandbox.md "CPU"). */
  cpu?: FunctionScalingSettings['cpu'];
  /** Cluster mode: how far the operator has rolled out the current spec (absent on one machine, where a write returns once the new code serves). */
  rollout?: ApiRollout;
  /** The function's own KV quota fields (absent ones take the platform's default). */
  kv_quota?: { max_bytes?: number; max_keys?: number };
  /** Single-function answers: KV usage (expired keys never count) and the quota in force (docs/kv.md "Quotas"). */
  kv?: ApiKvUsage;
  /** The function's own async settings (docs/async.md); absent fields take the defaults, no callback_hosts: no callbacks. */
  async?: FunctionAsyncSettings;
}

export interface ApiKvUsage {
  keys: number;
  bytes: number;
  max_keys: number;
  max_bytes: number;
  /** Cluster mode with a namespace total: the namespace's KV bytes and its quota. */
  namespace_bytes?: number;
  namespace_max_bytes?: number;
}

/** The Function's Ready condition against its generation (cluster mode). */
export interface ApiRollout {
  /** The spec's generation (metadata.generation). */
  generation: number;
  /** The generation the Ready condition speaks of; below `generation`, the operator has not acted on the last change yet. */
  observed_generation: number;
  ready: 'True' | 'False' | 'Unknown';
  /** The operator's reason: Available, Idle, Inactive, ScaledToZero (serving or ready to), Progressing, CodeDoesNotParse, NamespaceNotAllowed, ... */
  reason: string;
  message: string;
}

/** `POST /api/v1/functions/{ref}/test`. */
export interface ApiTestResult {
  log_id: string;
  status_code: number;
  execution_time_ms: number;
  error_message: string | null;
  headers: Record<string, string>;
  body: unknown;
}

/** `GET /api/v1/info`: which kind of gateway answers. */
export interface ApiServerInfo {
  /** `local`: one machine, whose only namespace is the default; `cluster`: Function resources in Kubernetes namespaces. */
  mode: 'local' | 'cluster';
  /** The namespace of management requests that name none (`?namespace=` absent). */
  default_namespace: string;
  /** One machine: whether runtimes run sandboxed, and the warning when they do not (docs/sandbox.md). */
  sandbox?: { enabled: boolean; warning?: string };
}

/** `GET /api/v1/functions/{ref}/logs/{id}/request`: a record's stored request and response. */
export interface ApiRecordedExchange {
  log_id: string;
  executed_at: string;
  trigger: string;
  request: RecordedRequest;
  response: RecordedResponse | null;
}

/** `POST /api/v1/functions/{ref}/logs/{id}/replay`. */
export interface ApiReplayResult {
  /** The replay's own record (trigger `replay`). */
  log_id: string;
  replayed_from: string;
  /** `current`: the deployed code; `throwaway`: the code sent with the request, run once. */
  code: 'current' | 'throwaway';
  execution_time_ms: number;
  error_message: string | null;
  recorded: RecordedResponse | null;
  replayed: RecordedResponse;
  /** null when the record kept no response (the platform answered instead). */
  changes: Change[] | null;
}

/** `GET /api/v1/functions/{ref}/schedule/runs`: the ledger of scheduled runs. Every time is ISO 8601 UTC. */
export interface ApiScheduleRuns {
  function_id: string;
  schedule: ApiSchedule | null;
  concurrency_policy: 'forbid';
  starting_deadline_seconds: number;
  /** The next planned runs (none while the schedule is disabled or the function inactive). */
  next_runs: string[];
  /** Newest planned first. */
  runs: ScheduleRun[];
}

/** `POST /api/v1/functions/{ref}/schedule/run`: the run's outcome, as function:test's. */
export interface ApiScheduleRunResult extends ApiTestResult {
  trigger: 'schedule';
  manual: true;
}

/** An async call as the owner reads it (GET /api/v1/functions/{ref}/async/{id}; gateway/src/async/view.ts): the CLI's function:async, the panel's Async calls. */
export interface ApiAsyncCall {
  async_id: string;
  function_id: string;
  state: 'queued' | 'running' | 'succeeded' | 'failed' | 'dead';
  accepted_at: string;
  finished_at: string | null;
  attempt: number;
  next_attempt_at: string | null;
  dead_reason: string | null;
  attempts: Array<{ attempt: number; log_id: string | null; started_at: string; ended_at: string; status_code: number | null; error_message: string | null }>;
  result: { status_code: number; headers: Record<string, string | string[]>; body: string; truncated: boolean } | null;
  request: { method: string; path: string } | null;
  /** The X-Callback-Url's delivery (docs/async.md "Callbacks"); the URL without its query. */
  callback: { url: string; state: 'pending' | 'delivered' | 'failed'; attempts: number; last_status: number | null; last_error?: string | null; updated_at: string | null } | null;
}

export interface ApiAsyncCalls {
  function_id: string;
  states: string[];
  calls: ApiAsyncCall[];
}
