import type { ExecutionLog, Trigger } from '../../model.ts';
import type { StatusClass } from './counts.ts';

// An execution record as a logs document, and back: shared by the log store and the stores that
// keep things beside a record (its exchange, its console output), which logs.ts itself calls.
// A file of its own so that they need not import logs.ts.

export interface LogDoc {
  _id: string;
  function_id: string;
  executed_at: Date;
  /** executed_at floored to the minute (ms): the bucket it is counted in. */
  minute: number;
  seq: number;
  cls: StatusClass;
  status_code: number;
  execution_time_ms: number;
  error_message: string | null;
  /** Only when the record has one (ExecutionLog.error_stack). */
  error_stack?: string;
  trigger: Trigger;
  /** ExecutionLog.cold_start and wait_ms, when the gateway gave them. */
  cold_start?: boolean;
  wait_ms?: number;
  /** Only on a schedule run fired by hand (ExecutionLog.manual). */
  manual?: true;
  /** Only on an async attempt (ExecutionLog.async_id, attempt). */
  async_id?: string;
  attempt?: number;
  expireAt?: Date;
}

export function toLog(doc: LogDoc): ExecutionLog {
  return {
    id: doc._id,
    function_id: doc.function_id,
    status_code: doc.status_code,
    execution_time_ms: doc.execution_time_ms,
    error_message: doc.error_message,
    ...(doc.error_stack === undefined ? {} : { error_stack: doc.error_stack }),
    executed_at: doc.executed_at.toISOString(),
    trigger: doc.trigger,
    ...(doc.cold_start === undefined ? {} : { cold_start: doc.cold_start }),
    ...(doc.wait_ms === undefined ? {} : { wait_ms: doc.wait_ms }),
    ...(doc.manual === true ? { manual: true as const } : {}),
    ...(doc.async_id === undefined ? {} : { async_id: doc.async_id }),
    ...(doc.attempt === undefined ? {} : { attempt: doc.attempt }),
  };
}
