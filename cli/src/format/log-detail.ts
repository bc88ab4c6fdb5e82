import type { ExecutionDetail, FunctionLatency, LatencySummary } from '@fnhost/core/insight.ts';
import type { Painter } from './color.ts';
import { statusCell, statusKind } from './logs-table.ts';
import { oneLine, padEnd, padStart } from './text.ts';
import { formatLocalDateTimeWithZone } from './time.ts';

// One execution as `function:logs <fn> --id <log-id>` prints it (and the pager's Enter): the
// record's fields as labelled lines, then its console output, one line per console line with its
// offset and stream. Also the latency lines of function:get.

function labelled(fields: Array<[string, string]>, paint: Painter): string[] {
  const width = Math.max(...fields.map(([label]) => label.length)) + 1;
  return fields.map(([label, value]) => `${paint.bold(padEnd(label + ':', width))} ${value}`);
}

export function logDetailLines(detail: ExecutionDetail, functionName: string, paint: Painter): string[] {
  const log = detail;
  const kind = statusKind(log.status_code);
  const status = kind === 'success' ? paint.green(statusCell(log.status_code)) : kind === 'error' ? paint.red(statusCell(log.status_code)) : statusCell(log.status_code);
  const fields: Array<[string, string]> = [
    ['Log ID', log.id],
    ['Function', `${oneLine(functionName)} (${log.function_id})`],
    ['Executed', formatLocalDateTimeWithZone(log.executed_at)],
    ['Trigger', log.trigger],
    ['Status', status],
    ['Duration', `${log.execution_time_ms}ms`],
    ['Cold start', log.cold_start === undefined ? '-' : log.cold_start ? `yes (waited ${log.wait_ms ?? 0}ms for a runtime)` : `no${log.wait_ms ? ` (waited ${log.wait_ms}ms)` : ''}`],
    ['Error', log.error_message === null ? '-' : oneLine(log.error_message)],
  ];
  const lines = labelled(fields, paint);
  if (log.error_stack !== undefined && log.error_stack !== '') {
    lines.push(paint.bold('Stack:'));
    for (const frame of log.error_stack.split('\n')) lines.push(paint.dim(`  ${oneLine(frame)}`));
  }
  lines.push('');
  lines.push(...consoleLines(detail, paint));
  return lines;
}

export function consoleLines(detail: ExecutionDetail, paint: Painter): string[] {
  const output = detail.console;
  if (output === null) return [paint.dim('(no console output recorded: the handler wrote none, capture is off, or it is still on its way)')];
  const dropped = output.dropped_lines > 0 ? `, ${output.dropped_lines} more dropped (${output.dropped_bytes} bytes) past the 1,000 lines / 64 KiB kept` : '';
  const lines = [paint.bold(`Console output (${output.lines.length} line${output.lines.length === 1 ? '' : 's'}${dropped}):`)];
  const offsetWidth = Math.max(4, ...output.lines.map((l) => String(l.at_ms).length + 3));
  for (const line of output.lines) {
    const where = padStart(`+${line.at_ms}ms`, offsetWidth);
    const stream = line.stream === 'stderr' ? paint.red('err') : paint.dim('out');
    // Control characters a handler printed are shown, not executed, on the viewer's terminal.
    lines.push(`${paint.dim(where)} ${stream} ${line.text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`)}`);
  }
  if (output.dropped_lines > 0) lines.push(paint.dim(`… ${output.dropped_lines} line${output.dropped_lines === 1 ? '' : 's'} (${output.dropped_bytes} bytes) dropped`));
  return lines;
}

function summaryText(s: LatencySummary): string {
  if (s.count === 0) return 'no executions';
  return `${s.count} execution${s.count === 1 ? '' : 's'}, p50 ${s.p50_ms}ms, p95 ${s.p95_ms}ms, p99 ${s.p99_ms}ms, ${s.cold_starts} cold start${s.cold_starts === 1 ? '' : 's'}`;
}

/** function:get's latency lines, labelled like its other fields. */
export function latencyFields(latency: FunctionLatency): Array<[string, string]> {
  return [
    ['Last Hour', summaryText(latency.last_hour)],
    ['Last Day', summaryText(latency.last_day)],
  ];
}
