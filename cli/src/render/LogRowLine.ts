import { createElement as h } from 'react';
import { Text } from 'ink';
import { HEADERS, type LogRow, type TableLayout } from '../format/logs-table.ts';
import { padEnd, padStart } from '../format/text.ts';

// One table line in Ink. Cells and widths come from format/logs-table.ts, the
// same as the piped output, so both show the same table.

const GAP = '  ';
const KIND_COLOR = { success: 'green', error: 'red', neutral: 'yellow' } as const;

export interface LogRowLineProps {
  row: LogRow;
  layout: TableLayout;
  color: boolean;
  /** The pager's selected row (Enter opens it): drawn inverse, which needs no colour. */
  selected?: boolean;
}

export function LogRowLine({ row, layout, color, selected = false }: LogRowLineProps) {
  return h(
    Text,
    { wrap: 'truncate', inverse: selected },
    padEnd(row.time, layout.time),
    GAP,
    h(Text, color ? { color: KIND_COLOR[row.kind] } : {}, padEnd(row.status, layout.status)),
    GAP,
    padStart(row.duration, layout.duration),
    GAP,
    row.error === '-' && color ? h(Text, { dimColor: true }, '-') : row.error,
  );
}

export function LogHeaderLine({ layout, color }: { layout: TableLayout; color: boolean }) {
  return h(
    Text,
    { bold: color, wrap: 'truncate' },
    padEnd(HEADERS.time, layout.time) + GAP + padEnd(HEADERS.status, layout.status) + GAP + padStart(HEADERS.duration, layout.duration) + GAP + HEADERS.error,
  );
}
