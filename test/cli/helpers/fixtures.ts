import type { ExecutionLog, LogPage } from '@fnhost/core/model.ts';
import { paginate } from '@fnhost/core/status.ts';
import type { ApiFunction } from '../../../cli/src/api/types.ts';

// Records shaped as the API sends them, for unit tests of formatting and views.

let sequence = 0;

export function log(overrides: Partial<ExecutionLog> = {}): ExecutionLog {
  sequence++;
  return {
    id: `log_${String(sequence).padStart(20, '0')}`,
    function_id: '5b0f1a1e-1111-4222-8333-944445555666',
    status_code: 200,
    execution_time_ms: 12,
    error_message: null,
    executed_at: new Date(Date.UTC(2026, 10, 22, 13, 3, 7) + sequence * 1000).toISOString(),
    trigger: 'http',
    ...overrides,
  };
}

export function page(logs: ExecutionLog[], totalCount = logs.length, limit = 50, current = 1): LogPage {
  return { logs, pagination: paginate(totalCount, limit, current) };
}

export function fn(overrides: Partial<ApiFunction> = {}): ApiFunction {
  return {
    function_id: '5b0f1a1e-1111-4222-8333-944445555666',
    name: 'hello',
    namespace: 'default',
    env: {},
    routes: [],
    timeout_seconds: 30,
    memory_mib: 128,
    active: true,
    retention: { type: 'none' },
    schedule: null,
    total_executions: 0,
    invocation_url: 'http://127.0.0.1:8080/invoke/5b0f1a1e-1111-4222-8333-944445555666',
    created_at: '2026-11-22T13:00:00.000Z',
    updated_at: '2026-11-22T13:00:00.000Z',
    ...overrides,
  };
}
