import { MAX_TIMEOUT_SECONDS } from '@fnhost/core/limits.ts';
import { MAX_LEDGER_PAGE } from '@fnhost/core/schedule-ledger.ts';
import { createPainter } from '../format/color.ts';
import { scheduleRunsLines } from '../format/schedule-runs.ts';
import { formatTestResult } from './test.ts';
import { functionRef, intOption, printJson, printLines } from './common.ts';
import type { CommandContext } from './spec.ts';

// function:schedule:runs shows the ledger of scheduled runs; function:schedule:run
// fires the schedule now (the request a scheduled run sends, recorded as a
// manual schedule run). A 5xx answer fails the run: exit 1, as function:test.

const DEFAULT_LIMIT = 20;

export async function listRuns(ctx: CommandContext): Promise<number> {
  const ref = functionRef(ctx);
  const limit = intOption(ctx, 'limit', MAX_LEDGER_PAGE) ?? DEFAULT_LIMIT;
  const client = await ctx.client();
  const ledger = await client.scheduleRuns(ref, limit);
  if (ctx.output === 'json') printJson(ctx, ledger);
  else printLines(ctx, scheduleRunsLines(ledger, ref, createPainter(ctx.color)));
  return 0;
}

export async function runNow(ctx: CommandContext): Promise<number> {
  const ref = functionRef(ctx);
  // The platform's longest time limit plus a margin: the server ends the run, not the CLI.
  const client = await ctx.client((MAX_TIMEOUT_SECONDS + 30) * 1000);
  const result = await client.runSchedule(ref);
  if (ctx.output === 'json') printJson(ctx, result);
  else printLines(ctx, ['Fired the schedule by hand (recorded as a manual schedule run).', ...formatTestResult(result, createPainter(ctx.color))]);
  return result.status_code >= 500 ? 1 : 0;
}
