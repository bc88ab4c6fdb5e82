import { writeFile } from 'node:fs/promises';
import { relative, resolve } from 'node:path';
import { MAX_CODE_BYTES } from '@fnhost/core/limits.ts';
import { LocalIoError } from '../errors.ts';
import { bundleHandler } from '../bundle/bundle.ts';
import { createPainter } from '../format/color.ts';
import { stringOption } from './common.ts';
import { existingFile } from './settings.ts';
import type { CommandContext } from './spec.ts';

// `fnhost bundle <file> [-o out.mjs]`: the module function:create would send, for those who
// deploy without the API (a Function resource's spec.code, docs/cluster-mode.md).

export async function run(ctx: CommandContext): Promise<number> {
  const path = await existingFile(ctx, ctx.args[0]!, 'bundle');
  const bundle = await bundleHandler(path, ctx.io.cwd);
  for (const warning of bundle.warnings) ctx.io.stderr.write(`warning: ${warning}\n`);
  const out = stringOption(ctx, 'out');
  if (out === undefined) {
    ctx.io.stdout.write(bundle.code);
    return 0;
  }
  try {
    await writeFile(resolve(ctx.io.cwd, out), bundle.code);
  } catch (err) {
    throw new LocalIoError(`cannot write ${out} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`, { cause: err });
  }
  const paint = createPainter(ctx.color);
  ctx.io.stdout.write(`${paint.green('✓')} Bundled ${relative(ctx.io.cwd, path)} into ${out} (${bundle.bytes} bytes of the ${MAX_CODE_BYTES}-byte limit, source map included)\n`);
  return 0;
}
