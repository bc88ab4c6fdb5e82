import { createPainter } from '../format/color.ts';
import { functionDetails } from '../format/function.ts';
import { functionRef, printJson, printLines } from './common.ts';
import type { CommandContext } from './spec.ts';

export async function run(ctx: CommandContext): Promise<number> {
  const ref = functionRef(ctx);
  const client = await ctx.client();
  const [fn, info] = await Promise.all([client.getFunction(ref), ctx.output === 'json' ? undefined : client.serverInfo()]);
  if (ctx.output === 'json') printJson(ctx, fn);
  else printLines(ctx, functionDetails(fn, client.url, createPainter(ctx.color)));
  // On stderr, so the labelled lines stay what scripts read: a gateway that cannot sandbox says so (docs/sandbox.md).
  if (info?.sandbox?.enabled === false) ctx.io.stderr.write(`warning: ${info.sandbox.warning ?? 'functions on this gateway run without a sandbox'}\n`);
  return 0;
}
