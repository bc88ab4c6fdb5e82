import type { ExecutionLog, Trigger } from '../../model.ts';

// An execution record as a logs row, and the columns read back: shared by the log store and the
// stores that keep things beside a record (its exchange, its console output), which logs.ts
// itself calls inside its transactions. A file of its own so that they need not import logs.ts.

export const DAY_MS = 86_400_000;

export const LOG_COLUMNS = 'seq, executed_ms, id, status_code, execution_time_ms, error_message, error_stack, trigger, cold_start, wait_ms, manual, async_id, attempt';

export interface LogRow {
  seq: number;
  executed_ms: number;
  id: string;
  status_code: number;
  execution_time_ms: number;
  error_message: string | null;
  error_stack: string | null;
  trigger: string;
  cold_start: number | null;
  wait_ms: number | null;
  manual: number | null;
  async_id: string | null;
  attempt: number | null;
}

export function toLog(row: LogRow, functionId: string): ExecutionLog {
  return {
    id: row.id,
    function_id: functionId,
    status_code: row.status_code,
    execution_time_ms: row.execution_time_ms,
    error_message: row.error_message,
    ...(row.error_stack === null ? {} : { error_stack: row.error_stack }),
    executed_at: new Date(row.executed_ms).toISOString(),
    trigger: row.trigger as Trigger,
    ...(row.cold_start === null ? {} : { cold_start: row.cold_start === 1 }),
    ...(row.wait_ms === null ? {} : { wait_ms: row.wait_ms }),
    ...(row.manual === 1 ? { manual: true as const } : {}),
    ...(row.async_id === null ? {} : { async_id: row.async_id }),
    ...(row.attempt === null ? {} : { attempt: row.attempt }),
  };
}
