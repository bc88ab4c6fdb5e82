import { createPainter } from '../format/color.ts';
import { functionDetails } from '../format/function.ts';
import { functionRef, printJson, printLines } from './common.ts';
import type { CommandContext } from './spec.ts';

export async function run(ctx: CommandContext): Promise<number> {
  const ref = functionRef(ctx);
  const client = await ctx.client();
  const fn = await client.getFunction(ref);
  if (ctx.output === 'json') printJson(ctx, fn);
  else printLines(ctx, functionDetails(fn, client.url, createPainter(ctx.color)));
  return 0;
}
