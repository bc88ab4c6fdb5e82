import type { Stores } from '../../stores.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { BackgroundCheckpointer } from './checkpointer.ts';
import { SqliteCodeStore } from './code.ts';
import { SqliteDb } from './db.ts';
import { SqliteExchangeStore } from './exchanges.ts';
import { SqliteFunctionIdHomeStore } from './homes.ts';
import { SqliteInstanceStore } from './instances.ts';
import { SqliteInsightStore } from './insight.ts';
import { SqliteLogStore } from './logs.ts';
import { SqliteCounterStore, SqliteFunctionStore, SqliteKvStore, SqlitePolicyStore } from './records.ts';
import { prepareDatabase } from './schema.ts';
import { SqliteScheduleRunStore } from './schedule-runs.ts';
import { SqliteSessionStore } from './sessions.ts';

// The one-machine store: every seam of core/src/stores.ts on Node's built-in
// node:sqlite. Calls are synchronous inside (one connection, no thread pool);
// the interface is async so that MongoDB can implement it too.

export interface SqliteStoreOptions {
  /** A database file path, created if missing; `:memory:` for a throwaway database. */
  path: string;
  /**
   * Checkpoint the WAL on a worker thread instead of on the committing
   * connection (./checkpointer.ts): the gateway's choice, so a commit never
   * waits for the database file's fsync on its event loop.
   */
  backgroundCheckpoints?: boolean;
  /**
   * The code store's folder (blobs under <codeDir>/sha256/): `code` beside the database file by
   * default (the data folder's `code/`); a folder of its own removed at close for `:memory:`.
   */
  codeDir?: string;
}

export function openSqliteStores(options: SqliteStoreOptions): Stores {
  const db = new SqliteDb(options.path);
  try {
    prepareDatabase(db.db, options.path);
  } catch (err) {
    db.close();
    throw err;
  }
  const scratch = options.codeDir === undefined && options.path === ':memory:' ? mkdtempSync(join(tmpdir(), 'fnhost-code-')) : undefined;
  const codeDir = options.codeDir ?? scratch ?? join(dirname(options.path), 'code');
  let code: SqliteCodeStore;
  try {
    code = new SqliteCodeStore(db, codeDir);
  } catch (err) {
    db.close();
    throw err;
  }
  const checkpointer = options.backgroundCheckpoints === true && options.path !== ':memory:' ? new BackgroundCheckpointer(db) : undefined;
  return {
    functions: new SqliteFunctionStore(db),
    homes: new SqliteFunctionIdHomeStore(db),
    logs: new SqliteLogStore(db),
    insight: new SqliteInsightStore(db),
    exchanges: new SqliteExchangeStore(db),
    counters: new SqliteCounterStore(db),
    kv: new SqliteKvStore(db),
    policies: new SqlitePolicyStore(db),
    instances: new SqliteInstanceStore(db),
    sessions: new SqliteSessionStore(db),
    scheduleRuns: new SqliteScheduleRunStore(db),
    code,
    close: async () => {
      await checkpointer?.stop();
      db.close();
      if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
    },
  };
}

export { SCHEMA_VERSION } from './schema.ts';
export { planPage, statusClass, CLASS_ERROR, CLASS_OTHER, CLASS_SUCCESS } from './logs.ts';
export { prefixUpperBound } from './records.ts';
