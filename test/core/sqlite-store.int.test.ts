import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DatabaseSync } from 'node:sqlite';
import { expect } from 'chai';
import { StoreError } from '../../core/src/errors.ts';
import { openSqliteStores, SCHEMA_VERSION } from '../../core/src/store/sqlite/index.ts';
import { pollUntil } from '../helpers/wait.ts';
import { describeStoreContract, functionRecord, log, CONTRACT_EPOCH } from './store-contract.ts';

// The contract suite against a real SQLite database file, plus what only a
// file-backed store has: durability across close/open, WAL, schema versions.

describe('SQLite store (file)', () => {
  let dir: string;
  let counter = 0;

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'fnhost-sqlite-'));
  });

  after(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  describeStoreContract('SQLite file', async () => openSqliteStores({ path: join(dir, `contract-${++counter}.db`) }));

  it('keeps every kind of record across close and reopen', async () => {
    const path = join(dir, 'reopen.db');
    const fn = functionRecord();
    const records = [log(fn.function_id, CONTRACT_EPOCH, { status_code: 500 }), log(fn.function_id, CONTRACT_EPOCH + 1)];
    const first = openSqliteStores({ path });
    await first.functions.create(fn);
    await first.logs.insert(records);
    await first.counters.add(new Map([[fn.function_id, 2]]));
    await first.kv.set(fn.function_id, 'k', '{"v":1}', null, CONTRACT_EPOCH);
    await first.policies.set('global', { default: 'deny', allow: ['example.com'], deny: [] }, 'admin', CONTRACT_EPOCH);
    await first.close();

    const second = openSqliteStores({ path });
    try {
      expect(await second.functions.get(fn.function_id)).to.deep.equal(fn);
      const page = await second.logs.list(fn.function_id, { status: 'error', limit: 10, page: 1 }, { type: 'none' }, CONTRACT_EPOCH);
      expect(page.logs.map((l) => l.id)).to.deep.equal([records[0]!.id]);
      expect(page.pagination.totalCount).to.equal(1);
      expect(await second.counters.get(fn.function_id)).to.equal(2);
      expect(await second.kv.get(fn.function_id, 'k', CONTRACT_EPOCH)).to.equal('{"v":1}');
      expect(await second.policies.get('global')).to.deep.equal({ default: 'deny', allow: ['example.com'], deny: [] });
      expect((await second.policies.changes(10)).map((c) => c.actor)).to.deep.equal(['admin']);
    } finally {
      await second.close();
    }
  });

  it('two connections on one file: the second sees what the first commits (WAL), and both keep the counts right', async () => {
    const path = join(dir, 'two.db');
    const writer = openSqliteStores({ path });
    const reader = openSqliteStores({ path });
    try {
      const fnId = functionRecord().function_id;
      await writer.logs.insert([log(fnId, CONTRACT_EPOCH, { status_code: 500 }), log(fnId, CONTRACT_EPOCH + 1)]);
      await reader.logs.insert([log(fnId, CONTRACT_EPOCH + 2, { status_code: 503 })]);
      for (const stores of [reader, writer]) {
        const page = await stores.logs.list(fnId, { status: 'error', limit: 10, page: 1 }, { type: 'none' }, CONTRACT_EPOCH);
        expect(page.pagination.totalCount).to.equal(2);
        expect(page.logs.map((l) => l.status_code)).to.deep.equal([503, 500]);
      }
    } finally {
      await writer.close();
      await reader.close();
    }
  });

  it('keeps committed records when the process is killed without closing (SIGKILL)', async function () {
    const path = join(dir, 'killed.db');
    const fnId = functionRecord().function_id;
    const storeModule = fileURLToPath(new URL('../../core/src/store/sqlite/index.ts', import.meta.url));
    // The child commits 3 batches, says so, and waits to be killed.
    const script = `
      const { openSqliteStores } = await import(${JSON.stringify(storeModule)});
      const stores = openSqliteStores({ path: ${JSON.stringify(path)} });
      for (let b = 0; b < 3; b++) {
        const batch = Array.from({ length: 100 }, (_, i) => ({ id: 'log_' + b + '_' + i, function_id: ${JSON.stringify(fnId)},
          status_code: i % 2 ? 200 : 500, execution_time_ms: 1, error_message: null,
          executed_at: new Date(${CONTRACT_EPOCH} + b * 1000 + i).toISOString(), trigger: 'http', expires_at: null }));
        await stores.logs.insert(batch);
        await stores.counters.add(new Map([[${JSON.stringify(fnId)}, 100]]));
      }
      process.stdout.write('committed\\n');
      setInterval(() => {}, 1000);
    `;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      await new Promise<void>((resolve, reject) => {
        let out = '';
        child.stdout!.on('data', (chunk: Buffer) => {
          out += chunk.toString();
          if (out.includes('committed')) resolve();
        });
        child.once('exit', (code) => reject(new Error(`child exited early with ${code}`)));
      });
    } finally {
      child.kill('SIGKILL');
      if (child.exitCode === null && child.signalCode === null) await new Promise((resolve) => child.once('exit', resolve));
    }
    const stores = openSqliteStores({ path });
    try {
      const all = await stores.logs.list(fnId, { status: 'all', limit: 1000, page: 1 }, { type: 'none' }, CONTRACT_EPOCH);
      expect(all.pagination.totalCount).to.equal(300);
      expect(all.logs).to.have.length(300);
      expect((await stores.logs.list(fnId, { status: 'error', limit: 1, page: 1 }, { type: 'none' }, CONTRACT_EPOCH)).pagination.totalCount).to.equal(150);
      expect(await stores.counters.get(fnId)).to.equal(300);
    } finally {
      await stores.close();
    }
  });

  it('opens in WAL mode with the current schema version, and reopening is idempotent', async () => {
    const path = join(dir, 'pragmas.db');
    await openSqliteStores({ path }).close();
    await openSqliteStores({ path }).close();
    const raw = new DatabaseSync(path);
    try {
      expect(raw.prepare('PRAGMA journal_mode').get()).to.deep.equal({ journal_mode: 'wal' });
      expect(raw.prepare('PRAGMA user_version').get()).to.deep.equal({ user_version: SCHEMA_VERSION });
    } finally {
      raw.close();
    }
  });

  it('migrates a version-1 database: the log bucket counts are rebuilt from the stored logs', async () => {
    const path = join(dir, 'migrate.db');
    const fnId = functionRecord().function_id;
    // 300 records over ~10 minutes with bursts in one second, mixed classes.
    const records = Array.from({ length: 300 }, (_, i) => log(fnId, CONTRACT_EPOCH + Math.floor(i / 7) * 13_001 + (i % 7), { status_code: [200, 500, 302][i % 3]! }));
    const first = openSqliteStores({ path });
    await first.logs.insert(records);
    const before = [];
    for (const status of ['all', 'error'] as const) {
      for (let page = 1; page <= 8; page++) before.push(await first.logs.list(fnId, { status, limit: 20, page }, { type: 'count', count: 250 }, CONTRACT_EPOCH));
    }
    await first.close();
    // Back to version 1: the bucket table, the error_stack and manual columns, the execution insight tables and columns,
    // the recorded exchanges, the ledger of scheduled runs and the async calls did not exist yet.
    const raw = new DatabaseSync(path);
    raw.exec(`DROP TABLE log_buckets; ALTER TABLE logs DROP COLUMN error_stack; ALTER TABLE logs DROP COLUMN manual;
      DROP INDEX logs_by_id; ALTER TABLE logs DROP COLUMN cold_start; ALTER TABLE logs DROP COLUMN wait_ms;
      DROP TABLE console_output; DROP TABLE latency_buckets; DROP TABLE log_exchanges; DROP TABLE schedule_runs;
      DROP INDEX kv_by_expiry; DROP TABLE kv_usage; ALTER TABLE kv DROP COLUMN bytes; DROP TABLE async_calls; DROP TABLE async_usage; DROP TABLE async_idempotency; ALTER TABLE logs DROP COLUMN async_id; ALTER TABLE logs DROP COLUMN attempt;
      PRAGMA user_version = 1`);
    raw.close();
    const second = openSqliteStores({ path });
    try {
      const after = [];
      for (const status of ['all', 'error'] as const) {
        for (let page = 1; page <= 8; page++) after.push(await second.logs.list(fnId, { status, limit: 20, page }, { type: 'count', count: 250 }, CONTRACT_EPOCH));
      }
      expect(after).to.deep.equal(before);
      expect(before[0]!.pagination.totalCount).to.equal(250);
      expect(before[7]!.logs).to.have.length(20);
      expect(before[8]!.pagination.totalCount).to.be.within(80, 86);
      expect(before[15]!.logs).to.deep.equal([]);
    } finally {
      await second.close();
    }
    const check = new DatabaseSync(path);
    try {
      expect(check.prepare('PRAGMA user_version').get()).to.deep.equal({ user_version: SCHEMA_VERSION });
    } finally {
      check.close();
    }
  });

  it('recorded exchanges: found through their record, none for a record without one or of another function, gone with their record', async () => {
    const stores = openSqliteStores({ path: join(dir, 'exchanges.db') });
    try {
      const fnId = functionRecord().function_id;
      const other = functionRecord().function_id;
      const exchange = { request: { method: 'POST', path: '/p', query: '', headers: {}, body: { encoding: 'utf8' as const, data: '{"a":1}', size: 7, truncated: false } }, response: null };
      const recorded = { ...log(fnId, CONTRACT_EPOCH), exchange };
      const plain = log(fnId, CONTRACT_EPOCH + 1);
      await stores.logs.insert([recorded, plain, log(other, CONTRACT_EPOCH)]);
      expect(await stores.exchanges.get(fnId, recorded.id, { type: 'none' }, CONTRACT_EPOCH)).to.deep.equal({ found: true, executed_at: recorded.executed_at, trigger: 'http', exchange });
      expect(await stores.exchanges.get(fnId, plain.id, { type: 'none' }, CONTRACT_EPOCH)).to.deep.include({ found: true, exchange: null });
      expect(await stores.exchanges.get(other, recorded.id, { type: 'none' }, CONTRACT_EPOCH)).to.deep.equal({ found: false });
      expect(await stores.exchanges.get(fnId, 'log_none', { type: 'none' }, CONTRACT_EPOCH)).to.deep.equal({ found: false });
      await stores.logs.applyRetention(fnId, { type: 'count', count: 1 }, CONTRACT_EPOCH);
      expect(await stores.exchanges.get(fnId, recorded.id, { type: 'none' }, CONTRACT_EPOCH)).to.deep.equal({ found: false });
    } finally {
      await stores.close();
    }
    const raw = new DatabaseSync(join(dir, 'exchanges.db'));
    try {
      // ON DELETE CASCADE took the exchange with its record; the table keeps no index besides its key.
      expect(raw.prepare('SELECT count(*) AS n FROM log_exchanges').get()).to.deep.equal({ n: 0 });
      expect(raw.prepare(`SELECT name FROM pragma_index_list('log_exchanges')`).all()).to.deep.equal([]);
    } finally {
      raw.close();
    }
  });

  it('migrates recorded exchanges from schema 10 (an id column with a unique index) keeping every row', async () => {
    const path = join(dir, 'exchanges-10.db');
    const fnId = functionRecord().function_id;
    const records = [log(fnId, CONTRACT_EPOCH), log(fnId, CONTRACT_EPOCH + 1)];
    const first = openSqliteStores({ path });
    await first.logs.insert(records);
    await first.close();
    const raw = new DatabaseSync(path);
    raw.exec(`DROP INDEX kv_by_expiry; DROP TABLE kv_usage; ALTER TABLE kv DROP COLUMN bytes; DROP TABLE log_exchanges;
      CREATE TABLE log_exchanges (seq INTEGER PRIMARY KEY REFERENCES logs (seq) ON DELETE CASCADE, id TEXT NOT NULL UNIQUE, exchange TEXT NOT NULL);
      INSERT INTO log_exchanges (seq, id, exchange) SELECT seq, id, json_object('request', json_object('method', 'GET', 'path', '/' || id, 'query', '', 'headers', json_object(), 'body', NULL), 'response', NULL) FROM logs;
      DROP TABLE async_calls; DROP TABLE async_usage; DROP TABLE async_idempotency; ALTER TABLE logs DROP COLUMN async_id; ALTER TABLE logs DROP COLUMN attempt;
      PRAGMA user_version = 10`);
    raw.close();
    const second = openSqliteStores({ path });
    try {
      for (const r of records) {
        const found = await second.exchanges.get(fnId, r.id, { type: 'none' }, CONTRACT_EPOCH);
        expect(found).to.deep.include({ found: true });
        expect((found as { exchange: { request: { path: string } } }).exchange.request.path).to.equal(`/${r.id}`);
      }
    } finally {
      await second.close();
    }
  });

  it('migrates KV from schema 11: each key\'s bytes filled in and each function\'s usage counted, so quotas hold for keys stored before them', async () => {
    const path = join(dir, 'kv-11.db');
    await openSqliteStores({ path }).close();
    const raw = new DatabaseSync(path);
    raw.exec(`DROP INDEX kv_by_expiry; DROP TABLE kv_usage; ALTER TABLE kv DROP COLUMN bytes;
      INSERT INTO kv (namespace, key, value, expires_at) VALUES ('fn-a', 'é', '"✓"', NULL), ('fn-a', 'k2', '12345', NULL), ('fn-b', 'k', '1', NULL);
      DROP TABLE async_calls; DROP TABLE async_usage; DROP TABLE async_idempotency; ALTER TABLE logs DROP COLUMN async_id; ALTER TABLE logs DROP COLUMN attempt;
      PRAGMA user_version = 11`);
    raw.close();
    const stores = openSqliteStores({ path });
    try {
      expect(await stores.kv.usage('fn-a', CONTRACT_EPOCH)).to.deep.equal({ keys: 2, bytes: 2 + 5 + 2 + 5 });
      expect(await stores.kv.usage('fn-b', CONTRACT_EPOCH)).to.deep.equal({ keys: 1, bytes: 2 });
      expect(await stores.kv.set('fn-a', 'k3', '1', null, CONTRACT_EPOCH, { maxBytes: 15, maxKeys: 10 })).to.deep.equal({ stored: false, quota: 'kv_bytes', used: 14, limit: 15 });
    } finally {
      await stores.close();
    }
  });

  it('with background checkpoints, a worker folds the WAL into the file: the writer does not, below its backstop', async () => {
    const path = join(dir, 'checkpoints.db');
    const stores = openSqliteStores({ path, backgroundCheckpoints: true });
    try {
      const raw = new DatabaseSync(path);
      try {
        expect(raw.prepare('PRAGMA page_size').get()).to.deep.equal({ page_size: 4096 });
      } finally {
        raw.close();
      }
      const emptySize = statSync(path).size;
      const fnId = functionRecord().function_id;
      const body = { encoding: 'utf8' as const, data: 'x'.repeat(2000), size: 2000, truncated: false };
      // ~400 records of ~2 KiB: about 1.2 MiB of WAL, well under SQLite's own 1,000-page checkpoint.
      for (let batch = 0; batch < 4; batch++) {
        await stores.logs.insert(Array.from({ length: 100 }, (_, i) => ({ ...log(fnId, CONTRACT_EPOCH + batch * 100 + i), exchange: { request: { method: 'POST', path: '/', query: '', headers: {}, body }, response: null } })));
      }
      await pollUntil('the worker to checkpoint the WAL into the database file', async () => statSync(path).size > emptySize + 500_000, 20_000, 50);
    } finally {
      await stores.close();
    }
    // Closed: the worker's connection too (close folds the rest of the WAL in and removes it).
    expect(existsSync(`${path}-wal`)).to.equal(false);
  });

  it('refuses a database from a newer schema version with StoreError naming both versions', async () => {
    const path = join(dir, 'future.db');
    const raw = new DatabaseSync(path);
    raw.exec(`PRAGMA user_version = ${SCHEMA_VERSION + 5}`);
    raw.close();
    let err: unknown;
    try {
      openSqliteStores({ path });
    } catch (e) {
      err = e;
    }
    expect(err).to.be.instanceOf(StoreError);
    expect((err as Error).message).to.include(String(SCHEMA_VERSION + 5)).and.include(String(SCHEMA_VERSION));
  });

  it('reports a file it cannot open as StoreError with the cause', async () => {
    let err: unknown;
    try {
      openSqliteStores({ path: join(dir, 'no-such-dir', 'x.db') });
    } catch (e) {
      err = e;
    }
    expect(err).to.be.instanceOf(StoreError);
    expect((err as StoreError).cause).to.be.instanceOf(Error);
    expect((err as Error).message).to.include('no-such-dir');
  });

  it('rejects calls after close with StoreError', async () => {
    const stores = openSqliteStores({ path: join(dir, 'closed.db') });
    await stores.close();
    await stores.close();
    let err: unknown;
    try {
      await stores.counters.get('x');
    } catch (e) {
      err = e;
    }
    expect(err).to.be.instanceOf(StoreError);
  });
});

describe('SQLite store (:memory:)', () => {
  describeStoreContract('SQLite :memory:', async () => openSqliteStores({ path: ':memory:' }));
});
