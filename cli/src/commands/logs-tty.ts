import { createElement as h, useCallback, useEffect, useState } from 'react';
import { render, useApp, useInput, useWindowSize } from 'ink';
import type { LogPage, LogQuery } from '@fnhost/core/model.ts';
import type { ApiClient } from '../api/client.ts';
import type { ApiFunction } from '../api/types.ts';
import { LogFollower } from '../api/follow.ts';
import { useLogFollow } from '../hooks/useLogFollow.ts';
import { useLogPager } from '../hooks/useLogPager.ts';
import { LogFollowView } from '../render/LogFollowView.ts';
import { LogsPagerView } from '../render/LogsPagerView.ts';
import { LogDetailView, detailWindow } from '../render/LogDetailView.ts';
import { followSelection, rowWindow } from '../format/logs-table.ts';
import { logDetailLines } from '../format/log-detail.ts';
import { createPainter } from '../format/color.ts';
import type { ExecutionDetail } from '@fnhost/core/insight.ts';
import type { CommandContext } from './spec.ts';

// The terminal paths of function:logs: wiring of keys, hooks and views.
// Loaded only when stdout and stdin are terminals.

interface PagerProps {
  fn: ApiFunction;
  load: (query: LogQuery) => Promise<LogPage>;
  /** One record with its console output (Enter). */
  open: (logId: string) => Promise<ExecutionDetail>;
  query: LogQuery;
  page: LogPage;
  color: boolean;
}

interface Opened {
  lines: string[] | undefined;
  error: string | undefined;
  offset: number;
}

function LogsPager({ fn, load, open, query, page, color }: PagerProps) {
  const pager = useLogPager(load, query, page);
  const { exit } = useApp();
  const { columns, rows } = useWindowSize();
  // The selected row, and the window of rows on screen when the page is taller than the
  // terminal (it follows the selection); a new page starts at its top.
  const [cursor, setCursor] = useState({ selected: 0, offset: 0 });
  useEffect(() => setCursor({ selected: 0, offset: 0 }), [pager.page]);
  // The record Enter opened, shown instead of the table until Esc.
  const [opened, setOpened] = useState<Opened | undefined>(undefined);
  const height = rows || 24;
  const select = (by: number) =>
    setCursor((c) => {
      const total = pager.page.logs.length;
      const selected = Math.max(0, Math.min(total - 1, c.selected + by));
      return { selected, offset: followSelection(rowWindow(total, height, c.offset), selected) };
    });
  const openSelected = () => {
    const log = pager.page.logs[cursor.selected];
    if (log === undefined) return;
    setOpened({ lines: undefined, error: undefined, offset: 0 });
    open(log.id).then(
      (detail) => setOpened((o) => (o === undefined ? o : { ...o, lines: logDetailLines(detail, fn.name, createPainter(color)) })),
      (err: unknown) => setOpened((o) => (o === undefined ? o : { ...o, error: err instanceof Error ? err.message : String(err) })),
    );
  };
  useInput((input, key) => {
    if (opened !== undefined) {
      if (input === 'q') exit();
      else if (key.escape || key.return || input === 'b') setOpened(undefined);
      else if (key.downArrow || input === 'j') setOpened({ ...opened, offset: detailWindow(opened.lines?.length ?? 0, height, opened.offset + 1).offset });
      else if (key.upArrow || input === 'k') setOpened({ ...opened, offset: detailWindow(opened.lines?.length ?? 0, height, opened.offset - 1).offset });
      return;
    }
    if (input === 'q' || key.escape) exit();
    else if (key.return) openSelected();
    else if (key.downArrow || input === 'j') select(1);
    else if (key.upArrow || input === 'k') select(-1);
    else if (input === 'n' || key.rightArrow || key.pageDown) pager.nextPage();
    else if (input === 'p' || key.leftArrow || key.pageUp) pager.prevPage();
    else if (input === 's') pager.cycleStatus();
    else if (input === 'r') pager.reload();
  });
  if (opened !== undefined) return h(LogDetailView, { lines: opened.lines, height, offset: opened.offset, error: opened.error, color });
  return h(LogsPagerView, {
    fn,
    status: pager.query.status,
    page: pager.page,
    width: columns || 80,
    height,
    offset: cursor.offset,
    selected: cursor.selected,
    loading: pager.loading,
    error: pager.error,
    color,
  });
}

interface FollowProps {
  fn: ApiFunction;
  follower: LogFollower;
  initial: LogPage['logs'];
  status: LogQuery['status'];
  intervalMs: number;
  color: boolean;
}

function LogsFollow({ fn, follower, initial, status, intervalMs, color }: FollowProps) {
  const poll = useCallback(() => follower.poll(), [follower]);
  const state = useLogFollow(initial, poll, intervalMs);
  const { exit } = useApp();
  const { columns } = useWindowSize();
  useInput((input, key) => {
    if (input === 'q' || key.escape) exit();
  });
  return h(LogFollowView, { fn, status, logs: state.logs, width: columns || 80, intervalMs, error: state.error, color });
}

function inkOptions(ctx: CommandContext) {
  return {
    stdout: ctx.io.stdout as NodeJS.WriteStream,
    stdin: ctx.io.stdin as NodeJS.ReadStream,
    stderr: ctx.io.stderr as NodeJS.WriteStream,
    exitOnCtrlC: true,
    patchConsole: false,
    // Ink turns itself non-interactive when it sees CI=true (is-in-ci): it would
    // then only print the last frame. This path runs only with both stdin and
    // stdout on a terminal, so it is interactive by construction.
    interactive: true,
  };
}

export async function runPager(ctx: CommandContext, client: ApiClient, fn: ApiFunction, query: LogQuery, page: LogPage, painted: number): Promise<number> {
  const load = (q: LogQuery) => client.listLogs(fn.function_id, q);
  const open = (logId: string) => client.getLog(fn.function_id, logId);
  // Erase the plain first frame (see paintFirstFrame in logs.ts); Ink draws the same lines at once.
  if (painted > 0) ctx.io.stdout.write(`\u001b[${painted}A\u001b[0J`);
  const app = render(h(LogsPager, { fn, load, open, query, page, color: ctx.color }), inkOptions(ctx));
  await app.waitUntilExit();
  return 0;
}

export async function runFollow(ctx: CommandContext, client: ApiClient, ref: string, query: LogQuery, intervalMs: number): Promise<number> {
  const fn = await client.getFunction(ref);
  const follower = new LogFollower((q) => client.listLogs(fn.function_id, q), query.status);
  const initial = await follower.start(query.limit);
  const app = render(h(LogsFollow, { fn, follower, initial, status: query.status, intervalMs, color: ctx.color }), inkOptions(ctx));
  await app.waitUntilExit();
  return 0;
}

