import { readFileSync } from 'node:fs';
import { parseFunctionNamespaces, PLATFORM_NAMESPACE_VARIABLE, NAMESPACES_VARIABLE, SELECTOR_VARIABLE, type FunctionNamespaces } from '@fnhost/core/function-namespaces.ts';
import { hostname } from 'node:os';
import { ConfigError } from '../config.ts';
import { DEFAULT_HOLD_MS, DEFAULT_MAX_HELD, DEFAULT_MAX_HELD_PER_FUNCTION } from './executor.ts';
import { DEFAULT_STATUS_INTERVAL_MS } from './status.ts';

// Settings of cluster mode (FNHOST_MODE=cluster), read from the environment
// once at start; a bad value stops the start with a message naming it.
// The rest (port, public URL, MONGODB_URL, admin token) is gateway/src/config.ts.

import { DEFAULT_CODE_CACHE_MAX_BYTES } from './code-cache.ts';

export interface ClusterSettings {
  /** Key of the per-function runtime and schedule tokens; the operator has the same (FNHOST_TOKEN_KEY). */
  tokenKey: string;
  /** Namespace of management requests that name none. */
  defaultNamespace: string;
  /** Watch one namespace only (empty: every namespace the gateway may read). */
  watchNamespace: string;
  holdMs: number;
  maxHeld: number;
  maxHeldPerFunction: number;
  statusIntervalMs: number;
  /** API requests in flight at most (watches not counted). */
  maxInFlight: number;
  /** This replica's key in status.concurrency (FNHOST_POD_NAME, else the host name: the pod's name). */
  gatewayId: string;
  /** Namespaces where functions may live (every management call is checked against it). */
  functionNamespaces: FunctionNamespaces;
  /** Accept Kubernetes bearer tokens on /api/v1 (TokenReview, SubjectAccessReview). */
  kubeTokens: boolean;
  /** This replica's cache of code blobs its pods fetch (code-cache.ts): a folder, and its bound in bytes. */
  codeCacheDir: string;
  codeCacheMaxBytes: number;
  /** FNHOST_POOL: serve cold calls from the namespace's pool of generic pods (the chart sets it when pool.size > 0). */
  pool: boolean;
}

const SERVICE_ACCOUNT_NAMESPACE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

/** The platform's own namespace: FNHOST_PLATFORM_NAMESPACE, else the pod's (its service account's). */
function platformNamespace(env: Record<string, string | undefined>): string | undefined {
  const named = env[PLATFORM_NAMESPACE_VARIABLE]?.trim();
  if (named !== undefined && named !== '') return named;
  try {
    return readFileSync(SERVICE_ACCOUNT_NAMESPACE, 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}

function bool(env: Record<string, string | undefined>, name: string, fallback: boolean): boolean {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === '') return fallback;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new ConfigError(`${name}="${raw.slice(0, 40)}" must be true or false`);
}

/** The namespace rule from FNHOST_FUNCTION_NAMESPACES, FNHOST_FUNCTION_NAMESPACE_SELECTOR and the platform's namespace. */
export function loadFunctionNamespaces(env: Record<string, string | undefined>): FunctionNamespaces {
  try {
    return parseFunctionNamespaces({ names: env[NAMESPACES_VARIABLE], selector: env[SELECTOR_VARIABLE], platformNamespace: platformNamespace(env) });
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
}

const LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

function int(env: Record<string, string | undefined>, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) throw new ConfigError(`${name}="${raw}" must be an integer from ${min} to ${max}`);
  return Number(raw);
}

function namespace(env: Record<string, string | undefined>, name: string, fallback: string): string {
  const raw = env[name]?.trim() || fallback;
  if (raw !== '' && (raw.length > 63 || !LABEL.test(raw))) throw new ConfigError(`${name}="${raw.slice(0, 80)}" is not a namespace name (a DNS-1123 label)`);
  return raw;
}

/** A key of status.concurrency: the pod's name (a DNS subdomain, at most 253 characters). */
function gatewayId(env: Record<string, string | undefined>): string {
  const raw = (env.FNHOST_POD_NAME ?? '').trim() || hostname();
  if (raw.length > 253 || !/^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/.test(raw)) throw new ConfigError(`FNHOST_POD_NAME="${raw.slice(0, 80)}" is not a pod name`);
  return raw;
}

export function isClusterMode(env: Record<string, string | undefined>): boolean {
  const mode = (env.FNHOST_MODE ?? '').trim().toLowerCase();
  if (mode !== '' && mode !== 'local' && mode !== 'cluster') throw new ConfigError(`FNHOST_MODE="${env.FNHOST_MODE}" must be local or cluster`);
  return mode === 'cluster';
}

export function loadClusterSettings(env: Record<string, string | undefined>): ClusterSettings {
  const tokenKey = env.FNHOST_TOKEN_KEY ?? '';
  // Never echoed: it is a secret.
  if (Buffer.byteLength(tokenKey) < 32) throw new ConfigError('FNHOST_TOKEN_KEY must be set to a secret of at least 32 bytes in cluster mode (the same key as the operator\'s)');
  if (env.MONGODB_URL === undefined || env.MONGODB_URL.trim() === '') throw new ConfigError('MONGODB_URL is required in cluster mode: logs, counters, KV and policies live in MongoDB');
  // Every replica must accept the same admin token: a generated one would live in one pod's scratch directory.
  if (env.FNHOST_TOKEN === undefined || env.FNHOST_TOKEN.trim() === '') throw new ConfigError('FNHOST_TOKEN is required in cluster mode (the chart fills it from the admin token Secret)');
  const watchNamespace = namespace(env, 'FNHOST_WATCH_NAMESPACE', '');
  const defaultNamespace = namespace(env, 'FNHOST_DEFAULT_NAMESPACE', watchNamespace || 'default');
  if (watchNamespace !== '' && defaultNamespace !== watchNamespace) {
    throw new ConfigError(`FNHOST_DEFAULT_NAMESPACE="${defaultNamespace}" differs from FNHOST_WATCH_NAMESPACE="${watchNamespace}", the only namespace this gateway watches`);
  }
  return {
    tokenKey,
    defaultNamespace,
    watchNamespace,
    holdMs: int(env, 'FNHOST_HOLD_TIMEOUT_SECONDS', DEFAULT_HOLD_MS / 1000, 0, 900) * 1000,
    maxHeld: int(env, 'FNHOST_MAX_HELD_CALLS', DEFAULT_MAX_HELD, 0, 100_000),
    maxHeldPerFunction: int(env, 'FNHOST_MAX_HELD_CALLS_PER_FUNCTION', DEFAULT_MAX_HELD_PER_FUNCTION, 0, 100_000),
    statusIntervalMs: int(env, 'FNHOST_STATUS_INTERVAL_SECONDS', DEFAULT_STATUS_INTERVAL_MS / 1000, 1, 3600) * 1000,
    maxInFlight: int(env, 'FNHOST_KUBE_MAX_INFLIGHT', 10, 1, 1000),
    functionNamespaces: loadFunctionNamespaces(env),
    kubeTokens: bool(env, 'FNHOST_KUBE_TOKENS', true),
    gatewayId: gatewayId(env),
    codeCacheDir: env.FNHOST_CODE_CACHE_DIR?.trim() || '/tmp/fnhost-code-cache',
    codeCacheMaxBytes: int(env, 'FNHOST_CODE_CACHE_MAX_BYTES', DEFAULT_CODE_CACHE_MAX_BYTES, 64 * 1024 * 1024, 1024 ** 4),
    pool: bool(env, 'FNHOST_POOL', false),
  };
}
