import { validateCron, validateTimezone } from '@fnhost/core/cron.ts';
import { UsageError } from '../errors.ts';
import { createPainter } from '../format/color.ts';
import { scheduleText } from '../format/function.ts';
import { asUsage, functionRef, printJson, printLines, stringOption } from './common.ts';
import type { CommandContext } from './spec.ts';

export async function setSchedule(ctx: CommandContext): Promise<number> {
  const ref = functionRef(ctx);
  const cron = stringOption(ctx, 'cron');
  const timezone = stringOption(ctx, 'timezone');
  if (cron === undefined) throw new UsageError('function:schedule:set needs --cron "<expr>"', { hint: 'five fields: minute hour day-of-month month day-of-week, e.g. --cron "0 * * * *"' });
  if (timezone !== undefined) asUsage(() => validateTimezone(timezone));
  const expression = asUsage(() => validateCron(cron, timezone ?? 'UTC'));
  const client = await ctx.client();
  const fn = await client.setSchedule(ref, { cron: expression, ...(timezone ? { timezone } : {}) });
  if (ctx.output === 'json') printJson(ctx, fn);
  else printLines(ctx, [`${createPainter(ctx.color).green('✓')} Schedule for ${fn.name}: ${scheduleText(fn.schedule)}`]);
  return 0;
}

export async function disableSchedule(ctx: CommandContext): Promise<number> {
  const ref = functionRef(ctx);
  const client = await ctx.client();
  const fn = await client.disableSchedule(ref);
  if (ctx.output === 'json') printJson(ctx, fn);
  else if (fn.schedule === null) printLines(ctx, [`${fn.name} has no schedule; nothing to disable`]);
  else printLines(ctx, [`${createPainter(ctx.color).green('✓')} Schedule for ${fn.name} disabled (kept: ${fn.schedule.cron} ${fn.schedule.timezone})`]);
  return 0;
}
