import { stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { MAX_CODE_BYTES, MAX_MEMORY_MIB, MAX_TIMEOUT_SECONDS } from '@fnhost/core/limits.ts';
import { validateCode, validateEnv, validateMemoryMiB, validateRoutes, validateTimeoutSeconds } from '@fnhost/core/validation.ts';
import { validateRequestRecording } from '@fnhost/core/recording.ts';
import type { FunctionKvQuota, RequestRecording } from '@fnhost/core/model.ts';
import { validateKvQuota } from '@fnhost/core/kv-quota.ts';
import { LocalIoError, UsageError } from '../errors.ts';
import { parseCallbackFlags } from './async-settings.ts';
import { asUsage, intOption, listOption, stringOption } from './common.ts';
import type { CommandContext } from './spec.ts';

// The flags create and deploy share: --file, --env, --timeout, --memory, --route.

/**
 * The code create and deploy send: --file bundled with what it imports into one ES module
 * (../bundle/bundle.ts), up to 50 MiB (sent by reference past the inline limit: ./code-ref.ts).
 * esbuild loads only here, not at every start.
 */
export async function readCode(ctx: CommandContext): Promise<string> {
  const file = stringOption(ctx, 'file');
  if (file === undefined) throw new UsageError(`${ctx.spec.name} needs --file <path>: the module that exports the handler`);
  const path = await existingFile(ctx, file, '--file');
  const { bundleHandler } = await import('../bundle/bundle.ts');
  const bundle = await bundleHandler(path, ctx.io.cwd);
  for (const warning of bundle.warnings) ctx.io.stderr.write(`warning: ${warning}\n`);
  // Past the inline limit the bundle goes by reference (./code-ref.ts); the bundler bounds it at 50 MiB.
  if (bundle.bytes > MAX_CODE_BYTES) return bundle.code;
  return asUsage(() => validateCode(bundle.code), `--file ${file}`);
}

/** The absolute path of a file the command line names, or a UsageError saying why it is not one. */
export async function existingFile(ctx: CommandContext, file: string, flag: string): Promise<string> {
  const path = resolve(ctx.io.cwd, file);
  try {
    const info = await stat(path);
    if (!info.isFile()) throw new UsageError(`${flag} ${file} is not a file`);
    return path;
  } catch (err) {
    if (err instanceof UsageError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new UsageError(`${flag} ${file}: no such file`, { cause: err });
    throw new LocalIoError(`cannot read ${flag} ${file} (${code ?? (err as Error).message})`, { cause: err });
  }
}

export function parseEnvFlags(ctx: CommandContext): Record<string, string> | undefined {
  const pairs = listOption(ctx, 'env');
  if (pairs.length === 0) return undefined;
  const env: Record<string, string> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new UsageError(`--env "${pair}" must be KEY=VALUE`);
    env[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return asUsage(() => validateEnv(env));
}

export interface SettingsFlags {
  env?: Record<string, string>;
  routes?: string[];
  timeout_seconds?: number;
  memory_mib?: number;
  record_requests?: Partial<RequestRecording>;
  kv_quota?: { max_bytes?: number | null; max_keys?: number | null };
  async?: { callback_hosts: string[] | null };
}

const UNITS: Record<string, number> = { '': 1, Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3 };

/** `--kv-max-bytes 50Mi` -> 52428800; `default` -> null (the platform's); Ki, Mi, Gi as Kubernetes writes them. */
export function parseByteSize(raw: string, flag: string): number | null {
  if (raw === 'default') return null;
  const match = /^(\d{1,12})(Ki|Mi|Gi)?$/.exec(raw.trim());
  if (match === null) throw new UsageError(`${flag} must be a number of bytes (optionally with Ki, Mi or Gi, e.g. 50Mi) or "default", got "${raw}"`);
  return Number(match[1]) * UNITS[match[2] ?? '']!;
}

/** --kv-max-bytes and --kv-max-keys (docs/kv.md "Quotas"): only those named are sent, so a deploy keeps the other. */
export function parseKvQuotaFlags(ctx: CommandContext): FunctionKvQuota | undefined {
  const bytes = stringOption(ctx, 'kv-max-bytes');
  const keys = stringOption(ctx, 'kv-max-keys');
  if (bytes === undefined && keys === undefined) return undefined;
  const out: FunctionKvQuota = {};
  if (bytes !== undefined) out.max_bytes = parseByteSize(bytes, '--kv-max-bytes');
  if (keys !== undefined) {
    if (keys !== 'default' && !/^\d{1,12}$/.test(keys)) throw new UsageError(`--kv-max-keys must be a number of keys or "default", got "${keys}"`);
    out.max_keys = keys === 'default' ? null : Number(keys);
  }
  asUsage(() => validateKvQuota(out), '--kv-max-bytes and --kv-max-keys set kv_quota');
  return out;
}

/**
 * --record-requests on|off, --record-body-limit <bytes>, --redact-header <name>, --redact-json <path>
 * (docs/replay.md): only the parts named are sent, so a deploy keeps the rest. The redaction
 * lists, when given, replace the function's (as --env does); checked by core's rules.
 */
export function parseRecordingFlags(ctx: CommandContext): Partial<RequestRecording> | undefined {
  const onOff = stringOption(ctx, 'record-requests');
  const limit = stringOption(ctx, 'record-body-limit');
  const headers = listOption(ctx, 'redact-header');
  const paths = listOption(ctx, 'redact-json');
  if (onOff === undefined && limit === undefined && headers.length === 0 && paths.length === 0) return undefined;
  const out: Partial<RequestRecording> = {};
  if (onOff !== undefined) {
    if (onOff !== 'on' && onOff !== 'off') throw new UsageError(`--record-requests must be on or off, got "${onOff}"`);
    out.enabled = onOff === 'on';
  }
  if (limit !== undefined) {
    if (!/^\d{1,9}$/.test(limit)) throw new UsageError(`--record-body-limit must be a number of bytes from 0 to 65536, got "${limit}"`);
    out.max_body_bytes = Number(limit);
  }
  if (headers.length > 0 || paths.length > 0) out.redact = { headers, json_paths: paths };
  // The server's rules, early and with the flags named.
  asUsage(() => validateRequestRecording(out), '--record-requests, --record-body-limit, --redact-header and --redact-json set record_requests');
  return out;
}

export function parseSettings(ctx: CommandContext): SettingsFlags {
  const settings: SettingsFlags = {};
  const env = parseEnvFlags(ctx);
  if (env !== undefined) settings.env = env;
  const routes = listOption(ctx, 'route');
  if (routes.length > 0) settings.routes = asUsage(() => validateRoutes(routes));
  const timeout = intOption(ctx, 'timeout', MAX_TIMEOUT_SECONDS);
  if (timeout !== undefined) settings.timeout_seconds = asUsage(() => validateTimeoutSeconds(timeout));
  const memory = intOption(ctx, 'memory', MAX_MEMORY_MIB);
  if (memory !== undefined) settings.memory_mib = asUsage(() => validateMemoryMiB(memory));
  const recording = parseRecordingFlags(ctx);
  if (recording !== undefined) settings.record_requests = recording;
  const kvQuota = parseKvQuotaFlags(ctx);
  if (kvQuota !== undefined) settings.kv_quota = kvQuota;
  const callbackHosts = parseCallbackFlags(ctx);
  if (callbackHosts !== undefined) settings.async = { callback_hosts: callbackHosts };
  return settings;
}
