import { isIP } from 'node:net';
import { resolve } from 'node:path';
import { DEFAULT_STARTING_DEADLINE_SECONDS, FnhostError, limits } from '@fnhost/core';
import { PlatformRanges } from './policy/match.ts';
import { kvSettingsFrom, type KvSettings } from './kv/settings.ts';
import { CODE_SETTING_DEFAULTS as CODE, type CodeSettings } from './code/settings.ts';
import { CODE_FETCH_DEFAULTS, MIN_CHARGE_BYTES, type CodeFetchSettings } from './code/fetch-bound.ts';
import { asyncSettingsFrom, type AsyncSettings } from './async/settings.ts';
import { CONNECTION_DEFAULTS } from './internal/connection-bound.ts';
import { CONSOLE_RATE_DEFAULTS, MAX_CONSOLE_POST_BYTES } from './internal/console-rate.ts';

// Everything the gateway reads from its environment, parsed once at start.
// A bad value stops the start with a message naming the variable.

export interface GatewayConfig {
  /** The main listener: /invoke, the bearer-token /api/v1, /internal/v1, health and metrics. */
  port: number;
  host: string;
  /**
   * The admin panel's own listener (FNHOST_ADMIN_PORT, FNHOST_ADMIN_HOST): /admin and
   * its cookie-authenticated API, on an origin apart from function responses (docs/security.md).
   * Default port: PORT + 1 (8081), or 0 (any free port) when PORT is 0.
   */
  adminPort: number;
  adminHost: string;
  dataDir: string;
  /** Set when FNHOST_TOKEN is given; otherwise the token file is used (generated on first start). */
  token: string | undefined;
  /** FNHOST_METRICS_TOKEN: /metrics answers only this bearer token; unset: anyone who reaches the port. */
  metricsToken: string | undefined;
  publicUrl: string | undefined;
  maxTimeoutSeconds: number;
  /** Trust X-Forwarded-* sent by the peer (FNHOST_TRUST_PROXY=1); off by default. */
  trustProxy: boolean;
  /** Graceful shutdown bound for in-flight invocations. */
  shutdownGraceMs: number;
  /** MONGODB_URL: when set, every store lives in MongoDB instead of the embedded SQLite file. */
  mongodbUrl: string | undefined;
  /**
   * A gateway instance whose log progress is older than this is taken for
   * dead and what it had not written is counted lost (FNHOST_GATEWAY_DEAD_AFTER_MS).
   */
  deadGatewayAfterMs: number;
  /**
   * While executions begin, how soon their count reaches the store (one small
   * write per interval at most): what a SIGKILL can take uncounted (FNHOST_LOG_PROGRESS_INTERVAL_MS).
   */
  logProgressIntervalMs: number;
  /** Bench only (FNHOST_BENCH_DISABLE_RECORDING=1): no execution records, to measure what recording costs (P2). */
  benchDisableRecording: boolean;
  /** The egress proxy's TCP listener for pods (FNHOST_EGRESS_LISTEN=host:port); one machine uses its Unix socket only. */
  egressListen: { host: string; port: number } | undefined;
  /** Connections one function may hold open through the egress proxy (FNHOST_EGRESS_MAX_CONNECTIONS). */
  egressMaxConnections: number;
  /** An egress tunnel with no byte either way for this long is closed (FNHOST_EGRESS_IDLE_TIMEOUT_MS). */
  egressIdleTimeoutMs: number;
  /**
   * The platform's own address ranges (FNHOST_EGRESS_PLATFORM_CIDRS, comma-separated
   * CIDRs or addresses: in cluster mode the pod and Service CIDRs, the nodes, the API
   * server): the egress proxy and the policy check refuse them unless a policy's
   * allow pattern names them specifically (docs/egress.md).
   */
  egressPlatform: PlatformRanges | undefined;
  /**
   * The node's own addresses (FNHOST_EGRESS_NODE_ADDRESSES, comma-separated; the chart passes the
   * pod's status.hostIPs): protected as the machine's own addresses are (docs/egress.md).
   */
  egressNodeAddresses: string[];
  /**
   * Open connections one function may hold to the internal API and to the egress proxy, and the time
   * a runtime's connection may take to send its first request (docs/security.md "Resources",
   * "Internal API, egress, console"; FNHOST_INTERNAL_CONNECTIONS_PER_FUNCTION, FNHOST_EGRESS_CONNECTIONS_PER_FUNCTION,
   * FNHOST_RUNTIME_FIRST_REQUEST_TIMEOUT_MS).
   */
  runtimeConnections: { internalPerFunction: number; egressPerFunction: number; firstRequestTimeoutMs: number };
  /** Console posts per function: bytes and posts a second, with their bursts (FNHOST_CONSOLE_*). */
  consoleRate: { bytesPerSecond: number; burstBytes: number; postsPerSecond: number; burstPosts: number };
  /** One machine: a function's runtime with no call for this long is stopped (FNHOST_RUNTIME_IDLE_SECONDS; 0: never). */
  runtimeIdleSeconds: number;
  /** One machine: the bound of a function module's load, apart from its time limit (FNHOST_LOAD_TIMEOUT_SECONDS, docs/gateway.md "A load longer than the time limit"). */
  loadTimeoutSeconds: number;
  /**
   * FNHOST_CONSOLE_CAPTURE (on|off, default on): each execution's console output kept with its
   * record. Off: runtimes this gateway starts capture nothing, and output any runtime (a pod) posts
   * is dropped, so nothing is stored in either mode.
   */
  consoleCapture: boolean;
  /**
   * One machine: a run missed while no gateway was running still starts at
   * the next start when it is at most this late; older ones are recorded
   * missed (FNHOST_SCHEDULE_STARTING_DEADLINE_SECONDS; 0: never start late).
   * Kubernetes' CronJob startingDeadlineSeconds, which the operator sets alike.
   */
  scheduleStartingDeadlineSeconds: number;
  /** KV quotas and the write-rate bound (FNHOST_KV_*, FNHOST_NAMESPACE_KV_*; ./kv/settings.ts, docs/kv.md "Quotas"). */
  kv: KvSettings;
  /** The code store's bounds and GC (FNHOST_CODE_*; ./code/settings.ts, docs/gateway.md "The code store"). */
  code: CodeSettings;
  /** The bound on runtimes' fetches of their code (GET /internal/v1/code/{digest}), per function (./code/fetch-bound.ts, docs/security.md "Resources: code fetches"). */
  codeFetches: CodeFetchSettings;
  /** Asynchronous invocation's queue (async/settings.ts, docs/async.md). */
  async: AsyncSettings;
}

/** Five minutes: a function called now and then keeps its runtime between calls; one called once a day does not hold memory all day. */
export const DEFAULT_RUNTIME_IDLE_SECONDS = 300;

export class ConfigError extends FnhostError {
  constructor(message: string) {
    super('invalid_configuration', 500, message, { expose: true });
  }
}

export function intVar(env: Record<string, string | undefined>, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(`${name}="${raw}" is not an integer from ${min} to ${max}`);
  const n = Number(raw.trim());
  if (n < min || n > max) throw new ConfigError(`${name}=${n} is out of range: use ${min} to ${max}`);
  return n;
}

function nodeAddresses(env: Record<string, string | undefined>): string[] {
  const list = (env.FNHOST_EGRESS_NODE_ADDRESSES ?? '').split(',').map((a) => a.trim()).filter(Boolean);
  for (const a of list) if (isIP(a) === 0) throw new ConfigError(`FNHOST_EGRESS_NODE_ADDRESSES: ${JSON.stringify(a.slice(0, 60))} is not an IP address (give addresses separated by commas)`);
  return list;
}

function platformRanges(env: Record<string, string | undefined>): PlatformRanges | undefined {
  const raw = env.FNHOST_EGRESS_PLATFORM_CIDRS?.trim() ?? '';
  const cidrs = raw.split(',').map((c) => c.trim()).filter(Boolean);
  if (cidrs.length === 0) return undefined;
  if (cidrs.length > 256) throw new ConfigError(`FNHOST_EGRESS_PLATFORM_CIDRS lists ${cidrs.length} ranges; at most 256`);
  try {
    return new PlatformRanges(cidrs);
  } catch (err) {
    throw new ConfigError(`FNHOST_EGRESS_PLATFORM_CIDRS: ${(err as Error).message} (give CIDRs such as 10.96.0.0/12 or addresses, separated by commas)`);
  }
}

/** `host:port` or `[v6]:port` (port 0: any free port). */
function listenAddress(env: Record<string, string | undefined>, name: string): { host: string; port: number } | undefined {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === '') return undefined;
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^:\[\]]+)):(\d{1,5})$/.exec(raw);
  const port = match === null ? NaN : Number(match[3]);
  if (match === null || port > 65535) throw new ConfigError(`${name}="${raw}" must be host:port (e.g. 0.0.0.0:3128 or [::]:3128), port 0-65535`);
  return { host: match[1] ?? match[2]!, port };
}

export function loadConfig(env: Record<string, string | undefined> = process.env, cwd = process.cwd()): GatewayConfig {
  const publicUrl = env.FNHOST_PUBLIC_URL?.trim() || undefined;
  if (publicUrl !== undefined) {
    let parsed: URL;
    try {
      parsed = new URL(publicUrl);
    } catch {
      throw new ConfigError(`FNHOST_PUBLIC_URL="${publicUrl}" is not a URL such as https://fn.example.com`);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new ConfigError(`FNHOST_PUBLIC_URL="${publicUrl}" must start with http:// or https://`);
  }
  const token = env.FNHOST_TOKEN === undefined || env.FNHOST_TOKEN === '' ? undefined : env.FNHOST_TOKEN;
  if (token !== undefined && token.length < 16) throw new ConfigError('FNHOST_TOKEN is shorter than 16 characters; use a long random value');
  const metricsToken = env.FNHOST_METRICS_TOKEN === undefined || env.FNHOST_METRICS_TOKEN.trim() === '' ? undefined : env.FNHOST_METRICS_TOKEN.trim();
  if (metricsToken !== undefined && metricsToken.length < 16) throw new ConfigError('FNHOST_METRICS_TOKEN is shorter than 16 characters; use a long random value');
  const trust = (env.FNHOST_TRUST_PROXY ?? '').toLowerCase();
  if (!['', '0', '1', 'true', 'false'].includes(trust)) throw new ConfigError(`FNHOST_TRUST_PROXY="${env.FNHOST_TRUST_PROXY}" must be 1, true, 0 or false`);
  const mongodbUrl = env.MONGODB_URL?.trim() || undefined;
  // The URL may hold a password: the message shows only its scheme.
  if (mongodbUrl !== undefined && !/^mongodb(\+srv)?:\/\//.test(mongodbUrl)) throw new ConfigError(`MONGODB_URL must start with mongodb:// or mongodb+srv:// (it starts with "${mongodbUrl.split(':')[0]}:")`);
  const port = intVar(env, 'PORT', 8080, 0, 65535);
  const host = env.HOST?.trim() || '127.0.0.1';
  const adminPort = adminPortOf(env, port);
  const adminHost = env.FNHOST_ADMIN_HOST?.trim() || host;
  return {
    port,
    host,
    adminPort,
    adminHost,
    dataDir: resolve(cwd, env.FNHOST_DATA_DIR?.trim() || '.fnhost'),
    token,
    metricsToken,
    publicUrl: publicUrl?.replace(/\/+$/, ''),
    maxTimeoutSeconds: intVar(env, 'FNHOST_MAX_TIMEOUT_SECONDS', limits.MAX_TIMEOUT_SECONDS, 1, limits.MAX_TIMEOUT_SECONDS),
    trustProxy: trust === '1' || trust === 'true',
    shutdownGraceMs: intVar(env, 'FNHOST_SHUTDOWN_GRACE_MS', 10_000, 0, 600_000),
    mongodbUrl,
    deadGatewayAfterMs: intVar(env, 'FNHOST_GATEWAY_DEAD_AFTER_MS', 30_000, 1_000, 3_600_000),
    logProgressIntervalMs: intVar(env, 'FNHOST_LOG_PROGRESS_INTERVAL_MS', 20, 1, 60_000),
    benchDisableRecording: env.FNHOST_BENCH_DISABLE_RECORDING === '1',
    egressListen: listenAddress(env, 'FNHOST_EGRESS_LISTEN'),
    egressMaxConnections: intVar(env, 'FNHOST_EGRESS_MAX_CONNECTIONS', 64, 1, 10_000),
    egressIdleTimeoutMs: intVar(env, 'FNHOST_EGRESS_IDLE_TIMEOUT_MS', 300_000, 1_000, 86_400_000),
    egressPlatform: platformRanges(env),
    egressNodeAddresses: nodeAddresses(env),
    runtimeConnections: runtimeConnections(env),
    consoleRate: {
      bytesPerSecond: intVar(env, 'FNHOST_CONSOLE_BYTES_PER_SECOND', CONSOLE_RATE_DEFAULTS.bytesPerSecond, 1024, 1024 * 1024 * 1024),
      // At least one whole post (4 MiB), or a full post could never pass.
      burstBytes: intVar(env, 'FNHOST_CONSOLE_BURST_BYTES', CONSOLE_RATE_DEFAULTS.burstBytes, MAX_CONSOLE_POST_BYTES, 1024 * 1024 * 1024),
      postsPerSecond: intVar(env, 'FNHOST_CONSOLE_POSTS_PER_SECOND', CONSOLE_RATE_DEFAULTS.postsPerSecond, 1, 100_000),
      burstPosts: intVar(env, 'FNHOST_CONSOLE_BURST_POSTS', CONSOLE_RATE_DEFAULTS.burstPosts, 1, 100_000),
    },
    runtimeIdleSeconds: intVar(env, 'FNHOST_RUNTIME_IDLE_SECONDS', DEFAULT_RUNTIME_IDLE_SECONDS, 0, 604_800),
    loadTimeoutSeconds: intVar(env, 'FNHOST_LOAD_TIMEOUT_SECONDS', limits.DEFAULT_LOAD_TIMEOUT_SECONDS, 1, limits.MAX_TIMEOUT_SECONDS),
    consoleCapture: onOff(env, 'FNHOST_CONSOLE_CAPTURE', true),
    scheduleStartingDeadlineSeconds: intVar(env, 'FNHOST_SCHEDULE_STARTING_DEADLINE_SECONDS', DEFAULT_STARTING_DEADLINE_SECONDS, 0, 604_800),
    kv: kvSettingsFrom(env),
    code: {
      maxTotalBytes: intVar(env, 'FNHOST_CODE_STORE_MAX_BYTES', CODE.maxTotalBytes, limits.MAX_CODE_REF_BYTES, 2 ** 50),
      maxNamespaceBytes: intVar(env, 'FNHOST_CODE_STORE_NAMESPACE_MAX_BYTES', CODE.maxNamespaceBytes, limits.MAX_CODE_REF_BYTES, 2 ** 50),
      maxConcurrentUploads: intVar(env, 'FNHOST_CODE_UPLOADS_MAX_CONCURRENT', CODE.maxConcurrentUploads, 1, 64),
      gcGraceMs: intVar(env, 'FNHOST_CODE_GC_GRACE_SECONDS', CODE.gcGraceMs / 1000, 0, 30 * 86_400) * 1000,
      gcIntervalMs: intVar(env, 'FNHOST_CODE_GC_INTERVAL_SECONDS', CODE.gcIntervalMs / 1000, 1, 86_400) * 1000,
    },
    codeFetches: {
      concurrent: intVar(env, 'FNHOST_CODE_FETCHES_PER_FUNCTION', CODE_FETCH_DEFAULTS.concurrent, 1, 1024),
      bytesPerSecond: intVar(env, 'FNHOST_CODE_FETCH_BYTES_PER_SECOND', CODE_FETCH_DEFAULTS.bytesPerSecond, 64 * 1024, 2 ** 40),
      burstBytes: intVar(env, 'FNHOST_CODE_FETCH_BURST_BYTES', CODE_FETCH_DEFAULTS.burstBytes, MIN_CHARGE_BYTES, 2 ** 40),
    },
    async: asyncSettingsFrom((name, fallback, min, max) => intVar(env, name, fallback, min, max)),
  };
}

/** The bounds on runtimes' connections; the egress one holds the tunnels FNHOST_EGRESS_MAX_CONNECTIONS allows. */
function runtimeConnections(env: Record<string, string | undefined>): GatewayConfig['runtimeConnections'] {
  const tunnels = intVar(env, 'FNHOST_EGRESS_MAX_CONNECTIONS', 64, 1, 10_000);
  const egressPerFunction = intVar(env, 'FNHOST_EGRESS_CONNECTIONS_PER_FUNCTION', Math.max(CONNECTION_DEFAULTS.egressPerFunction, 2 * tunnels), 1, 100_000);
  if (egressPerFunction < tunnels) throw new ConfigError(`FNHOST_EGRESS_CONNECTIONS_PER_FUNCTION=${egressPerFunction} is below FNHOST_EGRESS_MAX_CONNECTIONS=${tunnels}: every tunnel is a connection, so it must be at least that`);
  return {
    internalPerFunction: intVar(env, 'FNHOST_INTERNAL_CONNECTIONS_PER_FUNCTION', CONNECTION_DEFAULTS.internalPerFunction, 1, 100_000),
    egressPerFunction,
    firstRequestTimeoutMs: intVar(env, 'FNHOST_RUNTIME_FIRST_REQUEST_TIMEOUT_MS', CONNECTION_DEFAULTS.firstRequestTimeoutMs, 100, 600_000),
  };
}

/** `on` or `off` (unset: the default); anything else stops the start naming the value. */
function onOff(env: Record<string, string | undefined>, name: string, fallback: boolean): boolean {
  const raw = env[name]?.trim() ?? '';
  if (raw === '') return fallback;
  if (raw === 'on') return true;
  if (raw === 'off') return false;
  throw new ConfigError(`${name}="${raw.slice(0, 40)}" must be on or off`);
}

/** FNHOST_ADMIN_PORT, or the port after PORT; never PORT itself (one origin for both is what the split prevents). */
function adminPortOf(env: Record<string, string | undefined>, port: number): number {
  const given = env.FNHOST_ADMIN_PORT;
  if (given === undefined || given.trim() === '') {
    if (port === 0) return 0;
    if (port === 65535) throw new ConfigError('PORT=65535 leaves no next port for the admin panel: set FNHOST_ADMIN_PORT');
    return port + 1;
  }
  const adminPort = intVar(env, 'FNHOST_ADMIN_PORT', 0, 0, 65535);
  if (adminPort !== 0 && adminPort === port) throw new ConfigError(`FNHOST_ADMIN_PORT=${adminPort} is PORT too: the admin panel needs a port of its own (docs/security.md)`);
  return adminPort;
}
