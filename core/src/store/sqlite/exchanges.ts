import type { RecordedExchange, RetentionPolicy, Trigger } from '../../model.ts';
import type { ExchangeLookup, ExchangeStore } from '../../stores.ts';
import type { SqliteDb } from './db.ts';
import { DAY_MS } from './log-row.ts';

// Recorded exchanges on SQLite (table log_exchanges, schema 8 -> 9, rebuilt
// without an id of its own 10 -> 11): a row per record that has one, keyed by
// the record's seq, written in the transaction that inserts the record, and
// deleted with it by the foreign key's ON DELETE CASCADE, so the retention
// sweep and a deleted function need no step of their own. Found through the
// record (logs_by_id), so the row carries no index beyond its key.

/** Inside LogStore.insert's transaction: the exchange of the record just inserted as `seq`. */
export function insertExchangeSync(db: SqliteDb, seq: number | bigint, exchange: RecordedExchange): void {
  db.run('INSERT INTO log_exchanges (seq, exchange) VALUES (?, ?)', seq, JSON.stringify(exchange));
}

interface Found {
  seq: number;
  fn: number;
  executed_ms: number;
  trigger: string;
  exchange: string | null;
}

export class SqliteExchangeStore implements ExchangeStore {
  readonly #db: SqliteDb;

  constructor(db: SqliteDb) {
    this.#db = db;
  }

  get(functionId: string, logId: string, retention: RetentionPolicy, now: number): Promise<ExchangeLookup> {
    return this.#db.guard('exchange read', () => this.#db.snapshot(() => {
      const fn = this.#db.get<{ fn: number }>('SELECT fn FROM log_functions WHERE function_id = ?', functionId)?.fn;
      if (fn === undefined) return { found: false };
      // The record by its id, and its exchange by the record's seq (none: NULL, "not recorded").
      const found = this.#db.get<Found>(
        'SELECT l.seq, l.fn, l.executed_ms, l.trigger, e.exchange FROM logs l INDEXED BY logs_by_id LEFT JOIN log_exchanges e ON e.seq = l.seq WHERE l.id = ? AND l.fn = ?', logId, fn,
      );
      if (found === undefined || found.fn !== fn || !this.#visible(found, retention, now)) return { found: false };
      return {
        found: true,
        executed_at: new Date(found.executed_ms).toISOString(),
        trigger: found.trigger as Trigger,
        exchange: found.exchange === null ? null : JSON.parse(found.exchange) as RecordedExchange,
      };
    }));
  }

  // One machine has one namespace and no namespace quota; this serves the
  // contract (stored exchanges, time retention applied by its sweep).
  recordedBytes(functionIds: readonly string[], _now: number): Promise<number> {
    return this.#db.guard('exchange bytes', () => {
      let total = 0;
      for (const functionId of functionIds) {
        const row = this.#db.get<{ bodies: number; n: number }>(
          `SELECT coalesce(sum(coalesce(length(json_extract(e.exchange, '$.request.body.data')), 0) + coalesce(length(json_extract(e.exchange, '$.response.body.data')), 0)), 0) AS bodies, count(*) AS n
           FROM log_functions f JOIN logs l ON l.fn = f.fn JOIN log_exchanges e ON e.seq = l.seq WHERE f.function_id = ?`, functionId)!;
        total += row.bodies + 1024 * row.n;
      }
      return total;
    });
  }

  /** The retention read filter for one record: within the days, or among the `count` newest. */
  #visible(row: Found, retention: RetentionPolicy, now: number): boolean {
    if (retention.type === 'none') return true;
    if (retention.type === 'time') return row.executed_ms >= now - retention.days * DAY_MS;
    const newer = this.#db.get<{ n: number }>(
      'SELECT count(*) AS n FROM (SELECT 1 FROM logs INDEXED BY logs_by_time WHERE fn = ? AND (executed_ms, seq) > (?, ?) LIMIT ?)',
      row.fn, row.executed_ms, row.seq, retention.count,
    )!.n;
    return newer < retention.count;
  }
}
