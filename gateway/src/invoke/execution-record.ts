import { isoTimestamp, type ExecutionLog } from '@fnhost/core';
import type { Exchange } from './exchange.ts';

// The one log record of an execution (docs/api-outline.md's ExecutionLog), built from its
// Exchange when it ends. This runs once per call on the invocation path, so it builds the
// object in one literal (no spreads of optional parts) and formats executed_at from a cached
// prefix: `new Date(ms).toISOString()` was the costliest part of the record (≈ 1 % of the
// gateway's busy time in a hello profile even with a one-entry cache, since at a thousand
// calls a second consecutive calls rarely share their millisecond), while the text up to the
// second ("2026-11-29T00:31:05") changes once a second: only the milliseconds are formatted
// per call.

let secondStart = Number.NaN;
let secondPrefix = '';
const MS_TEXT = Array.from({ length: 1000 }, (_, ms) => '.' + String(ms).padStart(3, '0') + 'Z');

/** isoTimestamp(ms), the same text, with the part up to the second remembered. */
export function cachedIsoTimestamp(ms: number): string {
  const sub = ms - secondStart;
  if (sub >= 0 && sub < 1000 && Number.isInteger(ms)) return secondPrefix + MS_TEXT[sub]!;
  const iso = isoTimestamp(ms);
  // Only a whole millisecond in the range toISOString prints as YYYY-MM-DDTHH:MM:SS.mmmZ is cached.
  if (Number.isInteger(ms) && iso.length === 24) {
    secondStart = ms - (((ms % 1000) + 1000) % 1000);
    secondPrefix = iso.slice(0, 19);
  }
  return iso;
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
