import {
  DEFAULT_KV_MAX_BYTES, DEFAULT_KV_MAX_KEYS, DEFAULT_KV_WRITE_BYTES_PER_SECOND, DEFAULT_KV_WRITES_PER_SECOND,
  FnhostError, MAX_KV_QUOTA_BYTES, MAX_KV_QUOTA_KEYS, type FunctionRecord, type KvQuota,
} from '@fnhost/core';

// The KV quota settings (docs/kv.md "Quotas"): the platform's per-function
// defaults, the write-rate bound, and in cluster mode each Kubernetes
// namespace's total. Read once at start; a bad value stops the start naming
// the variable.

export interface KvSettings {
  /** FNHOST_KV_MAX_BYTES: a function's bytes (keys + JSON values) unless its kv_quota says otherwise. */
  maxBytes: number;
  /** FNHOST_KV_MAX_KEYS. */
  maxKeys: number;
  /** FNHOST_KV_WRITES_PER_SECOND (0: no bound). */
  writesPerSecond: number;
  /** FNHOST_KV_WRITE_BYTES_PER_SECOND (0: no bound). */
  writeBytesPerSecond: number;
  /** FNHOST_NAMESPACE_KV_MAX_BYTES: every namespace's KV total (cluster mode; 0: none). */
  namespaceMaxBytes: number;
  /** FNHOST_NAMESPACE_KV_QUOTAS: per-namespace totals overriding the default, JSON {"team-a": bytes}. */
  namespaceOverrides: ReadonlyMap<string, number>;
  /** FNHOST_NAMESPACE_RECORDED_MAX_BYTES: every namespace's recorded-request bytes (cluster mode; 0: none; ../quotas/recorded.ts). */
  namespaceRecordedMaxBytes: number;
  /** FNHOST_NAMESPACE_RECORDED_QUOTAS: per-namespace overrides of it, JSON {"team-a": bytes}. */
  namespaceRecordedOverrides: ReadonlyMap<string, number>;
}

export class KvSettingsError extends FnhostError {
  constructor(message: string) {
    super('invalid_configuration', 500, message, { expose: true });
  }
}

function intVar(env: Record<string, string | undefined>, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw)) throw new KvSettingsError(`${name}="${raw.slice(0, 40)}" is not an integer from ${min} to ${max}`);
  const n = Number(raw);
  if (n < min || n > max) throw new KvSettingsError(`${name}=${n} is out of range: use ${min} to ${max}`);
  return n;
}

const NAMESPACE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** FNHOST_NAMESPACE_KV_QUOTAS (or FNHOST_NAMESPACE_RECORDED_QUOTAS): `{"team-a": 1073741824, ...}` (bytes per namespace). */
export function parseNamespaceOverrides(raw: string | undefined, name = 'FNHOST_NAMESPACE_KV_QUOTAS'): Map<string, number> {
  const out = new Map<string, number>();
  if (raw === undefined || raw.trim() === '') return out;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new KvSettingsError(`${name} is not JSON: give an object such as {"team-a": 1073741824}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new KvSettingsError(`${name} must be a JSON object of namespace: bytes`);
  for (const [ns, bytes] of Object.entries(parsed)) {
    if (!NAMESPACE.test(ns)) throw new KvSettingsError(`${name}: "${ns.slice(0, 70)}" is not a namespace name`);
    if (typeof bytes !== 'number' || !Number.isInteger(bytes) || bytes < 0 || bytes > MAX_KV_QUOTA_BYTES) {
      throw new KvSettingsError(`${name}: the quota of "${ns}" must be an integer of bytes from 0 to ${MAX_KV_QUOTA_BYTES}, got ${JSON.stringify(bytes)}`);
    }
    out.set(ns, bytes);
  }
  return out;
}

export function kvSettingsFrom(env: Record<string, string | undefined>): KvSettings {
  return {
    maxBytes: intVar(env, 'FNHOST_KV_MAX_BYTES', DEFAULT_KV_MAX_BYTES, 1, MAX_KV_QUOTA_BYTES),
    maxKeys: intVar(env, 'FNHOST_KV_MAX_KEYS', DEFAULT_KV_MAX_KEYS, 1, MAX_KV_QUOTA_KEYS),
    writesPerSecond: intVar(env, 'FNHOST_KV_WRITES_PER_SECOND', DEFAULT_KV_WRITES_PER_SECOND, 0, 1_000_000),
    writeBytesPerSecond: intVar(env, 'FNHOST_KV_WRITE_BYTES_PER_SECOND', DEFAULT_KV_WRITE_BYTES_PER_SECOND, 0, 1024 * 1024 * 1024),
    namespaceMaxBytes: intVar(env, 'FNHOST_NAMESPACE_KV_MAX_BYTES', 0, 0, MAX_KV_QUOTA_BYTES),
    namespaceOverrides: parseNamespaceOverrides(env.FNHOST_NAMESPACE_KV_QUOTAS),
    namespaceRecordedMaxBytes: intVar(env, 'FNHOST_NAMESPACE_RECORDED_MAX_BYTES', 0, 0, MAX_KV_QUOTA_BYTES),
    namespaceRecordedOverrides: parseNamespaceOverrides(env.FNHOST_NAMESPACE_RECORDED_QUOTAS, 'FNHOST_NAMESPACE_RECORDED_QUOTAS'),
  };
}

/**
 * The quota a function's writes are held to: its own kv_quota fields where
 * set, else the platform's; in cluster mode its namespace's total when the
 * platform sets one (an override of 0 lifts the default for that namespace).
 */
export function quotaFor(fn: Pick<FunctionRecord, 'namespace' | 'kv_quota'>, settings: KvSettings, cluster: boolean): KvQuota {
  const quota: KvQuota = {
    maxBytes: fn.kv_quota?.max_bytes ?? settings.maxBytes,
    maxKeys: fn.kv_quota?.max_keys ?? settings.maxKeys,
  };
  if (cluster) {
    const nsMax = settings.namespaceOverrides.get(fn.namespace) ?? settings.namespaceMaxBytes;
    quota.group = nsMax > 0 ? { id: fn.namespace, maxBytes: nsMax } : { id: fn.namespace };
  }
  return quota;
}

/** A namespace's recorded-request bytes quota (cluster mode), or undefined for none. */
export function recordedLimitFor(namespace: string, settings: KvSettings): number | undefined {
  const limit = settings.namespaceRecordedOverrides.get(namespace) ?? settings.namespaceRecordedMaxBytes;
  return limit > 0 ? limit : undefined;
}
