import { validateCron } from '@fnhost/core/cron.ts';
import { validateFunctionName } from '@fnhost/core/validation.ts';
import { UsageError } from '../errors.ts';
import type { CreateFunctionBody } from '../api/types.ts';
import { createPainter } from '../format/color.ts';
import { invocationUrl } from '../format/function.ts';
import { asUsage, printJson, printLines, stringOption } from './common.ts';
import { codeBody } from './code-ref.ts';
import { parseSettings, readCode } from './settings.ts';
import type { CommandContext } from './spec.ts';

export async function run(ctx: CommandContext): Promise<number> {
  const name = asUsage(() => validateFunctionName(ctx.args[0]));
  const code = await readCode(ctx);
  const settings = parseSettings(ctx);
  const cron = stringOption(ctx, 'cron');
  const timezone = stringOption(ctx, 'timezone');
  let schedule: CreateFunctionBody['schedule'];
  if (cron !== undefined) {
    schedule = { cron: asUsage(() => validateCron(cron, timezone ?? 'UTC')), ...(timezone ? { timezone } : {}) };
  } else if (timezone !== undefined) {
    throw new UsageError('--timezone goes with --cron');
  }
  const client = await ctx.client();
  const body: CreateFunctionBody = { name, ...(await codeBody(ctx, client, code)), ...settings, ...(schedule === undefined ? {} : { schedule }) };
  const fn = await client.createFunction(body, { allowLoadError: ctx.options['allow-load-error'] === true });
  if (ctx.output === 'json') {
    printJson(ctx, fn);
    return 0;
  }
  const paint = createPainter(ctx.color);
  printLines(ctx, [`${paint.green('✓')} Created function ${fn.name} (${fn.function_id})`, `Invocation URL: ${invocationUrl(fn, client.url)}`]);
  return 0;
}
