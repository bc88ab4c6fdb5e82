import { createPainter } from '../format/color.ts';
import { functionRef, printLines } from './common.ts';
import { confirmOrRefuse } from './confirm.ts';
import type { CommandContext } from './spec.ts';

export async function run(ctx: CommandContext): Promise<number> {
  const ref = functionRef(ctx);
  const client = await ctx.client();
  const fn = await client.getFunction(ref);
  await confirmOrRefuse(ctx, {
    question: `Delete function ${fn.name} (${fn.function_id}) and all its execution logs?`,
    refusal: `refusing to delete ${fn.name} without confirmation: stdin is not a terminal`,
    hint: 'pass --yes to delete without asking',
    cancelled: `not deleted: ${fn.name} is unchanged`,
  });
  await client.deleteFunction(fn.function_id);
  printLines(ctx, [`${createPainter(ctx.color).green('✓')} Deleted function ${fn.name} (${fn.function_id})`]);
  return 0;
}
