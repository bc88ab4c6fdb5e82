import { isUuid } from '@fnhost/core/ids.ts';
import { parsePositiveInt, validateFunctionName } from '@fnhost/core/validation.ts';
import { UsageError } from '../errors.ts';
import type { CommandContext } from './spec.ts';

// Small helpers every command uses: the <function> argument, integer flags,
// JSON output.

/** The <function> argument: a function name (DNS-1123 label) or a UUID. */
export function functionRef(ctx: CommandContext): string {
  const ref = ctx.args[0] ?? '';
  if (isUuid(ref)) return ref.toLowerCase();
  return asUsage(() => validateFunctionName(ref), `the function must be a name or a UUID`);
}

/** Runs core validation and reports its ValidationError as a usage error (exit 2). */
export function asUsage<T>(check: () => T, hint?: string): T {
  try {
    return check();
  } catch (err) {
    if ((err as { code?: unknown }).code === 'invalid_argument') throw new UsageError((err as Error).message, { hint, cause: err });
    throw err;
  }
}

export function stringOption(ctx: CommandContext, name: string): string | undefined {
  const value = ctx.options[name];
  return typeof value === 'string' ? value : undefined;
}

export function listOption(ctx: CommandContext, name: string): string[] {
  const value = ctx.options[name];
  return Array.isArray(value) ? value : [];
}

/** A positive integer flag, named `--name` in the error. */
export function intOption(ctx: CommandContext, name: string, max: number): number | undefined {
  const raw = stringOption(ctx, name);
  if (raw === undefined) return undefined;
  return asUsage(() => parsePositiveInt(raw, `--${name}`, max));
}

export function printJson(ctx: CommandContext, value: unknown): void {
  ctx.io.stdout.write(JSON.stringify(value, null, 2) + '\n');
}

export function printLines(ctx: CommandContext, lines: readonly string[]): void {
  ctx.io.stdout.write(lines.join('\n') + '\n');
}
