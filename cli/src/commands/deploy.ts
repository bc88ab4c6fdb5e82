import { createPainter } from '../format/color.ts';
import { invocationUrl } from '../format/function.ts';
import { functionRef, intOption, printJson, printLines } from './common.ts';
import { waitForRollout } from './rollout.ts';
import { codeBody } from './code-ref.ts';
import { parseSettings, readCode } from './settings.ts';
import type { CommandContext } from './spec.ts';

export const DEFAULT_WAIT_SECONDS = 180;

export async function run(ctx: CommandContext): Promise<number> {
  const ref = functionRef(ctx);
  const code = await readCode(ctx);
  const settings = parseSettings(ctx);
  const waitSeconds = intOption(ctx, 'wait-timeout', 3600) ?? DEFAULT_WAIT_SECONDS;
  const client = await ctx.client();
  let fn = await client.updateFunction(ref, { ...(await codeBody(ctx, client, code)), ...settings }, { allowLoadError: ctx.options['allow-load-error'] === true });
  // Cluster mode: the change is stored; wait until the operator has rolled the new code out.
  const waited =
    ctx.options['no-wait'] === true
      ? undefined
      : await waitForRollout(fn, waitSeconds * 1000, {
          get: async () => (fn = await client.getFunction(fn.function_id)),
          now: () => Date.now(),
          sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
        });
  if (ctx.output === 'json') {
    printJson(ctx, fn);
    return 0;
  }
  const paint = createPainter(ctx.color);
  const how = fn.rollout === undefined ? '' : waited === undefined ? ' (not waiting for it to serve: --no-wait)' : ` (serving: ${waited.reason})`;
  printLines(ctx, [`${paint.green('✓')} Deployed new code to ${fn.name} (${fn.function_id})${how}`, `Invocation URL: ${invocationUrl(fn, client.url)}`]);
  return 0;
}
