import type { ExecutionLog, LogPage, RetentionPolicy } from '@fnhost/core/model.ts';

// The management API's shapes as the CLI receives them (docs/api-outline.md).

export interface ApiSchedule {
  cron: string;
  timezone: string;
  enabled: boolean;
  next_run_at?: string | null;
}

export interface ApiFunction {
  function_id: string;
  name: string;
  namespace: string;
  code?: string;
  env: Record<string, string>;
  routes: string[];
  timeout_seconds: number;
  memory_mib: number;
  active: boolean;
  retention: RetentionPolicy;
  schedule: ApiSchedule | null;
  total_executions: number;
  invocation_url: string;
  created_at: string;
  updated_at: string;
}

export interface CreateFunctionBody {
  name: string;
  code: string;
  env?: Record<string, string>;
  routes?: string[];
  timeout_seconds?: number;
  memory_mib?: number;
  schedule?: { cron: string; timezone?: string };
}

export interface UpdateFunctionBody {
  code?: string;
  env?: Record<string, string>;
  routes?: string[];
  timeout_seconds?: number;
  memory_mib?: number;
}

export interface TestRequest {
  method?: string;
  path?: string;
  query?: Record<string, string>;
  headers?: Record<string, string>;
  body?: unknown;
}

export interface TestResult {
  log_id: string;
  status_code: number;
  execution_time_ms: number;
  error_message: string | null;
  headers: Record<string, string>;
  body: unknown;
}

export type { ExecutionLog, LogPage, RetentionPolicy };
