import { randomUUID } from 'node:crypto';
import { NotFoundError } from '../../errors.ts';
import type { FunctionRecord, NetworkPolicy, NetworkPolicyChange } from '../../model.ts';
import type { CounterStore, FunctionStore, KvStore, PolicyScope, PolicyStore } from '../../stores.ts';
import type { SqliteDb } from './db.ts';

// Functions, execution counters, KV and network policies on SQLite.

export class SqliteFunctionStore implements FunctionStore {
  private readonly db: SqliteDb;

  constructor(db: SqliteDb) {
    this.db = db;
  }

  create(fn: FunctionRecord): Promise<void> {
    return this.db.guardConflict(
      'function create',
      () => `a function named "${fn.name}" already exists in namespace "${fn.namespace}", or its id ${fn.function_id} is taken`,
      () => {
        this.db.run('INSERT INTO functions (function_id, namespace, name, record) VALUES (?, ?, ?, ?)',
          fn.function_id, fn.namespace, fn.name, JSON.stringify(fn));
      },
    );
  }

  get(functionId: string): Promise<FunctionRecord | null> {
    return this.db.guard('function get', () => parseRecord(this.db.get<{ record: string }>('SELECT record FROM functions WHERE function_id = ?', functionId)));
  }

  getByName(namespace: string, name: string): Promise<FunctionRecord | null> {
    return this.db.guard('function get', () =>
      parseRecord(this.db.get<{ record: string }>('SELECT record FROM functions WHERE namespace = ? AND name = ?', namespace, name)));
  }

  list(namespace?: string): Promise<FunctionRecord[]> {
    return this.db.guard('function list', () => {
      const rows = namespace === undefined
        ? this.db.all<{ record: string }>('SELECT record FROM functions ORDER BY name, namespace')
        : this.db.all<{ record: string }>('SELECT record FROM functions WHERE namespace = ? ORDER BY name', namespace);
      return rows.map((row) => JSON.parse(row.record) as FunctionRecord);
    });
  }

  update(fn: FunctionRecord): Promise<void> {
    return this.db.guardConflict(
      'function update',
      () => `cannot rename function ${fn.function_id} to "${fn.name}": that name is taken in namespace "${fn.namespace}"`,
      () => {
        const result = this.db.run('UPDATE functions SET namespace = ?, name = ?, record = ? WHERE function_id = ?',
          fn.namespace, fn.name, JSON.stringify(fn), fn.function_id);
        if (Number(result.changes) === 0) throw new NotFoundError(`function ${fn.function_id} ("${fn.name}") does not exist`);
      },
    );
  }

  delete(functionId: string): Promise<boolean> {
    return this.db.guard('function delete', () => Number(this.db.run('DELETE FROM functions WHERE function_id = ?', functionId).changes) > 0);
  }
}

function parseRecord(row: { record: string } | undefined): FunctionRecord | null {
  return row === undefined ? null : (JSON.parse(row.record) as FunctionRecord);
}

/** Adds to execution counters inside the caller's transaction (CounterStore.add, and a writer's batch in SqliteLogStore.insert). */
export function addExecutionsSync(db: SqliteDb, increments: ReadonlyMap<string, number>): void {
  const upsert = db.stmt(
    'INSERT INTO execution_counters (function_id, total) VALUES (?, ?) ON CONFLICT (function_id) DO UPDATE SET total = total + excluded.total',
  );
  for (const [functionId, n] of increments) if (n !== 0) upsert.run(functionId, n);
}

export class SqliteCounterStore implements CounterStore {
  private readonly db: SqliteDb;

  constructor(db: SqliteDb) {
    this.db = db;
  }

  add(increments: ReadonlyMap<string, number>): Promise<void> {
    return this.db.guard('counter add', () => {
      if (increments.size === 0) return;
      this.db.transaction(() => addExecutionsSync(this.db, increments));
    });
  }

  get(functionId: string): Promise<number> {
    return this.db.guard('counter get', () =>
      this.db.get<{ total: number }>('SELECT total FROM execution_counters WHERE function_id = ?', functionId)?.total ?? 0);
  }

  delete(functionId: string): Promise<void> {
    return this.db.guard('counter delete', () => {
      this.db.run('DELETE FROM execution_counters WHERE function_id = ?', functionId);
    });
  }
}

/**
 * The smallest string greater than every string starting with `prefix`, in
 * SQLite's BINARY order (UTF-8 bytes, which is code point order); null when
 * there is none (empty prefix, or only U+10FFFF). Lets a prefix listing be an
 * index range `key >= prefix AND key < upper`.
 */
export function prefixUpperBound(prefix: string): string | null {
  const codePoints = Array.from(prefix, (ch) => ch.codePointAt(0)!);
  while (codePoints.length > 0 && codePoints[codePoints.length - 1] === 0x10ffff) codePoints.pop();
  if (codePoints.length === 0) return null;
  let last = codePoints.pop()! + 1;
  if (last >= 0xd800 && last <= 0xdfff) last = 0xe000; // surrogates are not characters
  return String.fromCodePoint(...codePoints, last);
}

export class SqliteKvStore implements KvStore {
  private readonly db: SqliteDb;

  constructor(db: SqliteDb) {
    this.db = db;
  }

  // Every read compares expires_at with `now`, so an expired key is gone at
  // once even though sweep() removes it later.
  get(namespace: string, key: string, now: number): Promise<string | undefined> {
    return this.db.guard('kv get', () =>
      this.db.get<{ value: string }>('SELECT value FROM kv WHERE namespace = ? AND key = ? AND (expires_at IS NULL OR expires_at > ?)', namespace, key, now)?.value);
  }

  set(namespace: string, key: string, json: string, ttlSeconds: number | null, now: number): Promise<void> {
    return this.db.guard('kv set', () => {
      const expiresAt = ttlSeconds === null ? null : now + ttlSeconds * 1000;
      this.db.run(
        'INSERT INTO kv (namespace, key, value, expires_at) VALUES (?, ?, ?, ?) ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at',
        namespace, key, json, expiresAt,
      );
    });
  }

  has(namespace: string, key: string, now: number): Promise<boolean> {
    return this.db.guard('kv has', () =>
      this.db.get('SELECT 1 AS x FROM kv WHERE namespace = ? AND key = ? AND (expires_at IS NULL OR expires_at > ?)', namespace, key, now) !== undefined);
  }

  delete(namespace: string, key: string): Promise<boolean> {
    return this.db.guard('kv delete', () => Number(this.db.run('DELETE FROM kv WHERE namespace = ? AND key = ?', namespace, key).changes) > 0);
  }

  list(namespace: string, prefix: string, limit: number, now: number): Promise<string[]> {
    return this.db.guard('kv list', () => {
      const upper = prefixUpperBound(prefix);
      const rows = upper === null
        ? this.db.all<{ key: string }>(
          'SELECT key FROM kv WHERE namespace = ? AND key >= ? AND (expires_at IS NULL OR expires_at > ?) ORDER BY key LIMIT ?',
          namespace, prefix, now, limit)
        : this.db.all<{ key: string }>(
          'SELECT key FROM kv WHERE namespace = ? AND key >= ? AND key < ? AND (expires_at IS NULL OR expires_at > ?) ORDER BY key LIMIT ?',
          namespace, prefix, upper, now, limit);
      return rows.map((row) => row.key);
    });
  }

  sweep(now: number): Promise<number> {
    return this.db.guard('kv sweep', () => Number(this.db.run('DELETE FROM kv WHERE expires_at IS NOT NULL AND expires_at <= ?', now).changes));
  }

  deleteNamespace(namespace: string): Promise<void> {
    return this.db.guard('kv namespace delete', () => {
      this.db.run('DELETE FROM kv WHERE namespace = ?', namespace);
    });
  }
}

export class SqlitePolicyStore implements PolicyStore {
  private readonly db: SqliteDb;

  constructor(db: SqliteDb) {
    this.db = db;
  }

  get(scope: PolicyScope): Promise<NetworkPolicy | null> {
    return this.db.guard('policy get', () => this.read(scope));
  }

  set(scope: PolicyScope, policy: NetworkPolicy | null, actor: string, now: number): Promise<NetworkPolicyChange> {
    return this.db.guard('policy set', () =>
      this.db.transaction(() => {
        const change: NetworkPolicyChange = {
          id: 'pch_' + randomUUID(),
          scope,
          actor,
          at: new Date(now).toISOString(),
          before: this.read(scope),
          after: policy,
        };
        if (policy === null) this.db.run('DELETE FROM network_policies WHERE scope = ?', scope);
        else this.db.run('INSERT INTO network_policies (scope, policy) VALUES (?, ?) ON CONFLICT (scope) DO UPDATE SET policy = excluded.policy', scope, JSON.stringify(policy));
        this.db.run('INSERT INTO network_policy_changes (id, scope, actor, at, before, after) VALUES (?, ?, ?, ?, ?, ?)',
          change.id, scope, actor, change.at, jsonOrNull(change.before), jsonOrNull(change.after));
        return change;
      }),
    );
  }

  changes(limit: number): Promise<NetworkPolicyChange[]> {
    return this.db.guard('policy changes', () =>
      this.db.all<{ id: string; scope: string; actor: string; at: string; before: string | null; after: string | null }>(
        'SELECT id, scope, actor, at, before, after FROM network_policy_changes ORDER BY seq DESC LIMIT ?', limit,
      ).map((row) => ({
        id: row.id,
        scope: row.scope,
        actor: row.actor,
        at: row.at,
        before: row.before === null ? null : (JSON.parse(row.before) as NetworkPolicy),
        after: row.after === null ? null : (JSON.parse(row.after) as NetworkPolicy),
      })));
  }

  private read(scope: PolicyScope): NetworkPolicy | null {
    const row = this.db.get<{ policy: string }>('SELECT policy FROM network_policies WHERE scope = ?', scope);
    return row === undefined ? null : (JSON.parse(row.policy) as NetworkPolicy);
  }
}

function jsonOrNull(value: unknown): string | null {
  return value === null ? null : JSON.stringify(value);
}
