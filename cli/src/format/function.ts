import type { RetentionPolicy } from '@fnhost/core/model.ts';
import type { FunctionScalingSettings } from '@fnhost/core/scaling.ts';
import type { ApiFunction, ApiSchedule } from '../api/types.ts';
import type { Painter } from './color.ts';
import { oneLine, padEnd } from './text.ts';
import { formatDateTimeInZone, formatLocalDateTimeWithZone } from './time.ts';

// Text shapes of a function record: the labelled lines of function:get and the
// one-line summaries other commands print.

export function retentionText(policy: RetentionPolicy): string {
  switch (policy.type) {
    case 'time':
      return `time (${policy.days} day${policy.days === 1 ? '' : 's'})`;
    case 'count':
      return `count (${policy.count} newest)`;
    default:
      return 'none (keep all)';
  }
}

/** `0 9 * * 1 (Europe/Paris)`: the expression and the zone its fields are read in. */
function cronText(schedule: ApiSchedule): string {
  return `${schedule.cron} (${schedule.timezone})`;
}

/** The next run is shown in the schedule's zone, named, so `0 9 * * *` reads 09:00 wherever the viewer is. */
export function scheduleText(schedule: ApiSchedule | null): string {
  if (schedule === null) return 'none';
  const base = cronText(schedule);
  if (!schedule.enabled) return `disabled (was ${base})`;
  return schedule.next_run_at ? `${base}, next run ${formatDateTimeInZone(schedule.next_run_at, schedule.timezone)}` : base;
}

/** `Available (generation 4)`, or what is still pending: the operator's own words. */
export function rolloutText(r: NonNullable<ApiFunction['rollout']>): string {
  if (r.observed_generation < r.generation) return `pending: the operator has not acted on generation ${r.generation} yet`;
  const state = r.ready === 'True' ? 'ready' : r.ready === 'False' ? 'not ready' : 'unknown';
  return `${state}, ${r.reason || 'no reason'} (generation ${r.generation})${r.ready === 'True' ? '' : `: ${oneLine(r.message)}`}`;
}

export function invocationUrl(fn: ApiFunction, serverUrl: string): string {
  return fn.invocation_url || `${serverUrl}/invoke/${fn.function_id}`;
}

/** `on (bodies up to 65536 bytes; masked: x-card-token, $.card.number)` or `off`. */
export function recordingText(recording: ApiFunction['record_requests']): string {
  if (recording === undefined || !recording.enabled) return 'off';
  const masked = [...recording.redact.headers, ...recording.redact.json_paths];
  return oneLine(`on (bodies up to ${recording.max_body_bytes} bytes; ${masked.length === 0 ? 'nothing masked' : `masked: ${masked.join(', ')}`})`);
}

/** `1.2 MiB`: bytes as people read them (binary units, as the quota flags take them). */
export function byteSize(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v >= 100 ? Math.round(v) : v.toFixed(1).replace(/\.0$/, '')} ${units[i]}`;
}

/** `12 keys of 100000, 1.2 MiB of 100 MiB (1%)`, and the namespace's total when one is set. */
export function kvUsageText(kv: NonNullable<ApiFunction['kv']>): string {
  const pct = kv.max_bytes > 0 ? Math.floor((100 * kv.bytes) / kv.max_bytes) : 0;
  const ns = kv.namespace_max_bytes === undefined ? '' : `; namespace ${byteSize(kv.namespace_bytes ?? 0)} of ${byteSize(kv.namespace_max_bytes)}`;
  return `${kv.keys} key${kv.keys === 1 ? '' : 's'} of ${kv.max_keys}, ${byteSize(kv.bytes)} of ${byteSize(kv.max_bytes)} (${pct}%)${ns}`;
}

/** Pods, autoscaling, scale to zero and CPU in one line (cluster mode). */
export function scalingText(s: FunctionScalingSettings): string {
  const pods = s.autoscale === null ? `${s.replicas} pod${s.replicas === 1 ? '' : 's'}` : `autoscale ${s.autoscale.min_replicas}-${s.autoscale.max_replicas} pods at ${s.autoscale.target_concurrency} calls in flight each`;
  const zero = s.scale_to_zero !== null ? `, to zero after ${s.scale_to_zero.idle_seconds}s idle` : s.autoscale?.min_replicas === 0 ? ', to zero when idle' : '';
  const cpu = s.cpu.request === null && s.cpu.limit === null ? '' : `, cpu ${s.cpu.request ?? 'default'}/${s.cpu.limit ?? 'default'} (request/limit)`;
  return pods + zero + cpu;
}

/** function:get: one labelled line per field, labels aligned. */
export function functionDetails(fn: ApiFunction, serverUrl: string, paint: Painter, extra: Array<[string, string]> = []): string[] {
  const fields: Array<[string, string]> = [
    ['ID', fn.function_id],
    ['Name', oneLine(fn.name)],
    ['Active', fn.active ? paint.green('yes') : paint.red('no')],
    ['Invocation URL', invocationUrl(fn, serverUrl)],
    ['Total Executions', String(fn.total_executions)],
    ['Retention', retentionText(fn.retention)],
    ['Schedule', scheduleText(fn.schedule)],
    ['Timeout', `${fn.timeout_seconds}s`],
    ['Memory', `${fn.memory_mib} MiB`],
    ['Code', codeText(fn)],
    ...(fn.scaling === undefined ? [] : [['Scaling', scalingText(fn.scaling)] as [string, string]]),
    ['Routes', fn.routes.length > 0 ? fn.routes.join(', ') : '-'],
    ['Env', Object.keys(fn.env).length > 0 ? Object.keys(fn.env).sort().join(', ') : '-'],
    ...(fn.rollout === undefined ? [] : [['Namespace', oneLine(fn.namespace)] as [string, string], ['Rollout', rolloutText(fn.rollout)] as [string, string]]),
    ['Record Requests', recordingText(fn.record_requests)],
    ...(fn.kv === undefined ? [] : [['KV', kvUsageText(fn.kv)] as [string, string]]),
    ['Created', formatLocalDateTimeWithZone(fn.created_at)],
    ['Updated', formatLocalDateTimeWithZone(fn.updated_at)],
    ...extra,
  ];
  const width = Math.max(...fields.map(([label]) => label.length)) + 1;
  return fields.map(([label, value]) => `${paint.bold(padEnd(label + ':', width))} ${value}`);
}

/** Whether the code is inline (its bytes) or held by digest (the digest and size). */
export function codeText(fn: Pick<ApiFunction, 'code' | 'code_ref'>): string {
  if (fn.code_ref !== undefined) return `by reference ${fn.code_ref.digest} (${fn.code_ref.size} bytes)`;
  if (fn.code !== undefined) return `inline (${Buffer.byteLength(fn.code)} bytes)`;
  return '-';
}

/** function:list: a table of name, id, state, schedule and executions; with `allNamespaces` (-A) a Namespace column first, sorted by namespace then name. */
export function functionList(functions: readonly ApiFunction[], paint: Painter, options: { allNamespaces?: boolean } = {}): string[] {
  if (functions.length === 0) return [paint.dim(options.allNamespaces ? '(no functions in any namespace you may list)' : '(no functions; create one with fnhost function:create <name> --file <path>)')];
  const all = options.allNamespaces === true;
  const sorted = all ? [...functions].sort((a, b) => (a.namespace === b.namespace ? (a.name < b.name ? -1 : a.name > b.name ? 1 : 0) : a.namespace < b.namespace ? -1 : 1)) : functions;
  const header = [...(all ? ['Namespace'] : []), 'Name', 'ID', 'Active', 'Executions', 'Schedule'];
  const rows = sorted.map((fn) => [
    ...(all ? [oneLine(fn.namespace)] : []),
    oneLine(fn.name),
    fn.function_id,
    fn.active ? 'yes' : 'no',
    String(fn.total_executions),
    fn.schedule === null ? '-' : fn.schedule.enabled ? cronText(fn.schedule) : `disabled (${cronText(fn.schedule)})`,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : padEnd(c, widths[i]!))).join('  ');
  return [paint.bold(line(header)), ...rows.map(line)];
}
