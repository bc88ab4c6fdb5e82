import { createElement as h } from 'react';
import { Box, Text } from 'ink';
import { DETAIL_KEYS } from '../format/logs-table.ts';

// One record opened from the pager (Enter): the lines of `function:logs --id`
// (format/log-detail.ts), a window of them when taller than the screen, and the key line.

export interface LogDetailViewProps {
  /** Already formatted (and painted) lines; undefined while loading. */
  lines: string[] | undefined;
  height: number;
  offset: number;
  error: string | undefined;
  color: boolean;
}

/** Lines of the detail view besides its text: the key line and one spare (Ink's frame must stay below the screen's height). */
export const DETAIL_CHROME_LINES = 2;

export function detailWindow(total: number, height: number, offset: number): { offset: number; size: number } {
  const size = Math.max(1, Math.min(total, height - DETAIL_CHROME_LINES));
  return { offset: Math.max(0, Math.min(offset, total - size)), size };
}

export function LogDetailView({ lines, height, offset, error, color }: LogDetailViewProps) {
  const shown = lines ?? [];
  const window = detailWindow(shown.length, height, offset);
  return h(
    Box,
    { flexDirection: 'column' },
    lines === undefined && error === undefined ? h(Text, null, 'loading…') : null,
    error !== undefined ? h(Text, color ? { color: 'red' } : {}, `error: ${error}`) : null,
    ...shown.slice(window.offset, window.offset + window.size).map((line, i) => h(Text, { key: i, wrap: 'truncate' }, line === '' ? ' ' : line)),
    h(Text, { dimColor: color, wrap: 'truncate' }, shown.length > window.size ? `${DETAIL_KEYS} · lines ${window.offset + 1}–${window.offset + window.size} of ${shown.length}` : DETAIL_KEYS),
  );
}
