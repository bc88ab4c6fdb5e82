import { parseArgs } from 'node:util';
import { UsageError } from '../errors.ts';
import { optionsOf } from './registry.ts';
import type { CommandSpec, OptionSpec, OptionValues } from './spec.ts';

// node:util parseArgs in strict mode, with its errors turned into one line
// each that names the flag and the command.

export interface ParsedCommand {
  args: string[];
  options: OptionValues;
  help: boolean;
  output: 'text' | 'json';
}

function quoted(message: string): string | undefined {
  return /'([^']+)'/.exec(message)?.[1];
}

const NEGATIVE_NUMBER = /^-\d+(\.\d*)?$/;

/**
 * `--limit -5`: parseArgs reads `-5` as a flag and says `--limit` lacks a
 * value. No flag of ours is a digit, so a negative number after a flag that
 * takes a value is that value, and the flag's own check then names it as out
 * of range (as `--limit=-5` already did).
 */
function joinNegativeValues(argv: string[], declared: Record<string, OptionSpec>): string[] {
  const takesValue = (token: string): boolean => {
    const long = /^--([\w-]+)$/.exec(token)?.[1];
    if (long !== undefined) return declared[long]?.type === 'string';
    const short = /^-(\w)$/.exec(token)?.[1];
    return short !== undefined && Object.values(declared).some((o) => o.short === short && o.type === 'string');
  };
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i]!;
    const next = argv[i + 1];
    if (token === '--') {
      out.push(...argv.slice(i));
      break;
    }
    if (next !== undefined && NEGATIVE_NUMBER.test(next) && takesValue(token)) {
      out.push(token.startsWith('--') ? `${token}=${next}` : `${token}${next}`);
      i++;
    } else {
      out.push(token);
    }
  }
  return out;
}

export function parseCommandLine(spec: CommandSpec, argv: string[]): ParsedCommand {
  const declared = optionsOf(spec);
  let parsed: { values: OptionValues; positionals: string[] };
  try {
    parsed = parseArgs({
      args: joinNegativeValues(argv, declared),
      options: Object.fromEntries(
        Object.entries(declared).map(([name, o]) => [name, { type: o.type, ...(o.multiple ? { multiple: true } : {}), ...(o.short ? { short: o.short } : {}) }]),
      ),
      allowPositionals: true,
      strict: true,
    }) as { values: OptionValues; positionals: string[] };
  } catch (err) {
    if (!String((err as { code?: unknown }).code).startsWith('ERR_PARSE_ARGS_')) throw err;
    throw parseError(spec, declared, err as Error & { code?: string });
  }
  const help = parsed.values.help === true;
  if (help) return { args: parsed.positionals, options: parsed.values, help, output: 'text' };

  const missing = spec.args.slice(parsed.positionals.length);
  if (missing.length > 0) {
    throw new UsageError(`${spec.name} needs a ${missing[0]} argument`, { hint: `usage: fnhost ${spec.name} ${spec.args.join(' ')} [flags]` });
  }
  const extra = parsed.positionals.slice(spec.args.length);
  if (extra.length > 0) {
    throw new UsageError(`unexpected argument "${extra[0]}" for ${spec.name}`, { hint: `usage: fnhost ${[spec.name, ...spec.args].join(' ')} [flags]` });
  }
  for (const [name, value] of Object.entries(parsed.values)) {
    // A repeated single-value flag: parseArgs keeps the last one silently.
    if (declared[name]?.type === 'string' && !declared[name]?.multiple && argv.filter((a) => a === `--${name}` || a.startsWith(`--${name}=`)).length > 1) {
      throw new UsageError(`--${name} was given more than once`);
    }
    if (typeof value === 'string' && value === '' && name !== 'data') {
      throw new UsageError(`--${name} needs a value`);
    }
  }
  return { args: parsed.positionals, options: parsed.values, help, output: outputFormat(parsed.values.output) };
}

export function outputFormat(value: unknown): 'text' | 'json' {
  if (value === undefined || value === 'text' || value === 'table') return 'text';
  if (value === 'json') return 'json';
  throw new UsageError(`--output must be json or text, got ${JSON.stringify(value)}`);
}

/** `success, error or all` from a placeholder such as `success|error|all`; undefined for `<int>`. */
function choices(option: OptionSpec | undefined): string | undefined {
  const values = option?.value?.split('|');
  if (values === undefined || values.length < 2) return undefined;
  return `${values.slice(0, -1).join(', ')} or ${values.at(-1)}`;
}

function parseError(spec: CommandSpec, declared: Record<string, OptionSpec>, err: Error & { code?: string }): UsageError {
  const hint = `run fnhost ${spec.name} --help to see its flags`;
  const flag = quoted(err.message);
  switch (err.code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION':
      return new UsageError(`unknown flag "${flag ?? err.message}" for ${spec.name}`, { hint, cause: err });
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE': {
      const name = flag?.split(' ')[0]?.replace(/,$/, '') ?? '';
      const long = /--[\w-]+/.exec(flag ?? '')?.[0] ?? name;
      if (/does not take an argument/.test(err.message)) {
        return new UsageError(`flag ${long} does not take a value`, { hint, cause: err });
      }
      const option = declared[long.replace(/^--/, '')];
      const allowed = choices(option);
      if (allowed !== undefined) return new UsageError(`flag ${long} needs a value: ${allowed}`, { hint: `${long}: ${option!.description}`, cause: err });
      return new UsageError(`flag ${long} needs a value`, {
        hint: option?.value === undefined ? `${long}=<value> passes a value that starts with "-"` : `${long} ${option.value}: ${option.description}`,
        cause: err,
      });
    }
    case 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL':
      return new UsageError(`unexpected argument for ${spec.name}`, { hint, cause: err });
    default:
      return new UsageError(err.message, { hint, cause: err });
  }
}
