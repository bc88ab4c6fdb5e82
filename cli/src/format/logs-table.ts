import type { ExecutionLog, Pagination, StatusFilter } from '@fnhost/core/model.ts';
import type { Painter } from './color.ts';
import { oneLine, padEnd, padStart, truncate } from './text.ts';
import { formatLocalDateTime, localZone } from './time.ts';

// The log table, shared by the piped output and the Ink view: this module
// decides the cells and the column widths; the callers only paint them.

/** Width assumed when stdout is not a terminal (or the terminal does not say). */
export const DEFAULT_WIDTH = 80;
/** Below this many columns the Error column would be useless; lines then overflow instead. */
const MIN_ERROR_WIDTH = 10;
const GAP = '  ';

export type StatusKind = 'success' | 'error' | 'neutral';

export interface LogRow {
  id: string;
  time: string;
  kind: StatusKind;
  /** Marker and code, e.g. `✓ 200`. */
  status: string;
  duration: string;
  /** Already shortened to the column; `-` when the record has no error. */
  error: string;
}

export interface TableLayout {
  time: number;
  status: number;
  duration: number;
  error: number;
}

export const HEADERS = { time: 'Time', status: 'Status', duration: 'Duration', error: 'Error' } as const;

/**
 * The spec's classes: 2xx success (✓), 400 and above error (✗). 1xx and 3xx
 * are neither, so they get a neutral marker (•) rather than a misleading one.
 */
export function statusKind(code: number): StatusKind {
  if (code >= 200 && code < 300) return 'success';
  if (code >= 400) return 'error';
  return 'neutral';
}

const MARKERS: Record<StatusKind, string> = { success: '✓', error: '✗', neutral: '•' };

export function statusCell(code: number): string {
  return `${MARKERS[statusKind(code)]} ${code}`;
}

export function durationCell(ms: number): string {
  return `${ms}ms`;
}

/** Fixed columns sized to their content; the Error column gets what is left of `width`. */
export function layoutFor(logs: readonly ExecutionLog[], width: number): TableLayout {
  const time = Math.max(HEADERS.time.length, 19);
  let status = HEADERS.status.length;
  let duration = HEADERS.duration.length;
  for (const log of logs) {
    status = Math.max(status, statusCell(log.status_code).length);
    duration = Math.max(duration, durationCell(log.execution_time_ms).length);
  }
  const fixed = time + status + duration + GAP.length * 3;
  return { time, status, duration, error: Math.max(MIN_ERROR_WIDTH, width - fixed) };
}

export function toRow(log: ExecutionLog, layout: TableLayout): LogRow {
  const message = log.error_message === null || log.error_message === '' ? null : oneLine(log.error_message);
  return {
    id: log.id,
    time: formatLocalDateTime(log.executed_at),
    kind: statusKind(log.status_code),
    status: statusCell(log.status_code),
    duration: durationCell(log.execution_time_ms),
    error: message === null || message === '' ? '-' : truncate(message, layout.error),
  };
}

export function toRows(logs: readonly ExecutionLog[], width: number): { layout: TableLayout; rows: LogRow[] } {
  const layout = layoutFor(logs, width);
  return { layout, rows: logs.map((log) => toRow(log, layout)) };
}

export function paintStatus(row: LogRow, paint: Painter): string {
  if (row.kind === 'success') return paint.green(row.status);
  if (row.kind === 'error') return paint.red(row.status);
  return paint.yellow(row.status);
}

export function headerLine(layout: TableLayout, paint: Painter): string {
  return paint.bold(
    padEnd(HEADERS.time, layout.time) + GAP + padEnd(HEADERS.status, layout.status) + GAP +
      padStart(HEADERS.duration, layout.duration) + GAP + HEADERS.error,
  );
}

export function rowLine(row: LogRow, layout: TableLayout, paint: Painter): string {
  // Padding is computed on the plain text, then the status is painted.
  const status = paintStatus(row, paint) + ' '.repeat(Math.max(0, layout.status - row.status.length));
  const error = row.error === '-' ? paint.dim('-') : row.error;
  return padEnd(row.time, layout.time) + GAP + status + GAP + padStart(row.duration, layout.duration) + GAP + error;
}

/**
 * The spec's header line announcing the logs; it names the zone of the Time
 * column (the viewer's), since the column itself has no room for it.
 */
export function titleLine(fn: { name: string; function_id: string }, status: StatusFilter, options: { following?: boolean } = {}): string {
  const parts = [`Execution logs for ${oneLine(fn.name)} (${fn.function_id})`];
  if (status !== 'all') parts.push(`status ${status}`);
  if (options.following === true) parts.push('following');
  return `${parts.join(', ')}; times in ${localZone()}`;
}

/** The spec's footer. */
export function footerLine(p: Pagination): string {
  return `Page ${p.currentPage} of ${p.totalPages} (${p.totalCount} total)`;
}

/** What the table shows instead of rows: nothing at all, or a page past the end. */
export function emptyLine(p: Pagination): string {
  return p.totalCount === 0 ? '(no executions)' : `(no executions on page ${p.currentPage}; the last page is ${p.totalPages})`;
}

/** The interactive pager's key line; `selectable`: the page has rows, which ↑/↓ select and Enter opens. */
export function pagerKeysLine(p: Pagination, status: StatusFilter, selectable = false): string {
  return [
    p.hasPrevPage || p.hasNextPage ? '←/→ or p/n page' : undefined,
    selectable ? '↑/↓ select · Enter open' : undefined,
    `s status: ${status}`,
    'r reload',
    'q quit',
  ].filter(Boolean).join(' · ');
}

/**
 * Lines of the pager besides the rows (title, header, footer, keys) plus one
 * spare: Ink's frame must stay below the screen's height, or Ink clears the
 * whole terminal (scrollback included) on every redraw.
 */
export const PAGER_CHROME_LINES = 5;

/** Which of a page's rows the pager shows: all when they fit, else a window that follows the selected row. */
export interface RowWindow {
  offset: number;
  size: number;
  total: number;
}

export function rowWindow(total: number, screenRows: number, offset: number): RowWindow {
  const size = Math.max(1, Math.min(total, screenRows - PAGER_CHROME_LINES));
  return { offset: Math.max(0, Math.min(offset, total - size)), size, total };
}

/** The window's offset after the selection moved to `selected`: unchanged while the row is on screen, else just enough to show it. */
export function followSelection(window: RowWindow, selected: number): number {
  if (selected < window.offset) return selected;
  if (selected >= window.offset + window.size) return selected - window.size + 1;
  return window.offset;
}

/** The log detail view's key line (the pager's Enter). */
export const DETAIL_KEYS = '↑/↓ scroll · Esc/Enter back to the table · q quit';

/** The spec's footer, plus which rows are on screen when the page does not fit. */
export function pagerFooterLine(p: Pagination, window: RowWindow): string {
  const base = footerLine(p);
  return window.size < window.total ? `${base} · rows ${window.offset + 1}–${window.offset + window.size} of ${window.total}` : base;
}

/** The whole table as lines, for the piped path (and the first frame of the terminal path). */
/**
 * `--stack`: under an error's row, its whole message and its stack as the runtime mapped it to the
 * user's sources (ExecutionLog.error_stack), indented; nothing for a record without a stack.
 */
export function stackLines(log: ExecutionLog, paint: Painter): string[] {
  if (log.error_stack === undefined || log.error_stack === '') return [];
  const lines = log.error_message === null ? [] : [`    ${oneLine(log.error_message)}`];
  for (const frame of log.error_stack.split('\n')) lines.push(paint.dim(`      ${oneLine(frame)}`));
  return lines;
}

export function renderLogTable(
  fn: { name: string; function_id: string },
  status: StatusFilter,
  page: { logs: readonly ExecutionLog[]; pagination: Pagination },
  width: number,
  paint: Painter,
  options: { stacks?: boolean } = {},
): string[] {
  const { layout, rows } = toRows(page.logs, width);
  const lines = [paint.bold(titleLine(fn, status)), headerLine(layout, paint)];
  if (rows.length === 0) lines.push(paint.dim(emptyLine(page.pagination)));
  rows.forEach((row, i) => {
    lines.push(rowLine(row, layout, paint));
    if (options.stacks === true) lines.push(...stackLines(page.logs[i]!, paint));
  });
  lines.push(footerLine(page.pagination));
  return lines;
}
