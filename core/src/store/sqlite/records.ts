import { randomUUID } from 'node:crypto';
import { NotFoundError } from '../../errors.ts';
import type { FunctionRecord, NetworkPolicy, NetworkPolicyChange } from '../../model.ts';
import { checkKvQuota, kvEntryBytes, type KvQuota, type KvSetResult, type KvUsage } from '../../kv-quota.ts';
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

  // Usage is exact: kv_usage counts the stored rows, and a write first
  // deletes the function's expired rows (kv_by_expiry: only those, each once)
  // in the same transaction, so stored equals live when the quota is checked.
  set(namespace: string, key: string, json: string, ttlSeconds: number | null, now: number, quota?: KvQuota): Promise<KvSetResult> {
    return this.db.guard('kv set', () => this.db.transaction((): KvSetResult => {
      this.purgeExpired(namespace, now);
      const bytes = kvEntryBytes(key, json);
      const old = this.db.get<{ bytes: number }>('SELECT bytes FROM kv WHERE namespace = ? AND key = ?', namespace, key);
      const dKeys = old === undefined ? 1 : 0;
      const dBytes = bytes - (old?.bytes ?? 0);
      if (quota !== undefined) {
        const refusal = checkKvQuota(this.stored(namespace), dKeys, dBytes, quota);
        if (refusal !== null) return { stored: false, ...refusal };
        if (quota.group?.maxBytes !== undefined && dBytes > 0) {
          const total = this.groupUsageSync(quota.group.id, now).bytes;
          if (total + dBytes > quota.group.maxBytes) return { stored: false, quota: 'namespace_kv_bytes', used: total, limit: quota.group.maxBytes };
        }
      }
      const expiresAt = ttlSeconds === null ? null : now + ttlSeconds * 1000;
      this.db.run(
        'INSERT INTO kv (namespace, key, value, expires_at, bytes) VALUES (?, ?, ?, ?, ?) ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at, bytes = excluded.bytes',
        namespace, key, json, expiresAt, bytes,
      );
      this.addUsage(namespace, dKeys, dBytes, quota?.group?.id);
      return { stored: true };
    }));
  }

  usage(namespace: string, now: number): Promise<KvUsage> {
    return this.db.guard('kv usage', () => {
      const stored = this.stored(namespace);
      const expired = this.db.get<{ keys: number; bytes: number }>(
        'SELECT count(*) AS keys, coalesce(sum(bytes), 0) AS bytes FROM kv WHERE namespace = ? AND expires_at IS NOT NULL AND expires_at <= ?', namespace, now)!;
      return { keys: stored.keys - expired.keys, bytes: stored.bytes - expired.bytes };
    });
  }

  groupUsage(group: string, now: number): Promise<KvUsage> {
    return this.db.guard('kv group usage', () => this.groupUsageSync(group, now));
  }

  has(namespace: string, key: string, now: number): Promise<boolean> {
    return this.db.guard('kv has', () =>
      this.db.get('SELECT 1 AS x FROM kv WHERE namespace = ? AND key = ? AND (expires_at IS NULL OR expires_at > ?)', namespace, key, now) !== undefined);
  }

  delete(namespace: string, key: string): Promise<boolean> {
    return this.db.guard('kv delete', () => this.db.transaction(() => {
      const old = this.db.get<{ bytes: number }>('SELECT bytes FROM kv WHERE namespace = ? AND key = ?', namespace, key);
      if (old === undefined) return false;
      this.db.run('DELETE FROM kv WHERE namespace = ? AND key = ?', namespace, key);
      this.addUsage(namespace, -1, -old.bytes);
      return true;
    }));
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
    return this.db.guard('kv sweep', () => this.db.transaction(() => {
      const expired = this.db.all<{ namespace: string; keys: number; bytes: number }>(
        'SELECT namespace, count(*) AS keys, sum(bytes) AS bytes FROM kv WHERE expires_at IS NOT NULL AND expires_at <= ? GROUP BY namespace', now);
      for (const e of expired) this.addUsage(e.namespace, -e.keys, -e.bytes);
      return Number(this.db.run('DELETE FROM kv WHERE expires_at IS NOT NULL AND expires_at <= ?', now).changes);
    }));
  }

  deleteNamespace(namespace: string): Promise<void> {
    return this.db.guard('kv namespace delete', () => this.db.transaction(() => {
      this.db.run('DELETE FROM kv WHERE namespace = ?', namespace);
      this.db.run('DELETE FROM kv_usage WHERE namespace = ?', namespace);
    }));
  }

  /** Deletes the namespace's expired rows and takes them off its usage (inside the caller's transaction). */
  private purgeExpired(namespace: string, now: number): void {
    const expired = this.db.get<{ keys: number; bytes: number }>(
      'SELECT count(*) AS keys, coalesce(sum(bytes), 0) AS bytes FROM kv WHERE namespace = ? AND expires_at IS NOT NULL AND expires_at <= ?', namespace, now)!;
    if (expired.keys === 0) return;
    this.db.run('DELETE FROM kv WHERE namespace = ? AND expires_at IS NOT NULL AND expires_at <= ?', namespace, now);
    this.addUsage(namespace, -expired.keys, -expired.bytes);
  }

  private stored(namespace: string): KvUsage {
    return this.db.get<KvUsage>('SELECT keys, bytes FROM kv_usage WHERE namespace = ?', namespace) ?? { keys: 0, bytes: 0 };
  }

  private addUsage(namespace: string, dKeys: number, dBytes: number, group?: string): void {
    if (dKeys === 0 && dBytes === 0 && group === undefined) return;
    this.db.run(
      'INSERT INTO kv_usage (namespace, grp, keys, bytes) VALUES (?, ?, ?, ?) ON CONFLICT (namespace) DO UPDATE SET keys = keys + excluded.keys, bytes = bytes + excluded.bytes, grp = coalesce(excluded.grp, grp)',
      namespace, group ?? null, dKeys, dBytes,
    );
  }

  private groupUsageSync(group: string, now: number): KvUsage {
    const stored = this.db.get<KvUsage>('SELECT coalesce(sum(keys), 0) AS keys, coalesce(sum(bytes), 0) AS bytes FROM kv_usage WHERE grp = ?', group)!;
    const expired = this.db.get<KvUsage>(
      'SELECT count(*) AS keys, coalesce(sum(k.bytes), 0) AS bytes FROM kv_usage u JOIN kv k ON k.namespace = u.namespace WHERE u.grp = ? AND k.expires_at IS NOT NULL AND k.expires_at <= ?',
      group, now)!;
    return { keys: stored.keys - expired.keys, bytes: stored.bytes - expired.bytes };
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

  changeScopes(limit: number): Promise<Array<Pick<NetworkPolicyChange, 'id' | 'scope'>>> {
    return this.db.guard('policy change scopes', () => this.db.all<{ id: string; scope: string }>('SELECT id, scope FROM network_policy_changes ORDER BY seq DESC LIMIT ?', limit));
  }

  private read(scope: PolicyScope): NetworkPolicy | null {
    const row = this.db.get<{ policy: string }>('SELECT policy FROM network_policies WHERE scope = ?', scope);
    return row === undefined ? null : (JSON.parse(row.policy) as NetworkPolicy);
  }
}

function jsonOrNull(value: unknown): string | null {
  return value === null ? null : JSON.stringify(value);
}
