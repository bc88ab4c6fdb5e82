import type { CodeRef } from './code/digest.ts';
import type { FunctionScalingSettings } from './scaling.ts';
// The fnhost domain model, shared by the gateway, the operator and the CLI.
// Field names of records that leave the process (logs, functions) follow the
// spec: snake_case for records, camelCase for the pagination object.

/** How long or how many execution logs a function keeps. `none` keeps all. */
export type RetentionPolicy =
  | { type: 'none' }
  | { type: 'time'; days: number }
  | { type: 'count'; count: number };

/** A 5-field cron schedule. Disabling keeps the expression so it can be shown and re-enabled. */
export interface Schedule {
  cron: string;
  /** IANA time zone the cron fields are read in; UTC unless the user names one. */
  timezone: string;
  enabled: boolean;
}

/** What started an execution. `replay`: a recorded request sent again (function:replay). */
export type Trigger = 'http' | 'schedule' | 'test' | 'replay' | 'async';

/**
 * Whether a function keeps each execution's request and response for replay
 * (core/src/recording.ts, docs/replay.md). Off unless its owner turns it on:
 * bodies may hold personal data.
 */
export interface RequestRecording {
  enabled: boolean;
  /** Each body is kept up to this many bytes (at most limits.MAX_RECORD_BODY_BYTES); a longer one is cut and marked. */
  max_body_bytes: number;
  /** Masked before anything is stored: header names (any case) and JSON paths (`$.card.number`, `$.items[*].iban`). */
  redact: { headers: string[]; json_paths: string[] };
}

/** A recorded body: text as is, other bytes in base64; `truncated` when it was longer than the bound (`size` is its full length). */
export interface RecordedBody {
  encoding: 'utf8' | 'base64';
  data: string;
  size: number;
  truncated: boolean;
  /** Set when the body was not kept: a JSON body under a json_paths policy that could not be parsed (cut, or not JSON) cannot be masked. */
  omitted?: string;
}

/** What a caller sent, as recorded (without Authorization, Cookie and the platform's own headers; redaction applied). */
export interface RecordedRequest {
  method: string;
  /** The path the handler saw, without the query string. */
  path: string;
  /** The query string without `?`; '' when none. */
  query: string;
  headers: Record<string, string>;
  body: RecordedBody | null;
}

export interface RecordedResponse {
  status: number;
  headers: Record<string, string>;
  body: RecordedBody | null;
}

/** One execution's request and response, kept beside its log record under the same retention. */
export interface RecordedExchange {
  request: RecordedRequest;
  /** null when the call ended before an answer was read (the platform answered instead). */
  response: RecordedResponse | null;
}

/** A stored function, as the stores keep it. */
export interface FunctionRecord {
  /** UUID; the `{functionId}` of `/invoke/{functionId}`. */
  function_id: string;
  /** Short name, a DNS-1123 label (see validation.ts). Unique per namespace. */
  name: string;
  /** Kubernetes namespace in cluster mode; `default` on one machine. */
  namespace: string;
  /**
   * The module source (ESM or CommonJS), inline; '' when the code is held apart (`code_ref`).
   * A function has exactly one of the two (validateCodeSource).
   */
  code: string;
  /** The code held in the code store by digest (docs/gateway.md "The code store"): set exactly when `code` is ''. */
  code_ref?: CodeRef;
  env: Record<string, string>;
  /** Route patterns such as `/users/:userId` that fill `req.params`. */
  routes: string[];
  timeout_seconds: number;
  memory_mib: number;
  active: boolean;
  retention: RetentionPolicy;
  /** null when no schedule was ever set. */
  schedule: Schedule | null;
  /** Absent (older records) means off. */
  record_requests?: RequestRecording;
  /** This function's KV quota; a field absent or null takes the platform's default (core/src/kv-quota.ts). */
  kv_quota?: FunctionKvQuota;
  /** Asynchronous invocation's retries and age (core/src/async-call.ts); absent fields take the defaults. */
  async?: FunctionAsyncSettings;
  /** ISO 8601 UTC with milliseconds and `Z`. */
  created_at: string;
  updated_at: string;
  /** Cluster mode only: pods, autoscaling, scale to zero and CPU (the Function's spec; one machine has none). */
  scaling?: FunctionScalingSettings;
  /**
   * One machine only: the runtime's CPU weight and ceiling (its sandbox's cpu cgroup), in the units
   * of cluster mode's scaling.cpu; set by PUT /functions/{ref}/scaling {"cpu": ...}. Absent: the defaults.
   */
  cpu?: FunctionScalingSettings['cpu'];
}

/** A function's own KV quota (docs/kv.md "Quotas"): null or absent takes the platform's default. */
export interface FunctionKvQuota {
  max_bytes?: number | null;
  max_keys?: number | null;
}

/** One execution log record, exactly the spec's fields plus the trigger. */
export interface ExecutionLog {
  /** `log_` followed by characters (see ids.ts). */
  id: string;
  function_id: string;
  status_code: number;
  /** Integer milliseconds from the request reaching the gateway to the response ending. */
  execution_time_ms: number;
  error_message: string | null;
  /**
   * A thrown error's stack frames in the function's own files, mapped to the user's sources by
   * the bundle's source map (`at explode (src/handler.ts:20:9)`, one frame a line). Present only
   * when the runtime gave one: error_message stays the error's text, as the spec says.
   */
  error_stack?: string;
  /** ISO 8601 UTC with milliseconds and `Z`: when the execution started. */
  executed_at: string;
  trigger: Trigger;
  /**
   * Whether the call waited for a runtime to start (one machine: a runtime started or still
   * loading; cluster: the call was held for a pod). Absent on records written before it existed.
   */
  cold_start?: boolean;
  /** How long the call waited for a runtime (ms, part of execution_time_ms). */
  wait_ms?: number;
  /**
   * A `schedule` run fired by hand (`function:schedule:run`), not by the
   * schedule. Present (true) only on such runs.
   */
  manual?: true;
  /** An `async` execution: the call it is an attempt of (docs/async.md). */
  async_id?: string;
  /** An `async` execution: which attempt, from 1. */
  attempt?: number;
}

export type StatusFilter = 'all' | 'success' | 'error';

export interface LogQuery {
  status: StatusFilter;
  /** Page size, 1..MAX_LOG_PAGE_LIMIT. */
  limit: number;
  /** 1-based page number. */
  page: number;
}

/** The spec's pagination object. */
export interface Pagination {
  currentPage: number;
  totalPages: number;
  totalCount: number;
  hasNextPage: boolean;
  hasPrevPage: boolean;
}

/** The spec's log list object: newest first. */
export interface LogPage {
  logs: ExecutionLog[];
  pagination: Pagination;
}

/** Administrator-set outbound rules, enforced by the runtime's `fetch`. */
export interface NetworkPolicy {
  /** What happens to a host no rule names. */
  default: 'allow' | 'deny';
  /** Host patterns: `example.com`, `*.example.com`, an IP, or a CIDR such as `10.0.0.0/8`. */
  allow: string[];
  deny: string[];
}

/** A policy scope: the global one (`null` function) or one function's overrides. */
export interface NetworkPolicyScope {
  function_id: string | null;
}

export interface NetworkPolicyChange {
  id: string;
  /** `global` or a function id. */
  scope: string;
  /** Who made the change (the admin identity; never a token). */
  actor: string;
  at: string;
  before: NetworkPolicy | null;
  after: NetworkPolicy | null;
}

/** A function's own async settings (FunctionRecord.async; docs/async.md); absent fields take async-call.ts's defaults. */
export interface FunctionAsyncSettings {
  /** Retries after the first attempt, 0..MAX_ASYNC_RETRIES. */
  max_retries?: number;
  /** How long after acceptance a call may still be started, in seconds. */
  max_age_seconds?: number;
  /** Hosts X-Callback-Url may name (async-callback.ts); absent or empty: no callbacks. */
  callback_hosts?: string[];
}
