import type { RetentionPolicy } from './model.ts';
import type { FunctionScalingSettings } from './scaling.ts';

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
  /** Cluster mode only: how the function scales and its CPU (PUT /functions/{ref}/scaling). */
  scaling?: FunctionScalingSettings;
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
