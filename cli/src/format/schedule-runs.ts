import type { ScheduleRun } from '@fnhost/core/schedule-ledger.ts';
import type { ScheduleRuns } from '../api/types.ts';
import type { Painter } from './color.ts';
import { statusCell, statusKind } from './logs-table.ts';
import { padEnd } from './text.ts';
import { formatDateTimeInZone } from './time.ts';

// function:schedule:runs: the ledger of scheduled runs as a table, newest
// planned first, under the next planned runs. Times are read in the
// schedule's own zone (as function:get shows the next run), named once in the
// heading; --output json keeps the API's UTC times.

const MISSED_TEXT: Record<NonNullable<ScheduleRun['missed_reason']>, string> = {
  platform_down: 'missed: the platform was down',
  function_inactive: 'missed: the function was inactive',
  previous_running: 'missed: the previous run was still going',
};

/** `2030-01-01 10:01:00` in `zone`, without the zone's name (the heading names it). */
function inZone(iso: string, zone: string): string {
  return formatDateTimeInZone(iso, zone).slice(0, 19);
}

/** `1.2s`, `350ms`: a lag or duration short enough for a column. */
export function shortDuration(ms: number): string {
  if (Math.abs(ms) < 1000) return `${ms}ms`;
  if (Math.abs(ms) < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  return `${(ms / 60_000).toFixed(1)}m`;
}

function outcomeCell(run: ScheduleRun, paint: Painter): string {
  if (run.outcome === 'missed') return paint.yellow(run.missed_reason === null ? 'missed' : MISSED_TEXT[run.missed_reason]);
  const status = statusCell(run.status_code!);
  const kind = statusKind(run.status_code!);
  return kind === 'success' ? paint.green(status) : kind === 'error' ? paint.red(status) : paint.yellow(status);
}

export function scheduleRunsLines(ledger: ScheduleRuns, name: string, paint: Painter): string[] {
  const schedule = ledger.schedule;
  if (schedule === null) return [`${name} has no schedule (fnhost function:schedule:set ${name} --cron "<expr>")${ledger.runs.length > 0 ? '; earlier runs:' : ''}`, ...table(ledger.runs, 'UTC', paint)];
  const zone = schedule.timezone;
  const lines = [
    `${paint.bold('Schedule:')} ${schedule.cron} (${zone})${schedule.enabled ? '' : ', disabled'}; overlapping runs: ${ledger.concurrency_policy}; a run missed while down starts up to ${ledger.starting_deadline_seconds}s late`,
    `${paint.bold('Times in:')} ${zone} (the schedule's zone)`,
    `${paint.bold('Next:')}     ${ledger.next_runs.length === 0 ? '-' : ledger.next_runs.map((t) => inZone(t, zone)).join(', ')}`,
    '',
  ];
  if (ledger.runs.length === 0) return [...lines, paint.dim('No scheduled run yet.')];
  return [...lines, ...table(ledger.runs, zone, paint)];
}

function table(runs: ScheduleRun[], zone: string, paint: Painter): string[] {
  if (runs.length === 0) return [];
  const rows = runs.map((r) => [
    inZone(r.planned_at, zone) + (r.manual ? ' manual' : ''),
    r.lag_ms === null ? '-' : shortDuration(r.lag_ms),
    r.execution_time_ms === null ? '-' : `${r.execution_time_ms}ms`,
    r.log_id ?? '-',
  ]);
  const heads = ['PLANNED', 'LAG', 'DURATION', 'LOG'];
  const widths = heads.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => padEnd(c, widths[i]!)).join('  ');
  return [paint.bold(`${line(heads)}  OUTCOME`), ...rows.map((row, i) => `${line(row)}  ${outcomeCell(runs[i]!, paint)}`)];
}
