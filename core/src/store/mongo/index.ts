import { MongoClient, type MongoClientOptions } from 'mongodb';
import { ValidationError } from '../../errors.ts';
import type { Stores } from '../../stores.ts';
import { ensureCodeIndexes, MongoCodeStore } from './code.ts';
import { MongoContext } from './context.ts';
import { ensureExchangeIndexes, MongoExchangeStore } from './exchanges.ts';
import { MongoFunctionIdHomeStore } from './homes.ts';
import { ensureInstanceIndexes, MongoInstanceStore } from './instances.ts';
import { ensureLogIndexes, MongoLogStore } from './logs.ts';
import { ensureInsightIndexes, MongoInsightStore } from './insight.ts';
import { ensureRecordIndexes, MongoCounterStore, MongoFunctionStore, MongoKvStore, MongoPolicyStore } from './records.ts';
import { ensureScheduleRunIndexes, MongoScheduleRunStore } from './schedule-runs.ts';
import { ensureSessionIndexes, MongoSessionStore } from './sessions.ts';
import { DEFAULT_RETRY, runWithRetry, type RetryOptions } from './retry.ts';

// The cluster store: every seam of core/src/stores.ts on MongoDB with the
// official driver, for MONGODB_URL (see docs/mongodb.md for the collections,
// indexes, retention and durability).

export interface MongoStoreOptions {
  /** A mongodb:// or mongodb+srv:// connection string (MONGODB_URL). */
  url: string;
  /** Database name; `fnhost` unless the URL's path or this option names one. */
  dbName?: string;
  /** How long the driver waits for a server before an operation fails (then our retry takes over). */
  serverSelectionTimeoutMS?: number;
  /** Retry policy for operations that could not reach the server. */
  retry?: Partial<RetryOptions>;
  /** Pages that start this many records from both ends or more are found through the count buckets (tests lower it). */
  deepPageSeekFrom?: number;
  /** Extra driver options (TLS, auth source, pool size...). */
  clientOptions?: MongoClientOptions;
}

export async function openMongoStores(options: MongoStoreOptions): Promise<Stores> {
  if (!/^mongodb(\+srv)?:\/\//.test(options.url)) {
    throw new ValidationError(`MONGODB_URL must start with mongodb:// or mongodb+srv://, got "${redactUrl(options.url)}"`);
  }
  const retry: RetryOptions = { ...DEFAULT_RETRY, ...options.retry };
  const client = new MongoClient(options.url, {
    serverSelectionTimeoutMS: options.serverSelectionTimeoutMS ?? 5_000,
    retryWrites: true,
    retryReads: true,
    appName: 'fnhost',
    ...options.clientOptions,
  });
  const db = client.db(options.dbName ?? dbNameFromUrl(options.url) ?? 'fnhost');
  try {
    await runWithRetry(`connect to ${redactUrl(options.url)}`, true, async () => {
      await client.connect();
      await ensureLogIndexes(db);
      await ensureInsightIndexes(db);
      await ensureExchangeIndexes(db);
      await ensureRecordIndexes(db);
      await ensureInstanceIndexes(db);
      await ensureSessionIndexes(db);
      await ensureScheduleRunIndexes(db);
      await ensureCodeIndexes(db);
    }, retry);
  } catch (err) {
    await client.close().catch(() => {});
    throw err;
  }
  const ctx = new MongoContext(retry);
  return {
    functions: new MongoFunctionStore(db, ctx),
    homes: new MongoFunctionIdHomeStore(db, ctx),
    logs: new MongoLogStore(db, ctx, { seekFrom: options.deepPageSeekFrom }),
    insight: new MongoInsightStore(db, ctx),
    exchanges: new MongoExchangeStore(db, ctx),
    counters: new MongoCounterStore(db, ctx),
    kv: new MongoKvStore(db, ctx),
    policies: new MongoPolicyStore(db, ctx),
    instances: new MongoInstanceStore(db, ctx),
    sessions: new MongoSessionStore(db, ctx),
    scheduleRuns: new MongoScheduleRunStore(db, ctx),
    code: new MongoCodeStore(db, ctx),
    close: () => client.close(),
  };
}

/** The database named in a connection string's path, if any. */
export function dbNameFromUrl(url: string): string | null {
  const match = /^mongodb(?:\+srv)?:\/\/[^/]+\/([^?]+)/.exec(url);
  return match ? decodeURIComponent(match[1]!) : null;
}

/** The URL with any password replaced, for messages and logs. */
export function redactUrl(url: string): string {
  return url.replace(/^(mongodb(?:\+srv)?:\/\/[^:/@]+):[^@/]*@/, '$1:***@');
}

export { MongoLogStore, bucketsFrom, planPage, statusClass, minuteOf } from './logs.ts';
export { prefixPattern } from './records.ts';
export { backoffDelay, isConnectionError, runWithRetry, DEFAULT_RETRY, type RetryOptions } from './retry.ts';
