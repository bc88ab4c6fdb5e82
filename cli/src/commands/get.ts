import { ApiNotFoundError } from '../api/errors.ts';
import { createPainter } from '../format/color.ts';
import { functionDetails } from '../format/function.ts';
import { latencyFields } from '../format/log-detail.ts';
import { functionRef, printJson, printLines } from './common.ts';
import type { CommandContext } from './spec.ts';

export async function run(ctx: CommandContext): Promise<number> {
  const ref = functionRef(ctx);
  const client = await ctx.client();
  const text = ctx.output !== 'json';
  // Latency in the labelled lines only: JSON stays the function record (GET .../latency has it for scripts).
  // A gateway from before GET .../latency (404) shows the rest.
  const [fn, info, latency] = await Promise.all([
    client.getFunction(ref),
    text ? client.serverInfo() : undefined,
    text ? client.latency(ref).catch((err: unknown) => (err instanceof ApiNotFoundError ? undefined : Promise.reject(err))) : undefined,
  ]);
  if (!text) printJson(ctx, fn);
  else printLines(ctx, functionDetails(fn, client.url, createPainter(ctx.color), latency === undefined ? [] : latencyFields(latency)));
  // On stderr, so the labelled lines stay what scripts read: a gateway that cannot sandbox says so (docs/sandbox.md).
  if (info?.sandbox?.enabled === false) ctx.io.stderr.write(`warning: ${info.sandbox.warning ?? 'functions on this gateway run without a sandbox'}\n`);
  return 0;
}
