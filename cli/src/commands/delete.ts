import { CancelledError, UsageError } from '../errors.ts';
import { createPainter } from '../format/color.ts';
import { functionRef, printLines } from './common.ts';
import type { CommandContext } from './spec.ts';

export async function run(ctx: CommandContext): Promise<number> {
  const ref = functionRef(ctx);
  const client = await ctx.client();
  const fn = await client.getFunction(ref);
  if (ctx.options.yes !== true) {
    if (ctx.io.stdin.isTTY !== true) {
      throw new UsageError(`refusing to delete ${fn.name} without confirmation: stdin is not a terminal`, { hint: 'pass --yes to delete without asking' });
    }
    const { createInterface } = await import('node:readline/promises');
    const rl = createInterface({ input: ctx.io.stdin, output: ctx.io.stderr });
    let answer: string;
    try {
      answer = await rl.question(`Delete function ${fn.name} (${fn.function_id}) and all its execution logs? [y/N] `);
    } finally {
      rl.close();
    }
    if (!/^y(es)?$/i.test(answer.trim())) throw new CancelledError(`not deleted: ${fn.name} is unchanged`);
  }
  await client.deleteFunction(fn.function_id);
  printLines(ctx, [`${createPainter(ctx.color).green('✓')} Deleted function ${fn.name} (${fn.function_id})`]);
  return 0;
}
