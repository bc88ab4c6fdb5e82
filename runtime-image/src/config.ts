// Runtime configuration: only environment variables (docs/internal-protocol.md "Starting a runtime").
import { parseEgressProxy } from './egress.ts';
import * as limits from './limits.ts';

export interface RuntimeConfig {
  port: number;
  host: string;
  /** FNHOST_RUNTIME_SOCKET: listen on this Unix socket instead of host:port (a sandboxed runtime). */
  socket: string | undefined;
  healthPort: number | undefined;
  functionFile: string;
  functionId: string;
  functionName: string;
  routes: string[];
  timeoutMs: number;
  /**
   * FNHOST_LOAD_TIMEOUT_MS: the bound of the module's load, apart from the calls' time limit (as
   * Lambda bounds its init apart from the invocation timeout): a top level that awaits the network
   * or a heavy import may take longer than a short time limit and still come up.
   */
  loadTimeoutMs: number;
  memoryMiB: number;
  gatewayUrl: string | undefined;
  runtimeToken: string | undefined;
  /** FNHOST_EGRESS_PROXY: the gateway's egress proxy every outbound connection goes through (docs/egress.md). */
  egressProxy: string | undefined;
  /** FNHOST_CONSOLE_CAPTURE (not `off`) with a gateway to send to: each execution's console output goes to its record (console-capture.ts). */
  consoleCapture: boolean;
  /** FNHOST_CONSOLE_GRACE_MS: how long after its answer an execution's console output is still its own. */
  consoleGraceMs: number;
  /**
   * FNHOST_CODE_DIGEST and FNHOST_CODE_SIZE: the module is referenced code, fetched by digest from
   * the gateway into functionFile at start unless already there (code-fetch.ts; a Kubernetes pod).
   */
  codeRef: { digest: string; size: number } | undefined;
  /** The function's own environment: the runtime's minus FNHOST_* (and the runtime's PORT/HOST). */
  functionEnv: Record<string, string>;
  /** FNHOST_ISOLATION: where the handler runs (docs/runtime.md "Isolation: a thread or the process"). */
  isolation: Isolation;
}

/**
 * `thread` (the default): the handler runs in a worker thread the runtime ends and replaces on a
 * timeout or an out-of-memory. `process`: on the main thread; the process is ended and replaced by
 * whoever started it, which must also give it its heap limit (`--max-old-space-size`).
 */
export type Isolation = 'thread' | 'process';

export function isolationVar(env: NodeJS.ProcessEnv): Isolation {
  const raw = env.FNHOST_ISOLATION?.trim() ?? '';
  if (raw === '') return 'thread';
  if (raw !== 'thread' && raw !== 'process') throw new ConfigError(`FNHOST_ISOLATION="${raw.slice(0, 40)}" must be thread or process`);
  return raw;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

export function intVar(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw new ConfigError(`${name}="${raw}" must be an integer from ${min} to ${max}`);
  return n;
}

/** FNHOST_RUNTIME_SOCKET: an absolute path, or unset. */
export function socketVar(env: NodeJS.ProcessEnv): string | undefined {
  const raw = env.FNHOST_RUNTIME_SOCKET?.trim();
  if (!raw) return undefined;
  if (!raw.startsWith('/')) throw new ConfigError(`FNHOST_RUNTIME_SOCKET="${raw}" must be an absolute path`);
  // sun_path holds 108 bytes with its terminating NUL.
  if (Buffer.byteLength(raw) > 107) throw new ConfigError(`FNHOST_RUNTIME_SOCKET="${raw}" is longer than the 107 bytes a Unix socket path may have`);
  return raw;
}

export function parseRoutes(raw: string | undefined): string[] {
  if (raw === undefined || raw.trim() === '') return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (err) {
    throw new ConfigError(`FNHOST_ROUTES="${raw.slice(0, 100)}" is not JSON: ${(err as Error).message}`);
  }
  if (!Array.isArray(parsed)) throw new ConfigError(`FNHOST_ROUTES must be a JSON array of route patterns, got ${raw.slice(0, 100)}`);
  if (parsed.length > limits.MAX_ROUTES) throw new ConfigError(`FNHOST_ROUTES has ${parsed.length} routes; the limit is ${limits.MAX_ROUTES}`);
  for (const r of parsed) {
    if (typeof r !== 'string' || !r.startsWith('/') || r.length > limits.MAX_ROUTE_LENGTH) {
      throw new ConfigError(`FNHOST_ROUTES entry ${JSON.stringify(r)} must be a string starting with "/" of at most ${limits.MAX_ROUTE_LENGTH} characters`);
    }
  }
  return parsed as string[];
}

/** Variables the runtime consumes itself; the handler never sees them. */
const RUNTIME_ONLY = new Set(['PORT', 'HOST']);

export function functionEnvOf(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined || k.startsWith('FNHOST_') || RUNTIME_ONLY.has(k)) continue;
    out[k] = v;
  }
  return out;
}

/** Checked here so a bad value stops the start; egress.ts parses it again in the worker. */
function egressProxyVar(env: NodeJS.ProcessEnv): string | undefined {
  const raw = env.FNHOST_EGRESS_PROXY?.trim();
  if (raw === undefined || raw === '') return undefined;
  try {
    parseEgressProxy(raw);
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
  if (!env.FNHOST_RUNTIME_TOKEN) throw new ConfigError('FNHOST_EGRESS_PROXY needs FNHOST_RUNTIME_TOKEN: the proxy authenticates the runtime with it');
  return raw;
}

function consoleCaptureVar(env: NodeJS.ProcessEnv): boolean {
  const raw = env.FNHOST_CONSOLE_CAPTURE?.trim() ?? '';
  if (raw !== '' && raw !== 'on' && raw !== 'off') throw new ConfigError(`FNHOST_CONSOLE_CAPTURE="${raw.slice(0, 40)}" must be on or off`);
  return raw !== 'off' && Boolean(env.FNHOST_GATEWAY_URL?.trim());
}

export function loadConfig(env: NodeJS.ProcessEnv): RuntimeConfig {
  const functionFile = env.FNHOST_FUNCTION_FILE?.trim();
  if (!functionFile) throw new ConfigError('FNHOST_FUNCTION_FILE is required: the path of the function module to load');
  const functionId = env.FNHOST_FUNCTION_ID?.trim() || 'unknown';
  const healthRaw = env.FNHOST_HEALTH_PORT?.trim();
  return {
    port: intVar(env, 'PORT', 8080, 0, 65535),
    host: env.HOST?.trim() || '0.0.0.0',
    socket: socketVar(env),
    healthPort: healthRaw ? intVar(env, 'FNHOST_HEALTH_PORT', 0, 0, 65535) : undefined,
    functionFile,
    functionId,
    functionName: env.FNHOST_FUNCTION_NAME?.trim() || 'function',
    routes: parseRoutes(env.FNHOST_ROUTES),
    timeoutMs: intVar(env, 'FNHOST_TIMEOUT_MS', limits.DEFAULT_TIMEOUT_MS, 1, limits.MAX_TIMEOUT_MS),
    // Unset (a pod): 15 s, or the time limit when that is longer, as the gateway sets it on one machine.
    loadTimeoutMs: intVar(env, 'FNHOST_LOAD_TIMEOUT_MS', Math.max(limits.DEFAULT_LOAD_TIMEOUT_MS, intVar(env, 'FNHOST_TIMEOUT_MS', limits.DEFAULT_TIMEOUT_MS, 1, limits.MAX_TIMEOUT_MS)), 1, limits.MAX_TIMEOUT_MS),
    memoryMiB: intVar(env, 'FNHOST_MEMORY_MIB', limits.DEFAULT_MEMORY_MIB, limits.MIN_MEMORY_MIB, limits.MAX_MEMORY_MIB),
    gatewayUrl: env.FNHOST_GATEWAY_URL?.trim().replace(/\/+$/, '') || undefined,
    runtimeToken: env.FNHOST_RUNTIME_TOKEN || undefined,
    egressProxy: egressProxyVar(env),
    consoleCapture: consoleCaptureVar(env),
    consoleGraceMs: intVar(env, 'FNHOST_CONSOLE_GRACE_MS', 1000, 0, 10_000),
    codeRef: codeRefVar(env),
    functionEnv: functionEnvOf(env),
    isolation: isolationVar(env),
  };
}

/** Referenced code: both variables or neither; the digest as fnhost writes it, a size up to 50 MiB. */
function codeRefVar(env: NodeJS.ProcessEnv): RuntimeConfig['codeRef'] {
  const digest = env.FNHOST_CODE_DIGEST?.trim();
  if (!digest) return undefined;
  if (!/^sha256:[0-9a-f]{64}$/.test(digest)) throw new ConfigError(`FNHOST_CODE_DIGEST="${digest.slice(0, 80)}" must be sha256: and 64 lowercase hex digits`);
  if (!env.FNHOST_GATEWAY_URL?.trim()) throw new ConfigError('FNHOST_CODE_DIGEST needs FNHOST_GATEWAY_URL: referenced code is fetched from the gateway');
  if (!env.FNHOST_CODE_SIZE?.trim()) throw new ConfigError('FNHOST_CODE_DIGEST needs FNHOST_CODE_SIZE: the size in bytes of the referenced code');
  return { digest, size: intVar(env, 'FNHOST_CODE_SIZE', 0, 1, 50 * 1024 * 1024) };
}
