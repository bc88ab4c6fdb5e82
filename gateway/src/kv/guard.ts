import { KvQuotaError, KvRateLimiter, kvEntryBytes, type FunctionRecord, type KvStore } from '@fnhost/core';
import type { Logger } from '../log.ts';
import type { Metrics } from '../metrics.ts';
import { quotaFor, type KvSettings } from './settings.ts';

// The write path of a function's KV (the internal API's PUT and DELETE):
// the write-rate bound first (cheap, in memory, nothing touches the store
// when it refuses), then the store's quota check in the same unit of work as
// the write. Every refusal is counted (fnhost_refused_total{reason}) and
// logged as one line naming the function and the quota, never the key or value.

export interface KvGuardOptions {
  kv: KvStore;
  settings: KvSettings;
  /** Cluster mode: namespace totals apply. */
  cluster: boolean;
  metrics?: Metrics;
  logger?: Logger;
}

export class KvGuard {
  readonly #o: KvGuardOptions;
  readonly #rate: KvRateLimiter;
  /** When each (function, quota) was last logged: a function at its bound logs a line a minute, not one per refusal. */
  readonly #logged = new Map<string, number>();

  constructor(options: KvGuardOptions) {
    this.#o = options;
    this.#rate = new KvRateLimiter({ writesPerSecond: options.settings.writesPerSecond, bytesPerSecond: options.settings.writeBytesPerSecond });
  }

  /** Stores the key, or throws KvRateError (429) / KvQuotaError (413). */
  async set(fn: FunctionRecord, key: string, json: string, ttlSeconds: number | null, now: number): Promise<void> {
    this.#takeRate(fn, kvEntryBytes(key, json), now);
    const quota = quotaFor(fn, this.#o.settings, this.#o.cluster);
    const result = await this.#o.kv.set(fn.function_id, key, json, ttlSeconds, now, quota);
    if (result.stored) return;
    this.#o.metrics?.refused(result.quota);
    const err = new KvQuotaError(fn.name, result, fn.namespace);
    this.#log(fn, result.quota, now, { used: result.used, limit: result.limit });
    throw err;
  }

  /** A delete frees room, but it is a write: it takes from the write rate too (one write, its key's bytes). */
  async delete(fn: FunctionRecord, key: string, now: number): Promise<boolean> {
    this.#takeRate(fn, Buffer.byteLength(key), now);
    return this.#o.kv.delete(fn.function_id, key);
  }

  /** Throws the KvRateError a write of about `bytes` would meet now (nothing taken): checked before its body is read. */
  admit(fn: FunctionRecord, bytes: number, now: number): void {
    this.#rated(fn, now, () => this.#rate.admits(fn.function_id, fn.name, bytes, now));
  }

  #takeRate(fn: FunctionRecord, bytes: number, now: number): void {
    this.#rated(fn, now, () => this.#rate.take(fn.function_id, fn.name, bytes, now));
  }

  #rated(fn: FunctionRecord, now: number, check: () => void): void {
    try {
      check();
    } catch (err) {
      this.#o.metrics?.refused('kv_write_rate');
      this.#log(fn, 'kv_write_rate', now, { message: (err as Error).message });
      throw err;
    }
  }

  #log(fn: FunctionRecord, quota: string, now: number, fields: Record<string, string | number>): void {
    const key = `${fn.function_id}\0${quota}`;
    const last = this.#logged.get(key);
    if (last !== undefined && now - last < 60_000) return;
    if (this.#logged.size > 10_000) this.#logged.clear();
    this.#logged.set(key, now);
    this.#o.logger?.warn('kv write refused (logged once a minute per function and quota)', { function_id: fn.function_id, name: fn.name, namespace: fn.namespace, quota, ...fields });
  }
}
