import { validateRetention } from '@fnhost/core/validation.ts';
import { UsageError } from '../errors.ts';
import { createPainter } from '../format/color.ts';
import { retentionText } from '../format/function.ts';
import { MAX_RETENTION_COUNT, MAX_RETENTION_DAYS } from '@fnhost/core/limits.ts';
import { asUsage, functionRef, intOption, printJson, printLines, stringOption } from './common.ts';
import type { CommandContext } from './spec.ts';

export async function run(ctx: CommandContext): Promise<number> {
  const ref = functionRef(ctx);
  const type = stringOption(ctx, 'type');
  const days = stringOption(ctx, 'days');
  const count = stringOption(ctx, 'count');
  if (type === undefined) throw new UsageError('function:retention:set needs --type time|count|none', { hint: 'for example: --type time --days 7' });
  checkRetentionFlags(type, days, count);
  const policy = asUsage(() =>
    validateRetention({ type, days: intOption(ctx, 'days', MAX_RETENTION_DAYS), count: intOption(ctx, 'count', MAX_RETENTION_COUNT) }),
  );
  const client = await ctx.client();
  const fn = await client.setRetention(ref, policy);
  if (ctx.output === 'json') printJson(ctx, fn);
  else printLines(ctx, [`${createPainter(ctx.color).green('✓')} Retention for ${fn.name}: ${retentionText(fn.retention)}`]);
  return 0;
}

/** The flag combinations, in the words of the flags (core's messages speak of the API's fields). */
export function checkRetentionFlags(type: string, days: string | undefined, count: string | undefined): void {
  switch (type) {
    case 'time':
      if (count !== undefined) throw new UsageError('--count goes with --type count; --type time takes --days');
      if (days === undefined) throw new UsageError('--type time needs --days <int>: how many days of logs to keep');
      return;
    case 'count':
      if (days !== undefined) throw new UsageError('--days goes with --type time; --type count takes --count');
      if (count === undefined) throw new UsageError('--type count needs --count <int>: how many of the newest logs to keep');
      return;
    case 'none':
      if (days !== undefined || count !== undefined) throw new UsageError('--type none keeps all logs and takes neither --days nor --count');
      return;
    default:
      throw new UsageError(`--type must be time, count or none, got ${JSON.stringify(type)}`);
  }
}
