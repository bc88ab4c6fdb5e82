import { createElement as h } from 'react';
import { Box, Text } from 'ink';
import type { LogPage, StatusFilter } from '@fnhost/core/model.ts';
import { emptyLine, pagerFooterLine, pagerKeysLine, rowWindow, titleLine, toRows } from '../format/logs-table.ts';
import { LogHeaderLine, LogRowLine } from './LogRowLine.ts';

// The interactive log table: title, header, rows, footer and the key line.
// Presentational only: the page, the filter and the state come in as props.

export interface LogsPagerViewProps {
  fn: { name: string; function_id: string };
  status: StatusFilter;
  page: LogPage;
  width: number;
  /** Screen rows: a page taller than the screen shows a window of rows from `offset`. */
  height: number;
  offset: number;
  /** The selected row's index in the page (Enter opens it); shown inverse. */
  selected: number;
  loading: boolean;
  error: string | undefined;
  color: boolean;
}

export function LogsPagerView({ fn, status, page, width, height, offset, selected, loading, error, color }: LogsPagerViewProps) {
  const { layout, rows } = toRows(page.logs, width);
  const window = rowWindow(rows.length, height, offset);
  const keys = pagerKeysLine(page.pagination, status, rows.length > 0);
  return h(
    Box,
    { flexDirection: 'column' },
    h(Text, { bold: color, wrap: 'truncate' }, titleLine(fn, status)),
    h(LogHeaderLine, { layout, color }),
    rows.length === 0 ? h(Text, { dimColor: color }, emptyLine(page.pagination)) : null,
    ...rows.slice(window.offset, window.offset + window.size).map((row, i) => h(LogRowLine, { key: row.id, row, layout, color, selected: window.offset + i === selected })),
    h(Text, { wrap: 'truncate' }, pagerFooterLine(page.pagination, window)),
    h(
      Text,
      { wrap: 'truncate' },
      h(Text, { dimColor: color }, keys),
      loading ? h(Text, null, '  loading…') : null,
      error !== undefined ? h(Text, color ? { color: 'red' } : {}, `  error: ${error}`) : null,
    ),
  );
}
