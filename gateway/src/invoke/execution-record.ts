import { isoTimestamp, type ExecutionLog } from '@fnhost/core';
import type { Exchange } from './exchange.ts';

// The one log record of an execution (docs/api-outline.md's ExecutionLog), built from its
// Exchange when it ends. This runs once per call on the invocation path, so it builds the
// object in one literal (no spreads of optional parts) and formats executed_at through a
// one-entry cache: at thousands of calls a second, consecutive calls mostly share their
// millisecond, and `new Date(ms).toISOString()` is the costliest part of the record.

let lastMs = Number.NaN;
let lastIso = '';

/** isoTimestamp(ms), remembering the last millisecond formatted. */
export function cachedIsoTimestamp(ms: number): string {
  if (ms !== lastMs) {
    lastIso = isoTimestamp(ms);
    lastMs = ms;
  }
  return lastIso;
}

/** The record of `ex`, ended with statusCode after `ms` milliseconds. */
export function executionRecord(ex: Exchange, statusCode: number, errorMessage: string | null, ms: number): ExecutionLog {
  const log: ExecutionLog = {
    id: ex.logId,
    function_id: ex.fn.function_id,
    status_code: statusCode,
    execution_time_ms: ms,
    error_message: errorMessage,
    executed_at: cachedIsoTimestamp(ex.executedAt),
    trigger: ex.trigger,
    cold_start: ex.coldStart,
    wait_ms: Math.round(ex.waitMs),
  };
  // Optional fields only when they say something, as before (a stored or listed record has no `error_stack: undefined`).
  if (ex.errorStack !== undefined) log.error_stack = ex.errorStack;
  if (ex.scheduled?.plannedAt === null) log.manual = true;
  if (ex.async !== undefined) {
    log.async_id = ex.async.id;
    log.attempt = ex.async.attempt;
  }
  return log;
}
