import { createPainter } from '../format/color.ts';
import { functionList } from '../format/function.ts';
import { printJson, printLines } from './common.ts';
import type { CommandContext } from './spec.ts';

export async function run(ctx: CommandContext): Promise<number> {
  const client = await ctx.client();
  const allNamespaces = ctx.options['all-namespaces'] === true;
  const { functions } = await client.listFunctions({ allNamespaces });
  // JSON keeps the API's `{ functions: [...] }`: an object can grow fields later without breaking jq filters.
  if (ctx.output === 'json') printJson(ctx, { functions });
  else printLines(ctx, functionList(functions, createPainter(ctx.color), { allNamespaces }));
  return 0;
}
