import { createPainter } from '../format/color.ts';
import { logDetailLines } from '../format/log-detail.ts';
import { UsageError } from '../errors.ts';
import { printJson, printLines } from './common.ts';
import type { CommandContext } from './spec.ts';

// function:logs <fn> --id <log-id>: one record's fields, then its console output
// (GET /api/v1/functions/{ref}/logs/{id}); --output json prints that object.

const LOG_ID = /^log_[A-Za-z0-9_-]{1,64}$/;

export async function runLogDetail(ctx: CommandContext, ref: string, logId: string): Promise<number> {
  if (!LOG_ID.test(logId)) throw new UsageError(`--id must be an execution log id (log_ followed by letters, digits, _ or -), got ${JSON.stringify(logId.slice(0, 80))}`);
  for (const other of ['status', 'limit', 'page', 'follow', 'interval', 'stack']) {
    if (ctx.options[other] !== undefined) throw new UsageError(`--${other} does not go with --id: it shows one record`);
  }
  const client = await ctx.client();
  const detail = await client.getLog(ref, logId);
  if (ctx.output === 'json') printJson(ctx, detail);
  else printLines(ctx, logDetailLines(detail, ref, createPainter(ctx.color)));
  return 0;
}
