import { recordedExchangeBytes, withoutBodies, type ExchangeStore, type FunctionRecord, type RecordedExchange } from '@fnhost/core';
import type { Logger } from '../log.ts';
import type { Metrics } from '../metrics.ts';

// Recorded-request bytes per Kubernetes namespace (issue 28 point 2,
// docs/replay.md "Quotas"): the exchanges that functions with
// record_requests keep, totalled over a namespace's functions and bounded by
// the platform's per-namespace quota. A recording past it is stored without
// its bodies (method, path, headers and status stay, `omitted` says why) and
// counted; the call itself never fails.
//
// The total is measured by one aggregation per namespace (ExchangeStore.
// recordedBytes) at most every REFRESH_MS, plus what this gateway recorded
// since: so N replicas together may pass a namespace's quota by what the
// others record in one refresh interval (and each by what its log writer
// still held unwritten when a measure began).

export const REFRESH_MS = 30_000;

export interface RecordedQuotaOptions {
  exchanges: ExchangeStore;
  /** The namespace's bound in bytes, or undefined for none. */
  limitOf: (namespace: string) => number | undefined;
  /** The functions of a namespace (the gateway's cache). */
  functionsOf: (namespace: string) => readonly FunctionRecord[];
  now: () => number;
  metrics?: Metrics;
  logger?: Logger;
}

interface Measured {
  bytes: number;
  at: number;
  /** Bytes this gateway admitted since `at`. */
  since: number;
  refreshing?: Promise<void>;
}

/** The decision alone (pure): may an exchange of `bytes` be kept whole in a namespace at `used` of `limit`? */
export function keepsBodies(used: number, bytes: number, limit: number | undefined): boolean {
  return limit === undefined || used + bytes <= limit;
}

export class RecordedQuota {
  readonly #o: RecordedQuotaOptions;
  readonly #measured = new Map<string, Measured>();
  readonly #logged = new Map<string, number>();

  constructor(options: RecordedQuotaOptions) {
    this.#o = options;
  }

  /**
   * The exchange as it may be stored for this function: whole, or without
   * its bodies when its namespace is at its quota. Never waits for the
   * store: a namespace not measured yet (or being re-measured) is judged on
   * what is known, and measured in the background.
   */
  admit(fn: FunctionRecord, exchange: RecordedExchange): RecordedExchange {
    const limit = this.#o.limitOf(fn.namespace);
    if (limit === undefined) return exchange;
    const now = this.#o.now();
    const m = this.#measure(fn.namespace, now);
    const bytes = recordedExchangeBytes(exchange);
    const used = m.bytes + m.since;
    if (keepsBodies(used, bytes, limit)) {
      m.since += bytes;
      return exchange;
    }
    this.#o.metrics?.refused('namespace_recorded_bytes');
    this.#log(fn, used, limit, now);
    const reason = `namespace ${fn.namespace} stores ${used} of ${limit} bytes of recorded requests (namespace_recorded_bytes), so this body was not kept`;
    const stripped = withoutBodies(exchange, reason);
    m.since += recordedExchangeBytes(stripped);
    return stripped;
  }

  #measure(namespace: string, now: number): Measured {
    let m = this.#measured.get(namespace);
    if (m === undefined) {
      m = { bytes: 0, at: -Infinity, since: 0 };
      this.#measured.set(namespace, m);
    }
    if (now - m.at >= REFRESH_MS && m.refreshing === undefined) {
      const entry = m;
      const ids = this.#o.functionsOf(namespace).map((f) => f.function_id);
      // What was admitted before the measure began is taken as in it (the log
      // writer stores records within milliseconds); what is admitted while it
      // runs is kept on top (counted twice if it was stored in time: an
      // overcount, never an undercount, of one measure's duration).
      const before = entry.since;
      entry.refreshing = this.#o.exchanges.recordedBytes(ids, now).then(
        (bytes) => {
          entry.bytes = bytes;
          entry.at = now;
          entry.since -= before;
        },
        (err: unknown) => {
          // Judged on the last measure meanwhile; retried at the next call after the interval.
          entry.at = now;
          this.#o.metrics?.backgroundFailed('recorded_bytes_measure');
          this.#o.logger?.error('measuring recorded bytes failed', { namespace, error: (err as Error).message });
        },
      ).finally(() => {
        entry.refreshing = undefined;
      });
    }
    return m;
  }

  /** Waits for measures in progress (tests, and a first measure before judging). */
  async settled(): Promise<void> {
    await Promise.all([...this.#measured.values()].map((m) => m.refreshing));
  }

  #log(fn: FunctionRecord, used: number, limit: number, now: number): void {
    const last = this.#logged.get(fn.function_id);
    if (last !== undefined && now - last < 60_000) return;
    if (this.#logged.size > 10_000) this.#logged.clear();
    this.#logged.set(fn.function_id, now);
    this.#o.logger?.warn('recorded bodies not kept: namespace quota (logged once a minute per function)', {
      function_id: fn.function_id, name: fn.name, namespace: fn.namespace, quota: 'namespace_recorded_bytes', used, limit,
    });
  }
}
