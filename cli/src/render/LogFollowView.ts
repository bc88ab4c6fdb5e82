import React, { createElement as h } from 'react';
import { Box, Static, Text } from 'ink';
import type { ExecutionLog, StatusFilter } from '@fnhost/core/model.ts';
import { layoutFor, titleLine, toRow } from '../format/logs-table.ts';
import { LogHeaderLine, LogRowLine } from './LogRowLine.ts';

// --follow on a terminal: finished lines go to <Static> (written once, never
// redrawn, so they scroll like any output); only the status line is live.

export interface LogFollowViewProps {
  fn: { name: string; function_id: string };
  status: StatusFilter;
  logs: readonly ExecutionLog[];
  width: number;
  intervalMs: number;
  error: string | undefined;
  color: boolean;
}

type Item = { key: string; kind: 'title' } | { key: string; kind: 'header' } | { key: string; kind: 'row'; log: ExecutionLog };

export function LogFollowView({ fn, status, logs, width, intervalMs, error, color }: LogFollowViewProps) {
  // Fixed widths: rows already printed cannot be re-aligned to later ones.
  const layout = layoutFor([], width);
  const items: Item[] = [{ key: 'title', kind: 'title' }, { key: 'header', kind: 'header' }, ...logs.map((log) => ({ key: log.id, kind: 'row' as const, log }))];
  return h(
    Box,
    { flexDirection: 'column' },
    h(Static as (props: { items: Item[]; children: (item: Item) => React.ReactNode }) => React.ReactNode, {
      items,
      children: (item: Item) =>
        item.kind === 'title'
          ? h(Text, { key: item.key, bold: color }, titleLine(fn, status))
          : item.kind === 'header'
            ? h(LogHeaderLine, { key: item.key, layout, color })
            : h(LogRowLine, { key: item.key, row: toRow(item.log, layout), layout, color }),
    }),
    h(
      Text,
      { wrap: 'truncate' },
      h(Text, { dimColor: color }, `following every ${intervalMs / 1000}s · ${logs.length} shown · q or Ctrl-C to stop`),
      error !== undefined ? h(Text, color ? { color: 'red' } : {}, `  error: ${error} (retrying)`) : null,
    ),
  );
}
