import { MAX_LOG_PAGE_LIMIT, DEFAULT_LOG_PAGE_LIMIT } from '@fnhost/core/limits.ts';
import type { LogPage, LogQuery, StatusFilter } from '@fnhost/core/model.ts';
import { validateStatusFilter } from '@fnhost/core/validation.ts';
import type { ApiClient } from '../api/client.ts';
import { UsageError } from '../errors.ts';
import { createPainter } from '../format/color.ts';
import {
  DEFAULT_WIDTH,
  PAGER_CHROME_LINES,
  emptyLine,
  headerLine,
  layoutFor,
  pagerFooterLine,
  pagerKeysLine,
  renderLogTable,
  rowLine,
  rowWindow,
  stackLines,
  titleLine,
  toRow,
  toRows,
} from '../format/logs-table.ts';
import { truncate } from '../format/text.ts';
import { functionRef, intOption, printLines, stringOption } from './common.ts';
import type { CommandContext } from './spec.ts';

// function:logs. With --id, one record and its console output (./log-detail.ts). Else four paths, chosen by where the output goes:
// - --output json: the spec's log list object, once (with --follow: one record per line);
// - piped (or no terminal for keys): the table, once (with --follow: new rows as they come);
// - stdout and stdin on a terminal: the interactive Ink pager (with --follow: Ink's <Static> rows).
// Ink and React load only on the last path (they cost ~300 ms to import).

export const DEFAULT_INTERVAL_SECONDS = 2;

export function parseInterval(raw: string | undefined): number {
  if (raw === undefined) return DEFAULT_INTERVAL_SECONDS * 1000;
  const seconds = Number(raw);
  if (!/^\s*\d*\.?\d+\s*$/.test(raw) || !Number.isFinite(seconds) || seconds < 0.1 || seconds > 3600) {
    throw new UsageError(`--interval must be a number of seconds from 0.1 to 3600, got ${JSON.stringify(raw)}`);
  }
  return Math.round(seconds * 1000);
}

export function parsePage(raw: string | undefined): number {
  if (raw === undefined) return 1;
  const page = /^\s*\d+\s*$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(page) || page < 1) throw new UsageError(`--page must be a positive integer, got ${JSON.stringify(raw)}`);
  return page;
}

export function parseStatus(raw: string | undefined): StatusFilter {
  try {
    return validateStatusFilter(raw);
  } catch (cause) {
    throw new UsageError(`--status must be success, error or all, got ${JSON.stringify(raw)}`, { cause });
  }
}

export async function run(ctx: CommandContext): Promise<number> {
  const ref = functionRef(ctx);
  const logId = stringOption(ctx, 'id');
  if (logId !== undefined) return (await import('./log-detail.ts')).runLogDetail(ctx, ref, logId);
  const query: LogQuery = {
    status: parseStatus(stringOption(ctx, 'status')),
    limit: intOption(ctx, 'limit', MAX_LOG_PAGE_LIMIT) ?? DEFAULT_LOG_PAGE_LIMIT,
    page: parsePage(stringOption(ctx, 'page')),
  };
  const follow = ctx.options.follow === true;
  const intervalMs = parseInterval(stringOption(ctx, 'interval'));
  if (!follow && stringOption(ctx, 'interval') !== undefined) throw new UsageError('--interval goes with --follow');
  if (follow && stringOption(ctx, 'page') !== undefined) throw new UsageError('--page does not go with --follow: following always starts from the newest records');
  const client = await ctx.client();

  if (ctx.output === 'json' && !follow) {
    const page = await client.listLogs(ref, query);
    ctx.io.stdout.write(JSON.stringify(page, null, 2) + '\n');
    return 0;
  }
  const { stdout, stdin, env } = ctx.io;
  // --stack prints the table once with each error's stack under its row, on a terminal too.
  const stacks = ctx.options.stack === true;
  const terminal = stdout.isTTY === true && stdin.isTTY === true && env.TERM !== 'dumb' && ctx.output !== 'json' && !stacks;
  if (terminal) {
    if (follow) return (await import('./logs-tty.ts')).runFollow(ctx, client, ref, query, intervalMs);
    // Ink and React take ~250 ms to import, and loading them holds the event
    // loop: read the data first, paint the first frame as plain text, then
    // load Ink and let it take over in place. The first page is read before Ink
    // starts, so a wrong name or token ends as a plain error line and exit code.
    const [fn, page] = await Promise.all([client.getFunction(ref), client.listLogs(ref, query)]);
    const painted = paintFirstFrame(ctx, fn, query.status, page);
    // Keys pressed while Ink loads are kept for it, not echoed over the table.
    if (painted > 0) stdin.setRawMode?.(true);
    const tty = import('./logs-tty.ts');
    return (await tty).runPager(ctx, client, fn, query, page, painted);
  }
  if (follow) return followPlain(ctx, client, ref, query, intervalMs);

  const [fn, page] = await Promise.all([client.getFunction(ref), client.listLogs(ref, query)]);
  const width = stdout.isTTY === true && stdout.columns ? stdout.columns : DEFAULT_WIDTH;
  printLines(ctx, renderLogTable(fn, query.status, page, width, createPainter(ctx.color), { stacks }));
  return 0;
}

/**
 * The pager's first frame as plain text, the same lines Ink will draw; returns
 * how many lines were written so Ink can erase them (0 when the frame would
 * not fit the screen and so could not be erased).
 */
function paintFirstFrame(ctx: CommandContext, fn: { name: string; function_id: string }, status: StatusFilter, page: LogPage): number {
  const stdout = ctx.io.stdout as typeof ctx.io.stdout & { rows?: number };
  if (!stdout.rows || stdout.rows <= PAGER_CHROME_LINES) return 0;
  const width = stdout.columns || DEFAULT_WIDTH;
  const paint = createPainter(ctx.color);
  const { layout, rows } = toRows(page.logs, width);
  const window = rowWindow(rows.length, stdout.rows, 0);
  const lines = [
    paint.bold(truncate(titleLine(fn, status), width)),
    headerLine(layout, paint),
    ...(rows.length === 0 ? [paint.dim(emptyLine(page.pagination))] : rows.slice(0, window.size).map((row) => rowLine(row, layout, paint))),
    truncate(pagerFooterLine(page.pagination, window), width),
    paint.dim(truncate(pagerKeysLine(page.pagination, status, rows.length > 0), width)),
  ];
  stdout.write(lines.join('\n') + '\n');
  return lines.length;
}

/** --follow without a terminal for keys: the table's rows (or JSON lines) as they arrive, until killed. */
async function followPlain(ctx: CommandContext, client: ApiClient, ref: string, query: LogQuery, intervalMs: number): Promise<number> {
  const { LogFollower } = await import('../api/follow.ts');
  const fn = await client.getFunction(ref);
  // Following by id keeps working if the function is renamed meanwhile.
  const follower = new LogFollower((q) => client.listLogs(fn.function_id, q), query.status);
  const json = ctx.output === 'json';
  const paint = createPainter(ctx.color);
  const width = ctx.io.stdout.isTTY === true && ctx.io.stdout.columns ? ctx.io.stdout.columns : DEFAULT_WIDTH;
  const layout = layoutFor([], width);
  const stacks = ctx.options.stack === true;
  const print = (logs: Awaited<ReturnType<typeof follower.poll>>) => {
    if (logs.length === 0) return;
    const lines = json ? logs.map((log) => JSON.stringify(log)) : logs.flatMap((log) => [rowLine(toRow(log, layout), layout, paint), ...(stacks ? stackLines(log, paint) : [])]);
    ctx.io.stdout.write(lines.join('\n') + '\n');
  };
  if (!json) printLines(ctx, [paint.bold(titleLine(fn, query.status, { following: true })), headerLine(layout, paint)]);
  print(await follower.start(query.limit));
  let failing: string | undefined;
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
    try {
      print(await follower.poll());
      if (failing !== undefined) ctx.io.stderr.write('fnhost: the server answers again; following\n');
      failing = undefined;
    } catch (err) {
      // A restarting server should not end a follow: say so once, keep polling.
      const message = err instanceof Error ? err.message : String(err);
      if (message !== failing) ctx.io.stderr.write(`warning: ${message}; retrying every ${intervalMs / 1000}s\n`);
      failing = message;
    }
  }
}
