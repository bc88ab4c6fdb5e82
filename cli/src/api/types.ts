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

export type { ApiAsyncCall, ApiAsyncCalls } from '@fnhost/core/api.ts';
