import { FnhostError, ValidationError } from './errors.ts';
import type { FunctionKvQuota } from './model.ts';

// KV quotas (issue 27 point 4, issue 28 point 2): what one function may keep
// in KV (bytes and keys), what one Kubernetes namespace may keep in total,
// and how fast one function may write. The stores keep the usage counters
// (KvStore.set/usage); the gateway decides with the pure functions here and
// refuses with KvQuotaError / KvRateError. docs/kv.md "Quotas" gives the
// defaults and why.

/** 100 MiB per function: a laptop's SQLite holds dozens of such functions; Cloudflare Workers KV's free plan gives 1 GB per account. */
export const DEFAULT_KV_MAX_BYTES = 100 * 1024 * 1024;
/**
 * 100,000 keys per function: 100 MiB at an average of 1 KiB a key. The key
 * bound exists because many tiny keys cost index space the byte count does
 * not see (~40 bytes of b-tree per key in SQLite).
 */
export const DEFAULT_KV_MAX_KEYS = 100_000;
/** The largest settable per-function or namespace byte quota: 64 GiB. */
export const MAX_KV_QUOTA_BYTES = 64 * 1024 * 1024 * 1024;
export const MAX_KV_QUOTA_KEYS = 100_000_000;
/** Writes (set and delete) per second per function, sustained; the bucket holds as many for a burst. */
export const DEFAULT_KV_WRITES_PER_SECOND = 100;
/** Bytes (key + value) written per second per function, sustained; the bucket holds twice as many for a burst. */
export const DEFAULT_KV_WRITE_BYTES_PER_SECOND = 4 * 1024 * 1024;

/** Which bound refused a write: named in every refusal (API error, handler error, metric). */
export type KvQuotaName = 'kv_bytes' | 'kv_keys' | 'namespace_kv_bytes';

/** A function's KV quota as the store applies it on a write. */
export interface KvQuota {
  maxBytes: number;
  maxKeys: number;
  /**
   * The Kubernetes namespace the function belongs to (cluster mode): recorded
   * with its usage so the namespace's total can be read (KvStore.groupUsage),
   * and bounded by maxBytes when the platform sets one.
   */
  group?: { id: string; maxBytes?: number };
}

/** Live (unexpired) keys and their bytes (UTF-8 key + JSON value). */
export interface KvUsage {
  keys: number;
  bytes: number;
}

/** What KvStore.set did: stored, or refused by a quota with what was used then. */
export type KvSetResult =
  | { stored: true }
  | { stored: false; quota: KvQuotaName; used: number; limit: number };

/** The bytes a key holds: its UTF-8 key plus its JSON value. */
export function kvEntryBytes(key: string, json: string): number {
  return Buffer.byteLength(key) + Buffer.byteLength(json);
}

/**
 * Whether a write that changes usage by (dKeys, dBytes) fits. A write that
 * does not grow a dimension always fits in it (an overwrite with a smaller
 * value under a lowered quota must still work, as must deletes). Returns the
 * refusal or null.
 */
export function checkKvQuota(
  usage: KvUsage, dKeys: number, dBytes: number, quota: { maxBytes: number; maxKeys: number },
): { quota: KvQuotaName; used: number; limit: number } | null {
  if (dKeys > 0 && usage.keys + dKeys > quota.maxKeys) return { quota: 'kv_keys', used: usage.keys, limit: quota.maxKeys };
  if (dBytes > 0 && usage.bytes + dBytes > quota.maxBytes) return { quota: 'kv_bytes', used: usage.bytes, limit: quota.maxBytes };
  return null;
}

/** A KV write refused by a quota: 413 on the internal API, thrown to the handler as `kv.set(...) failed: <message>`. */
export class KvQuotaError extends FnhostError {
  readonly quota: KvQuotaName;
  constructor(functionName: string, refusal: { quota: KvQuotaName; used: number; limit: number }, namespace?: string) {
    const what = refusal.quota === 'kv_keys' ? 'keys' : 'bytes';
    const who = refusal.quota === 'namespace_kv_bytes' ? `namespace ${namespace ?? '?'}` : `function ${functionName}`;
    super('kv_quota_exceeded', 413, `KV quota exceeded: ${who} stores ${refusal.used} of ${refusal.limit} ${what} (${refusal.quota})`);
    this.quota = refusal.quota;
  }
}

/** A KV write refused by the function's write rate: 429 with Retry-After. */
export class KvRateError extends FnhostError {
  readonly retryAfterSeconds: number;
  constructor(functionName: string, what: 'kv_writes_per_second' | 'kv_write_bytes_per_second', limit: number, retryAfterMs: number) {
    super('kv_rate_limited', 429, `KV write rate exceeded: function ${functionName} may write ${limit} ${what === 'kv_writes_per_second' ? 'times' : 'bytes'} a second (${what}); retry in ${Math.max(1, Math.ceil(retryAfterMs / 1000))} s`);
    this.retryAfterSeconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  }
}

/** A token bucket's state: `tokens` as of `at` (ms). */
export interface Bucket {
  tokens: number;
  at: number;
}

/**
 * Takes `cost` tokens from a bucket refilled at `rate` a second up to
 * `capacity` (pure: returns the new state). A cost larger than the capacity
 * is allowed from a full bucket (it goes negative), so one big write is never
 * refused forever; the debt then delays the next ones.
 */
export function takeTokens(bucket: Bucket | undefined, cost: number, rate: number, capacity: number, now: number):
  { ok: true; bucket: Bucket } | { ok: false; bucket: Bucket; retryAfterMs: number } {
  const elapsed = bucket === undefined ? 0 : Math.max(0, now - bucket.at);
  const tokens = bucket === undefined ? capacity : Math.min(capacity, bucket.tokens + (elapsed * rate) / 1000);
  const current = { tokens, at: now };
  if (tokens >= Math.min(cost, capacity)) return { ok: true, bucket: { tokens: tokens - cost, at: now } };
  const missing = Math.min(cost, capacity) - tokens;
  return { ok: false, bucket: current, retryAfterMs: Math.ceil((missing * 1000) / rate) };
}

/** The settings of the write-rate bound (FNHOST_KV_WRITES_PER_SECOND, FNHOST_KV_WRITE_BYTES_PER_SECOND; 0 turns one off). */
export interface KvRateSettings {
  writesPerSecond: number;
  bytesPerSecond: number;
}

/**
 * Per-function write-rate buckets (writes and bytes), in memory: each
 * gateway replica bounds the writes it serves, so N replicas admit at most
 * N times the rate. Buckets idle for a minute are dropped so the map stays
 * as small as the set of writing functions.
 */
export class KvRateLimiter {
  readonly #settings: KvRateSettings;
  readonly #writes = new Map<string, Bucket>();
  readonly #bytes = new Map<string, Bucket>();
  #lastPrune = 0;

  constructor(settings: KvRateSettings) {
    this.#settings = settings;
  }

  /** Takes one write of `bytes` for the function at `now`, or throws KvRateError (nothing taken then). */
  take(functionId: string, functionName: string, bytes: number, now: number): void {
    this.#prune(now);
    const { writesPerSecond, bytesPerSecond } = this.#settings;
    let writes: Bucket | undefined;
    if (writesPerSecond > 0) {
      const w = takeTokens(this.#writes.get(functionId), 1, writesPerSecond, writesPerSecond, now);
      if (!w.ok) {
        this.#writes.set(functionId, w.bucket);
        throw new KvRateError(functionName, 'kv_writes_per_second', writesPerSecond, w.retryAfterMs);
      }
      writes = w.bucket;
    }
    if (bytesPerSecond > 0) {
      const b = takeTokens(this.#bytes.get(functionId), bytes, bytesPerSecond, 2 * bytesPerSecond, now);
      this.#bytes.set(functionId, b.bucket);
      if (!b.ok) throw new KvRateError(functionName, 'kv_write_bytes_per_second', bytesPerSecond, b.retryAfterMs);
    }
    if (writes !== undefined) this.#writes.set(functionId, writes);
  }

  /**
   * Throws the KvRateError that take() would throw for a write of `bytes` now, taking nothing: a
   * write refused for its rate is refused on its declared length, before its body is read.
   */
  admits(functionId: string, functionName: string, bytes: number, now: number): void {
    const { writesPerSecond, bytesPerSecond } = this.#settings;
    if (writesPerSecond > 0) {
      const w = takeTokens(this.#writes.get(functionId), 1, writesPerSecond, writesPerSecond, now);
      if (!w.ok) throw new KvRateError(functionName, 'kv_writes_per_second', writesPerSecond, w.retryAfterMs);
    }
    if (bytesPerSecond > 0) {
      const b = takeTokens(this.#bytes.get(functionId), bytes, bytesPerSecond, 2 * bytesPerSecond, now);
      if (!b.ok) throw new KvRateError(functionName, 'kv_write_bytes_per_second', bytesPerSecond, b.retryAfterMs);
    }
  }

  #prune(now: number): void {
    if (now - this.#lastPrune < 60_000) return;
    this.#lastPrune = now;
    for (const map of [this.#writes, this.#bytes]) for (const [id, b] of map) if (now - b.at > 60_000) map.delete(id);
  }
}

/**
 * A function's kv_quota as given to the API: `{max_bytes?, max_keys?}`, each
 * an integer or null (null: the platform's default). Fields not named keep
 * `current`'s values, so a PATCH can change one.
 */
export function validateKvQuota(raw: unknown, current: FunctionKvQuota = {}): FunctionKvQuota {
  if (raw === null) return {};
  if (typeof raw !== 'object' || Array.isArray(raw)) throw new ValidationError(`kv_quota must be an object {max_bytes?, max_keys?}, got ${JSON.stringify(raw)?.slice(0, 60)}`);
  const out: FunctionKvQuota = { ...current };
  for (const [field, value] of Object.entries(raw as Record<string, unknown>)) {
    const max = field === 'max_bytes' ? MAX_KV_QUOTA_BYTES : field === 'max_keys' ? MAX_KV_QUOTA_KEYS : undefined;
    if (max === undefined) throw new ValidationError(`kv_quota: unknown field "${field.slice(0, 40)}"; allowed: max_bytes, max_keys`);
    if (value !== null && (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > max)) {
      throw new ValidationError(`kv_quota.${field} must be an integer from 1 to ${max} (or null for the platform's default), got ${JSON.stringify(value)?.slice(0, 40)}`);
    }
    out[field as 'max_bytes' | 'max_keys'] = value as number | null;
  }
  // Stored without nulls: absent means the default.
  const clean: FunctionKvQuota = {};
  if (typeof out.max_bytes === 'number') clean.max_bytes = out.max_bytes;
  if (typeof out.max_keys === 'number') clean.max_keys = out.max_keys;
  return clean;
}
