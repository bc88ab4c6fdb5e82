import { writeFile } from 'node:fs/promises';
import { relative, resolve } from 'node:path';
import { MAX_CODE_REF_BYTES } from '@fnhost/core/limits.ts';
import { pushCode } from './code-ref.ts';
import { LocalIoError } from '../errors.ts';
import { bundleHandler } from '../bundle/bundle.ts';
import { createPainter } from '../format/color.ts';
import { stringOption } from './common.ts';
import { existingFile } from './settings.ts';
import type { CommandContext } from './spec.ts';

// `fnhost bundle <file> [-o out.mjs] [--push]`: the module function:create would send, for those
// who deploy without the API (a Function resource's spec.code, docs/cluster-mode.md); with --push
// it is uploaded by digest and the spec's codeRef: printed (GitOps with code over 256 KiB).

export async function run(ctx: CommandContext): Promise<number> {
  const path = await existingFile(ctx, ctx.args[0]!, 'bundle');
  const bundle = await bundleHandler(path, ctx.io.cwd);
  for (const warning of bundle.warnings) ctx.io.stderr.write(`warning: ${warning}\n`);
  const out = stringOption(ctx, 'out');
  const push = ctx.options.push === true;
  if (out === undefined && !push) {
    ctx.io.stdout.write(bundle.code);
    return 0;
  }
  if (out !== undefined) await writeOut(ctx, out, bundle.code);
  const paint = createPainter(ctx.color);
  if (out !== undefined) ctx.io.stdout.write(`${paint.green('✓')} Bundled ${relative(ctx.io.cwd, path)} into ${out} (${bundle.bytes} bytes of the ${MAX_CODE_REF_BYTES}-byte limit, source map included)\n`);
  if (push) {
    const ref = await pushCode(ctx, await ctx.client(), Buffer.from(bundle.code));
    // The lines a Function resource's spec takes in place of spec.code (docs/cluster-mode.md).
    ctx.io.stdout.write(`codeRef:\n  digest: ${ref.digest}\n  size: ${ref.size}\n`);
  }
  return 0;
}

async function writeOut(ctx: CommandContext, out: string, code: string): Promise<void> {
  try {
    await writeFile(resolve(ctx.io.cwd, out), code);
  } catch (err) {
    throw new LocalIoError(`cannot write ${out} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`, { cause: err });
  }
}
