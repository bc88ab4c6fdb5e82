import { hostname } from 'node:os';
import { readFileSync } from 'node:fs';
import { limits } from '@fnhost/core';
import { NAMESPACES_VARIABLE, PLATFORM_NAMESPACE_VARIABLE, SELECTOR_VARIABLE, parseFunctionNamespaces, type FunctionNamespaces } from '@fnhost/core/function-namespaces.ts';
import type { NetworkPolicySettings, PoolSettings, Settings } from './types.ts';
import { millicores } from '@fnhost/core/scaling.ts';
import { PoolSettingsError, loadPoolSettings } from './pool.ts';

// Settings come only from environment variables (documented in
// docs/operator.md). A bad value stops the operator at start with a message
// naming the variable and the value.

export class SettingsError extends Error {}

const SERVICE_ACCOUNT_NAMESPACE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

function int(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw.trim()) || Number(raw) < min || Number(raw) > max) {
    throw new SettingsError(`${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(raw)}`);
  }
  return Number(raw);
}

function bool(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new SettingsError(`${name} must be true or false, got ${JSON.stringify(raw)}`);
}

function url(env: NodeJS.ProcessEnv, name: string, fallback: string): string {
  const raw = env[name] || fallback;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new SettingsError(`${name} must be an http(s) URL, got ${JSON.stringify(raw)}`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new SettingsError(`${name} must be an http(s) URL, got ${JSON.stringify(raw)}`);
  return raw.replace(/\/+$/, '');
}

function cpuQuantity(env: NodeJS.ProcessEnv, name: string, fallback: string): string {
  const raw = env[name] || fallback;
  if (!/^\d+(\.\d+)?m?$/.test(raw)) throw new SettingsError(`${name} must be a CPU quantity such as 50m or 0.5, got ${JSON.stringify(raw)}`);
  return raw;
}

function podNamespace(): string | undefined {
  try {
    return readFileSync(SERVICE_ACCOUNT_NAMESPACE, 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}

/** FNHOST_EGRESS_PROXY_URL: http://host:port and nothing else (what the runtime's FNHOST_EGRESS_PROXY accepts over TCP). */
function egressProxyUrl(env: NodeJS.ProcessEnv): string | undefined {
  const raw = env.FNHOST_EGRESS_PROXY_URL?.trim();
  if (raw === undefined || raw === '') return undefined;
  let parsed: URL | undefined;
  try {
    parsed = new URL(raw);
  } catch {
    parsed = undefined;
  }
  if (parsed === undefined || parsed.protocol !== 'http:' || parsed.port === '' || parsed.pathname !== '/' || parsed.search !== '' || parsed.username !== '') {
    throw new SettingsError(`FNHOST_EGRESS_PROXY_URL must be http://host:port (the gateway's egress proxy as pods reach it), got ${JSON.stringify(raw)}`);
  }
  return `http://${parsed.host}`;
}

/** `a=b,c=d`: Kubernetes label keys and values. */
function labels(env: NodeJS.ProcessEnv, name: string): Record<string, string> {
  const raw = env[name]?.trim() ?? '';
  const out: Record<string, string> = {};
  for (const pair of raw.split(',').map((p) => p.trim()).filter(Boolean)) {
    const eq = pair.indexOf('=');
    const key = eq < 0 ? '' : pair.slice(0, eq).trim();
    const value = eq < 0 ? '' : pair.slice(eq + 1).trim();
    if (!/^([a-z0-9.-]{1,253}\/)?[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$/.test(key) || !/^([A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?)?$/.test(value)) {
      throw new SettingsError(`${name} must be labels as key=value,key=value, got ${JSON.stringify(raw.slice(0, 200))} (bad pair ${JSON.stringify(pair.slice(0, 100))})`);
    }
    out[key] = value;
  }
  if (Object.keys(out).length === 0) throw new SettingsError(`${name} must name at least one label (key=value) that selects the gateway's pods`);
  return out;
}

/** `8080,8090`: TCP ports. */
function ports(env: NodeJS.ProcessEnv, name: string): number[] {
  const raw = env[name]?.trim() ?? '';
  const parts = raw.split(',').map((p) => p.trim()).filter(Boolean);
  if (parts.length === 0 || parts.some((p) => !/^\d{1,5}$/.test(p) || Number(p) < 1 || Number(p) > 65535)) {
    throw new SettingsError(`${name} must be TCP ports from 1 to 65535 separated by commas, got ${JSON.stringify(raw.slice(0, 200))}`);
  }
  return [...new Set(parts.map(Number))];
}

function networkPolicySettings(env: NodeJS.ProcessEnv, defaultNamespace: string): NetworkPolicySettings | undefined {
  if (!bool(env, 'FNHOST_NETWORK_POLICY', false)) return undefined;
  return {
    gatewayNamespace: env.FNHOST_GATEWAY_NAMESPACE?.trim() || defaultNamespace,
    gatewayPodLabels: labels(env, 'FNHOST_GATEWAY_POD_LABELS'),
    gatewayPorts: ports(env, 'FNHOST_GATEWAY_POD_PORTS'),
  };
}

function functionNamespaces(env: NodeJS.ProcessEnv, platformNamespace: string | undefined): FunctionNamespaces {
  try {
    return parseFunctionNamespaces({ names: env[NAMESPACES_VARIABLE], selector: env[SELECTOR_VARIABLE], platformNamespace: env[PLATFORM_NAMESPACE_VARIABLE]?.trim() || platformNamespace });
  } catch (err) {
    throw new SettingsError((err as Error).message);
  }
}

export function loadSettings(env: NodeJS.ProcessEnv = process.env, defaults: { namespace?: string; host?: string } = {}): Settings {
  const tokenKey = env.FNHOST_TOKEN_KEY ?? '';
  if (Buffer.byteLength(tokenKey) < 32) {
    throw new SettingsError('FNHOST_TOKEN_KEY must be set to a secret of at least 32 bytes (the runtime and schedule tokens are derived from it; the gateway needs the same key)');
  }
  const pullPolicy = env.FNHOST_IMAGE_PULL_POLICY || 'IfNotPresent';
  if (pullPolicy !== 'Always' && pullPolicy !== 'IfNotPresent' && pullPolicy !== 'Never') {
    throw new SettingsError(`FNHOST_IMAGE_PULL_POLICY must be Always, IfNotPresent or Never, got ${JSON.stringify(pullPolicy)}`);
  }
  const logLevel = env.FNHOST_LOG_LEVEL || 'info';
  if (logLevel !== 'debug' && logLevel !== 'info' && logLevel !== 'warn' && logLevel !== 'error') {
    throw new SettingsError(`FNHOST_LOG_LEVEL must be debug, info, warn or error, got ${JSON.stringify(logLevel)}`);
  }
  const metricsToken = env.FNHOST_METRICS_TOKEN?.trim() || undefined;
  if (metricsToken !== undefined && metricsToken.length < 16) throw new SettingsError('FNHOST_METRICS_TOKEN is shorter than 16 characters; use a long random value');
  const cpuRequest = cpuQuantity(env, 'FNHOST_CPU_REQUEST', '50m');
  const cpuLimit = cpuQuantity(env, 'FNHOST_CPU_LIMIT', '1');
  // The API server refuses a pod whose request is above its limit: say so at start, not at each reconcile.
  if (millicores(cpuRequest) > millicores(cpuLimit)) throw new SettingsError(`FNHOST_CPU_REQUEST (${cpuRequest}) is above FNHOST_CPU_LIMIT (${cpuLimit})`);
  const gatewayUrl = url(env, 'FNHOST_GATEWAY_URL', 'http://fnhost-gateway.fnhost-system.svc:8080');
  const leaseDurationSeconds = int(env, 'FNHOST_LEASE_DURATION_SECONDS', 15, 2, 300);
  const renewDeadlineSeconds = int(env, 'FNHOST_RENEW_DEADLINE_SECONDS', 10, 1, 300);
  const retryPeriodSeconds = int(env, 'FNHOST_RETRY_PERIOD_SECONDS', 2, 1, 60);
  if (!(retryPeriodSeconds < renewDeadlineSeconds && renewDeadlineSeconds < leaseDurationSeconds)) {
    throw new SettingsError(
      `lease timings must satisfy retry period < renew deadline < lease duration, got ${retryPeriodSeconds}s, ${renewDeadlineSeconds}s, ${leaseDurationSeconds}s`,
    );
  }
  const leaseNamespace = env.FNHOST_LEASE_NAMESPACE || defaults.namespace || podNamespace() || 'default';
  return {
    runtimeImage: env.FNHOST_RUNTIME_IMAGE || 'localhost/fnhost-runtime:dev',
    imagePullPolicy: pullPolicy,
    gatewayUrl,
    publicUrl: url(env, 'FNHOST_PUBLIC_URL', gatewayUrl),
    egressProxyUrl: egressProxyUrl(env),
    networkPolicy: networkPolicySettings(env, leaseNamespace),
    gatewayHostAliases: [],
    maxTimeoutSeconds: int(env, 'FNHOST_MAX_TIMEOUT_SECONDS', limits.MAX_TIMEOUT_SECONDS, 1, limits.MAX_TIMEOUT_SECONDS),
    runtimeOverheadMiB: int(env, 'FNHOST_RUNTIME_OVERHEAD_MIB', 96, 16, 4096),
    runtimeStopDelaySeconds: int(env, 'FNHOST_RUNTIME_STOP_DELAY_SECONDS', 2, 0, 30),
    // Code GC (code-gc.ts): how often, and how long an unreferenced blob is kept after its last upload.
    codeGcIntervalSeconds: int(env, 'FNHOST_CODE_GC_INTERVAL_SECONDS', 600, 10, 86_400),
    codeGcGraceSeconds: int(env, 'FNHOST_CODE_GC_GRACE_SECONDS', 3600, 0, 30 * 86_400),
    tokenKey,
    runAsUser: int(env, 'FNHOST_RUN_AS_USER', 10001, 1, 2147483647),
    cpuRequest,
    cpuLimit,
    workers: int(env, 'FNHOST_WORKERS', 2, 1, 64),
    maxInFlight: int(env, 'FNHOST_MAX_INFLIGHT', 10, 1, 1000),
    port: int(env, 'FNHOST_OPERATOR_PORT', 8081, 0, 65535),
    watchNamespace: env.FNHOST_WATCH_NAMESPACE ?? '',
    functionNamespaces: functionNamespaces(env, defaults.namespace || podNamespace()),
    leaderElection: bool(env, 'FNHOST_LEADER_ELECTION', true),
    leaseNamespace,
    leaseName: env.FNHOST_LEASE_NAME || 'fnhost-operator',
    identity: env.FNHOST_POD_NAME || `${defaults.host ?? hostname()}-${process.pid}`,
    leaseDurationSeconds,
    renewDeadlineSeconds,
    retryPeriodSeconds,
    logLevel,
    metricsToken,
    functionIdGrants: bool(env, 'FNHOST_FUNCTION_ID_GRANTS', false),
    pool: poolSettings(env),
  };
}

function poolSettings(env: NodeJS.ProcessEnv): PoolSettings {
  try {
    return loadPoolSettings(env);
  } catch (err) {
    if (err instanceof PoolSettingsError) throw new SettingsError(err.message);
    throw err;
  }
}
