import { createPainter } from '../format/color.ts';
import { functionRef, printJson, printLines } from './common.ts';
import type { CommandContext } from './spec.ts';

async function change(ctx: CommandContext, active: boolean): Promise<number> {
  const ref = functionRef(ctx);
  const client = await ctx.client();
  const fn = active ? await client.activate(ref) : await client.deactivate(ref);
  if (ctx.output === 'json') {
    printJson(ctx, fn);
    return 0;
  }
  const paint = createPainter(ctx.color);
  printLines(ctx, [active ? `${paint.green('✓')} Function ${fn.name} is active` : `${paint.green('✓')} Function ${fn.name} is inactive: invocations answer 403 and scheduled runs are skipped`]);
  return 0;
}

export const activate = (ctx: CommandContext) => change(ctx, true);
export const deactivate = (ctx: CommandContext) => change(ctx, false);
