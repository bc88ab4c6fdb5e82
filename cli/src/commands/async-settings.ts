import { validateAsyncSettings } from '@fnhost/core/async-call.ts';
import { validateCallbackHosts } from '@fnhost/core/async-callback.ts';
import { UsageError } from '../errors.ts';
import { createPainter } from '../format/color.ts';
import { asUsage, functionRef, listOption, printJson, printLines, stringOption } from './common.ts';
import type { CommandContext } from './spec.ts';

// A function's async settings from the command line (docs/async.md):
//   --callback-host <host> (repeatable; replaces the list), --no-callbacks   on create, deploy and function:async:set
//   --max-retries <0-2|default>, --max-age <seconds|default>                 on function:async:set
// Only what is named is sent: the server merges it onto the function's settings.

export interface AsyncFlags {
  max_retries?: number | null;
  max_age_seconds?: number | null;
  callback_hosts?: string[] | null;
}

/** --callback-host and --no-callbacks: the hosts X-Callback-Url may name, null to turn callbacks off, undefined when neither is given. */
export function parseCallbackFlags(ctx: CommandContext): string[] | null | undefined {
  const hosts = listOption(ctx, 'callback-host');
  const none = ctx.options['no-callbacks'] === true;
  if (none && hosts.length > 0) throw new UsageError('--no-callbacks turns callbacks off; it goes without --callback-host');
  if (none) return null;
  if (hosts.length === 0) return undefined;
  return asUsage(() => validateCallbackHosts(hosts), 'for example: --callback-host hooks.example.com --callback-host "*.example.org"');
}

function countOrDefault(raw: string | undefined, flag: string, pattern: RegExp, what: string): number | null | undefined {
  if (raw === undefined) return undefined;
  if (raw === 'default') return null;
  if (!pattern.test(raw)) throw new UsageError(`${flag} must be ${what} or "default", got "${raw.slice(0, 40)}"`);
  return Number(raw);
}

/** Every async flag of function:async:set; undefined when none is given. */
export function parseAsyncFlags(ctx: CommandContext): AsyncFlags | undefined {
  const out: AsyncFlags = {};
  const retries = countOrDefault(stringOption(ctx, 'max-retries'), '--max-retries', /^\d{1,2}$/, 'a number of retries (0 to 2)');
  if (retries !== undefined) out.max_retries = retries;
  const age = countOrDefault(stringOption(ctx, 'max-age'), '--max-age', /^\d{1,6}$/, 'a number of seconds (60 to 21600)');
  if (age !== undefined) out.max_age_seconds = age;
  const hosts = parseCallbackFlags(ctx);
  if (hosts !== undefined) out.callback_hosts = hosts;
  if (Object.keys(out).length === 0) return undefined;
  // The server's rules, early and with the flags named.
  asUsage(() => validateAsyncSettings(out), '--max-retries, --max-age, --callback-host and --no-callbacks set async');
  return out;
}

export async function run(ctx: CommandContext): Promise<number> {
  const ref = functionRef(ctx);
  const flags = parseAsyncFlags(ctx);
  if (flags === undefined) throw new UsageError('function:async:set needs at least one of --max-retries, --max-age, --callback-host, --no-callbacks', { hint: 'for example: fnhost function:async:set hello --callback-host hooks.example.com' });
  const client = await ctx.client();
  const fn = await client.updateFunction(ref, { async: flags });
  if (ctx.output === 'json') printJson(ctx, fn);
  else {
    const a = fn.async ?? {};
    const hosts = a.callback_hosts ?? [];
    printLines(ctx, [
      `${createPainter(ctx.color).green('✓')} Async settings for ${fn.name}: ${a.max_retries ?? 2} retries (${a.max_retries == null ? 'default' : 'set'}), maximum age ${a.max_age_seconds ?? 21600} s (${a.max_age_seconds == null ? 'default' : 'set'})`,
      hosts.length === 0 ? '  callbacks: off (no callback hosts)' : `  callbacks to: ${hosts.join(', ')}`,
    ]);
  }
  return 0;
}
