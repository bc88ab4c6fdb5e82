import type { DatabaseSync } from 'node:sqlite';
import { StoreError } from '../../errors.ts';

// The schema, created idempotently at open. `PRAGMA user_version` records the
// version a database file was last migrated to; MIGRATIONS[i] moves a database
// from version i to i + 1, so a later release appends, never edits.

export const SCHEMA_VERSION = 16;

const MIGRATIONS: readonly string[] = [
  // 0 -> 1: the first schema.
  `
  CREATE TABLE IF NOT EXISTS functions (
    function_id TEXT PRIMARY KEY,
    namespace   TEXT NOT NULL,
    name        TEXT NOT NULL,
    record      TEXT NOT NULL,            -- the FunctionRecord as JSON
    UNIQUE (namespace, name)
  );
  CREATE INDEX IF NOT EXISTS functions_by_name ON functions (name, namespace);

  -- One row per execution. seq (the rowid) is the insertion order, the
  -- tie-break for equal executed_ms. class: 1 success (2xx), 2 error (>= 400),
  -- 0 neither (1xx, 3xx). No expires_at column: expiry is derived from
  -- executed_ms and the policy in force, so a policy change rewrites nothing.
  -- A small integer per function with logs: index entries of (fn,
  -- executed_ms, seq) are ~3x smaller than with a 36-character UUID, and deep
  -- pages and counts walk that many fewer pages.
  CREATE TABLE IF NOT EXISTS log_functions (
    fn          INTEGER PRIMARY KEY,
    function_id TEXT NOT NULL UNIQUE
  );

  CREATE TABLE IF NOT EXISTS logs (
    seq               INTEGER PRIMARY KEY,
    fn                INTEGER NOT NULL,   -- log_functions.fn
    executed_ms       INTEGER NOT NULL,
    class             INTEGER NOT NULL,
    id                TEXT    NOT NULL,
    status_code       INTEGER NOT NULL,
    execution_time_ms INTEGER NOT NULL,
    error_message     TEXT,
    trigger           TEXT    NOT NULL
  );
  -- Both indexes end in the rowid (seq), so (executed_ms DESC, seq DESC) is
  -- index order, and the page subqueries read the index alone (covering).
  CREATE INDEX IF NOT EXISTS logs_by_time ON logs (fn, executed_ms);
  CREATE INDEX IF NOT EXISTS logs_by_class_time ON logs (fn, class, executed_ms);

  -- Maintained per function and class in the same transaction as every insert
  -- and delete of logs, so totalCount never scans.
  CREATE TABLE IF NOT EXISTS log_counts (
    fn    INTEGER NOT NULL,
    class INTEGER NOT NULL,
    n     INTEGER NOT NULL,
    PRIMARY KEY (fn, class)
  ) WITHOUT ROWID;

  -- Total executions ever; retention never lowers it.
  CREATE TABLE IF NOT EXISTS execution_counters (
    function_id TEXT PRIMARY KEY,
    total       INTEGER NOT NULL
  ) WITHOUT ROWID;

  CREATE TABLE IF NOT EXISTS kv (
    namespace  TEXT NOT NULL,
    key        TEXT NOT NULL,
    value      TEXT NOT NULL,
    expires_at INTEGER,                   -- ms since epoch; NULL never expires
    PRIMARY KEY (namespace, key)
  ) WITHOUT ROWID;
  CREATE INDEX IF NOT EXISTS kv_expiry ON kv (expires_at) WHERE expires_at IS NOT NULL;

  CREATE TABLE IF NOT EXISTS network_policies (
    scope  TEXT PRIMARY KEY,
    policy TEXT NOT NULL
  ) WITHOUT ROWID;

  CREATE TABLE IF NOT EXISTS network_policy_changes (
    seq    INTEGER PRIMARY KEY,
    id     TEXT NOT NULL UNIQUE,
    scope  TEXT NOT NULL,
    actor  TEXT NOT NULL,
    at     TEXT NOT NULL,
    before TEXT,
    after  TEXT
  );
  `,
  // 1 -> 2 and 2 -> 3 built earlier shapes of log_buckets during
  // development; 3 -> 4 drops and rebuilds it, so they do nothing now.
  'SELECT 1',
  'SELECT 1',
  // 3 -> 4: log_buckets, per-day, -hour, -minute and -second log counts, so
  // positions and counts never walk a function's records (see logs.ts);
  // rebuilt from the stored logs.
  `
  DROP TABLE IF EXISTS log_buckets;
  CREATE TABLE log_buckets (
    fn     INTEGER NOT NULL,
    class  INTEGER NOT NULL,              -- 0, 1, 2 as in logs; 3 counts every class
    level  INTEGER NOT NULL,              -- 0 day, 1 hour, 2 minute, 3 second
    bucket INTEGER NOT NULL,              -- floor(executed_ms / width of the level)
    n      INTEGER NOT NULL,
    PRIMARY KEY (fn, class, level, bucket)
  ) WITHOUT ROWID;
  INSERT INTO log_buckets (fn, class, level, bucket, n)
    SELECT fn, class, 0, (executed_ms - ((executed_ms % 86400000) + 86400000) % 86400000) / 86400000 AS b, count(*)
    FROM logs GROUP BY fn, class, b;
  INSERT INTO log_buckets (fn, class, level, bucket, n)
    SELECT fn, class, 1, (executed_ms - ((executed_ms % 3600000) + 3600000) % 3600000) / 3600000 AS b, count(*)
    FROM logs GROUP BY fn, class, b;
  INSERT INTO log_buckets (fn, class, level, bucket, n)
    SELECT fn, class, 2, (executed_ms - ((executed_ms % 60000) + 60000) % 60000) / 60000 AS b, count(*)
    FROM logs GROUP BY fn, class, b;
  INSERT INTO log_buckets (fn, class, level, bucket, n)
    SELECT fn, class, 3, (executed_ms - ((executed_ms % 1000) + 1000) % 1000) / 1000 AS b, count(*)
    FROM logs GROUP BY fn, class, b;
  INSERT INTO log_buckets (fn, class, level, bucket, n)
    SELECT fn, 3, level, bucket, sum(n) FROM log_buckets GROUP BY fn, level, bucket;
  `,
  // 4 -> 5: admin panel sessions (until then in the gateway's memory), so a
  // restarted gateway keeps them. id_hash is the SHA-256 (hex) of the
  // cookie's session id: the id itself is never stored.
  `
  CREATE TABLE IF NOT EXISTS admin_sessions (
    id_hash      TEXT PRIMARY KEY,
    label        TEXT NOT NULL,
    csrf         TEXT NOT NULL,
    created_ms   INTEGER NOT NULL,
    last_seen_ms INTEGER NOT NULL,
    expires_ms   INTEGER NOT NULL
  ) WITHOUT ROWID;
  CREATE INDEX IF NOT EXISTS admin_sessions_expiry ON admin_sessions (expires_ms);
  CREATE INDEX IF NOT EXISTS admin_sessions_created ON admin_sessions (created_ms);
  `,
  // 5 -> 6: gateway instances, so the records a killed gateway had queued
  // are counted (core/src/store/sqlite/instances.ts). accepted and written
  // are the writer's cumulative counts; ended_ms, how, by, lost and recovered
  // are set when it ended (shut down, or claimed as dead by another gateway).
  `
  CREATE TABLE IF NOT EXISTS gateway_instances (
    id           TEXT PRIMARY KEY,
    host         TEXT NOT NULL,
    pid          INTEGER NOT NULL,
    started_ms   INTEGER NOT NULL,
    heartbeat_ms INTEGER NOT NULL,
    accepted     INTEGER NOT NULL,
    written      INTEGER NOT NULL,
    ended_ms     INTEGER,
    how          TEXT,                    -- 'shutdown' or 'claimed'
    by           TEXT,                    -- the claiming instance
    lost         INTEGER,
    recovered    INTEGER
  ) WITHOUT ROWID;
  `,
  // 6 -> 7: a thrown error's stack, mapped to the user's sources (ExecutionLog.error_stack).
  `
  ALTER TABLE logs ADD COLUMN error_stack TEXT;
  `,
  // 7 -> 8: execution insight (core/src/insight.ts, sqlite/insight.ts): whether a call waited for a
  // runtime and how long; a record's console output, kept while its record is; latency
  // histogram rows per function, minute and hour, kept at write time.
  `
  ALTER TABLE logs ADD COLUMN cold_start INTEGER;
  ALTER TABLE logs ADD COLUMN wait_ms INTEGER;
  -- Looking a record up by its id (the API's GET .../logs/{id}).
  CREATE INDEX IF NOT EXISTS logs_by_id ON logs (id);
  -- A rowid table: its rows (~1 KB of JSON) are too large for WITHOUT ROWID to pay.
  CREATE TABLE IF NOT EXISTS console_output (
    log_id      TEXT NOT NULL,
    function_id TEXT NOT NULL,            -- the posting runtime's: output never lands on another function's record
    stored_ms   INTEGER NOT NULL,
    output      TEXT NOT NULL,            -- ConsoleOutput as JSON
    UNIQUE (log_id, function_id)
  );
  CREATE TABLE IF NOT EXISTS latency_buckets (
    function_id TEXT NOT NULL,
    level       INTEGER NOT NULL,         -- 0 minute, 1 hour
    slot        INTEGER NOT NULL,         -- floor(executed_ms / width of the level)
    bin         INTEGER NOT NULL,         -- insight.ts LATENCY_BOUNDS_MS
    n           INTEGER NOT NULL,
    cold        INTEGER NOT NULL,
    PRIMARY KEY (function_id, level, slot, bin)
  ) WITHOUT ROWID;
  CREATE INDEX IF NOT EXISTS latency_by_slot ON latency_buckets (level, slot);
  `,
  // 8 -> 9: recorded requests and responses for replay (core/src/store/sqlite/exchanges.ts),
  // one row per record of a function that records them. Keyed by the record's
  // seq, so deleting the record (retention, a deleted function) deletes it too
  // (ON DELETE CASCADE looks it up by its primary key); found by log id.
  `
  CREATE TABLE IF NOT EXISTS log_exchanges (
    seq      INTEGER PRIMARY KEY REFERENCES logs (seq) ON DELETE CASCADE,
    id       TEXT NOT NULL UNIQUE,
    exchange TEXT NOT NULL              -- the RecordedExchange as JSON
  );
  `,
  // 9 -> 10: the ledger of scheduled runs (core/src/schedule-ledger.ts, sqlite/schedule-runs.ts):
  // one row per planned run, ran or missed, and per manual run, bounded per
  // function; and logs.manual, 1 on a schedule run fired by hand (ExecutionLog.manual).
  `
  ALTER TABLE logs ADD COLUMN manual INTEGER;
  CREATE TABLE IF NOT EXISTS schedule_runs (
    seq               INTEGER PRIMARY KEY,
    function_id       TEXT    NOT NULL,
    planned_ms        INTEGER NOT NULL,
    manual            INTEGER NOT NULL,   -- 1 fired by hand
    outcome           TEXT    NOT NULL,   -- 'ran' or 'missed'
    missed_reason     TEXT,
    log_id            TEXT,
    status_code       INTEGER,
    execution_time_ms INTEGER,
    started_ms        INTEGER,
    expires_ms        INTEGER             -- NULL: kept until the per-function bound drops it
  );
  CREATE INDEX IF NOT EXISTS schedule_runs_by_function ON schedule_runs (function_id, planned_ms);
  CREATE INDEX IF NOT EXISTS schedule_runs_expiry ON schedule_runs (expires_ms) WHERE expires_ms IS NOT NULL;
  `,
  // 10 -> 11: log_exchanges without its own id column: its UNIQUE index cost
  // every recorded execution a second b-tree insert (~7 us of ~30 per row,
  // bench/RESULTS.md P1); an exchange is found through its record
  // (logs_by_id), whose seq is the exchange's key. SQLite cannot drop a
  // constraint, so the table is rebuilt (its rows copied once).
  `
  CREATE TABLE log_exchanges_by_seq (
    seq      INTEGER PRIMARY KEY REFERENCES logs (seq) ON DELETE CASCADE,
    exchange TEXT NOT NULL              -- the RecordedExchange as JSON
  );
  INSERT INTO log_exchanges_by_seq (seq, exchange) SELECT seq, exchange FROM log_exchanges;
  DROP TABLE log_exchanges;
  ALTER TABLE log_exchanges_by_seq RENAME TO log_exchanges;
  `,
  // 11 -> 12: KV quotas (core/src/kv-quota.ts). kv.bytes is a key's UTF-8
  // key plus JSON value, so usage never reads values; kv_usage holds each
  // function's stored keys and bytes, kept in the same transaction as every
  // KV write, delete and sweep (grp: the Kubernetes namespace whose total a
  // quota bounds, when one was given); kv_by_expiry finds one function's
  // expired keys, which usage subtracts and writes delete. Both are filled
  // from the stored keys once.
  `
  ALTER TABLE kv ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0;
  UPDATE kv SET bytes = length(CAST(key AS BLOB)) + length(CAST(value AS BLOB));
  CREATE INDEX IF NOT EXISTS kv_by_expiry ON kv (namespace, expires_at) WHERE expires_at IS NOT NULL;
  CREATE TABLE IF NOT EXISTS kv_usage (
    namespace TEXT PRIMARY KEY,
    grp       TEXT,
    keys      INTEGER NOT NULL,
    bytes     INTEGER NOT NULL
  ) WITHOUT ROWID;
  CREATE INDEX IF NOT EXISTS kv_usage_by_group ON kv_usage (grp) WHERE grp IS NOT NULL;
  INSERT INTO kv_usage (namespace, grp, keys, bytes) SELECT namespace, NULL, count(*), sum(bytes) FROM kv GROUP BY namespace;
  `,
  // 12 -> 13: each functionId's home namespace (core/src/function-id-home.ts,
  // sqlite/homes.ts): the FunctionIdHomeStore seam; cluster mode keeps it in MongoDB.
  `
  CREATE TABLE IF NOT EXISTS function_id_homes (
    function_id TEXT PRIMARY KEY,
    namespace   TEXT    NOT NULL,
    name        TEXT    NOT NULL,
    how         TEXT    NOT NULL,   -- 'derived', 'claimed' or 'moved'
    at_ms       INTEGER NOT NULL
  );
  `,
  // 13 -> 14: the code store (core/src/code/, sqlite/code.ts): the blobs' bytes are files under
  // the data folder (code/sha256/<hex>); these tables say which are complete and which
  // namespaces uploaded each (tenancy), with the newest upload (GC's grace runs from it).
  `
  CREATE TABLE IF NOT EXISTS code_blobs (
    digest     TEXT PRIMARY KEY,
    size       INTEGER NOT NULL,
    created_ms INTEGER NOT NULL
  ) WITHOUT ROWID;
  CREATE TABLE IF NOT EXISTS code_uploads (
    digest      TEXT    NOT NULL REFERENCES code_blobs (digest) ON DELETE CASCADE,
    namespace   TEXT    NOT NULL,
    uploaded_ms INTEGER NOT NULL,
    PRIMARY KEY (digest, namespace)
  ) WITHOUT ROWID;
  CREATE INDEX IF NOT EXISTS code_uploads_by_namespace ON code_uploads (namespace);
  `,
  // 14 -> 15 (issue 33): asynchronous invocation
  // (core/src/async-call.ts, sqlite/async-calls.ts). async_calls: one row per
  // accepted call, seq its acceptance order; the request is kept while the
  // call may still be sent or requeued (queued, running, dead), and its bytes
  // are in async_usage (per function; the total is their sum) in the same
  // transaction. async_idempotency: an Idempotency-Key's call until its
  // window ends. logs.async_id and logs.attempt: an async execution's call
  // and attempt number.
  `
  CREATE TABLE IF NOT EXISTS async_calls (
    seq          INTEGER PRIMARY KEY,
    id           TEXT    NOT NULL UNIQUE,
    function_id  TEXT    NOT NULL,
    state        TEXT    NOT NULL,
    accepted_ms  INTEGER NOT NULL,
    attempt      INTEGER NOT NULL,
    next_ms      INTEGER NOT NULL,
    lease_owner  TEXT,
    lease_until  INTEGER,
    attempts     TEXT    NOT NULL,     -- AsyncAttempt[] as JSON
    dead_reason  TEXT,
    result       TEXT,                 -- AsyncResult as JSON
    bytes        INTEGER NOT NULL,
    idem_key     TEXT,
    kept_until   INTEGER,
    finished_ms  INTEGER,
    request      TEXT,                 -- method, path, headers as JSON; NULL once finished
    body         BLOB
  );
  CREATE INDEX IF NOT EXISTS async_due ON async_calls (state, function_id, seq);
  CREATE INDEX IF NOT EXISTS async_by_function ON async_calls (function_id, state, seq);
  CREATE INDEX IF NOT EXISTS async_kept ON async_calls (kept_until) WHERE kept_until IS NOT NULL;
  CREATE TABLE IF NOT EXISTS async_usage (
    function_id TEXT PRIMARY KEY,
    bytes       INTEGER NOT NULL
  ) WITHOUT ROWID;
  CREATE TABLE IF NOT EXISTS async_idempotency (
    function_id TEXT    NOT NULL,
    key         TEXT    NOT NULL,
    call_id     TEXT    NOT NULL,
    until_ms    INTEGER NOT NULL,
    PRIMARY KEY (function_id, key)
  ) WITHOUT ROWID;
  ALTER TABLE logs ADD COLUMN async_id TEXT;
  ALTER TABLE logs ADD COLUMN attempt INTEGER;
  `,
  // 15 -> 16 (issue 33, callbacks): async_calls.callback, the call's
  // X-Callback-Url and its delivery (core/src/async-callback.ts AsyncCallback
  // as JSON); NULL for a call without one. async_callbacks_pending: the few
  // ended calls whose callback is still to be delivered, for the senders'
  // look for callbacks a dead gateway left (claimCallbacks).
  `
  ALTER TABLE async_calls ADD COLUMN callback TEXT;
  CREATE INDEX IF NOT EXISTS async_callbacks_pending ON async_calls (finished_ms) WHERE json_extract(callback, '$.state') = 'pending';
  `,
];

if (MIGRATIONS.length !== SCHEMA_VERSION) throw new Error('schema.ts: MIGRATIONS must have SCHEMA_VERSION entries');

/** Sets the connection up and brings the schema to SCHEMA_VERSION. */
export function prepareDatabase(db: DatabaseSync, path: string): void {
  // WAL: readers never block the writer; NORMAL: a commit is durable at the
  // next checkpoint, the database is never corrupted (the usual WAL pairing).
  if (path !== ':memory:') db.exec('PRAGMA journal_mode = WAL');
  db.exec('PRAGMA synchronous = NORMAL');
  db.exec('PRAGMA foreign_keys = ON');
  db.exec('PRAGMA temp_store = MEMORY');
  // 64 MiB of page cache (allocated as used): the log indexes of a million
  // records fit, and deep pages measured ~1.5x faster than with the 2 MiB default.
  db.exec('PRAGMA cache_size = -65536');
  // After a large transaction, truncate the WAL file back to 64 MiB at checkpoint.
  db.exec('PRAGMA journal_size_limit = 67108864');
  const version = (db.prepare('PRAGMA user_version').get() as { user_version: number }).user_version;
  if (version > SCHEMA_VERSION) {
    throw new StoreError(`the database at ${path} has schema version ${version}, newer than this fnhost understands (${SCHEMA_VERSION}); upgrade fnhost`);
  }
  for (let from = version; from < SCHEMA_VERSION; from++) {
    db.exec('BEGIN IMMEDIATE');
    try {
      db.exec(MIGRATIONS[from]!);
      db.exec(`PRAGMA user_version = ${from + 1}`);
      db.exec('COMMIT');
    } catch (err) {
      db.exec('ROLLBACK');
      throw new StoreError(`migrating the database at ${path} from schema version ${from} failed: ${(err as Error).message}`, { cause: err });
    }
  }
}
