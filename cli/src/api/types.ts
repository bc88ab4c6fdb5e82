import type { ExecutionLog, LogPage, RetentionPolicy } from '@fnhost/core/model.ts';

// The management API's shapes the CLI sends and receives (docs/api-outline.md);
// what it receives is core's (core/src/api.ts), shared with the admin panel.

export type { ApiFunction, ApiSchedule, ApiRecordedExchange, ApiReplayResult } from '@fnhost/core/api.ts';
import type { RequestRecording } from '@fnhost/core/model.ts';

/** A function's code as sent: inline, or a reference to code uploaded by digest (PUT /api/v1/code/{digest}). */
export type CodeBody = { code: string; code_ref?: undefined } | { code?: undefined; code_ref: { digest: string; size: number } };

export type CreateFunctionBody = CreateFunctionFields & CodeBody;

export interface CreateFunctionFields {
  name: string;
  env?: Record<string, string>;
  routes?: string[];
  timeout_seconds?: number;
  memory_mib?: number;
  schedule?: { cron: string; timezone?: string };
  record_requests?: Partial<RequestRecording>;
  kv_quota?: { max_bytes?: number | null; max_keys?: number | null };
  async?: { max_retries?: number | null; max_age_seconds?: number | null; callback_hosts?: string[] | null };
}

export interface UpdateFunctionBody {
  code?: string;
  code_ref?: { digest: string; size: number };
  env?: Record<string, string>;
  routes?: string[];
  timeout_seconds?: number;
  memory_mib?: number;
  record_requests?: Partial<RequestRecording>;
  kv_quota?: { max_bytes?: number | null; max_keys?: number | null };
  async?: { max_retries?: number | null; max_age_seconds?: number | null; callback_hosts?: string[] | null };
}

export interface TestRequest {
  method?: string;
  path?: string;
  query?: Record<string, string>;
  headers?: Record<string, string>;
  body?: unknown;
}

export type { ApiTestResult as TestResult, ApiScheduleRuns as ScheduleRuns, ApiScheduleRunResult as ScheduleRunResult } from '@fnhost/core/api.ts';

export type { ExecutionLog, LogPage, RetentionPolicy };

/** An async call as the owner reads it (GET /api/v1/functions/{ref}/async/{id}; gateway/src/async/view.ts). */
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
