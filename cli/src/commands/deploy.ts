import { createPainter } from '../format/color.ts';
import { invocationUrl } from '../format/function.ts';
import { functionRef, printJson, printLines } from './common.ts';
import { parseSettings, readCode } from './settings.ts';
import type { CommandContext } from './spec.ts';

export async function run(ctx: CommandContext): Promise<number> {
  const ref = functionRef(ctx);
  const code = await readCode(ctx);
  const settings = parseSettings(ctx);
  const client = await ctx.client();
  const fn = await client.updateFunction(ref, { code, ...settings });
  if (ctx.output === 'json') {
    printJson(ctx, fn);
    return 0;
  }
  const paint = createPainter(ctx.color);
  printLines(ctx, [`${paint.green('✓')} Deployed new code to ${fn.name} (${fn.function_id})`, `Invocation URL: ${invocationUrl(fn, client.url)}`]);
  return 0;
}
