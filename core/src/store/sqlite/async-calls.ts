import { lostAttempt } from '../../async-call.ts';
import { pendingCallback } from '../../async-callback.ts';
import type { AsyncCallback } from '../../async-callback.ts';
import type {
  AcceptResult, AsyncAttempt, AsyncBounds, AsyncCall, AsyncCompletionWrite, AsyncRequest, AsyncState, AsyncStats, NewAsyncCall,
} from '../../async-call.ts';
import type { RecountResult, UsageDrift } from '../../async-recount.ts';
import type { AsyncCallStore } from '../../stores.ts';
import type { SqliteDb } from './db.ts';

// The queue of asynchronous calls on SQLite (tables async_calls, async_usage,
// async_idempotency; schema.ts). Each method is one transaction, committed
// before it returns (WAL, synchronous=NORMAL: a commit survives the process's
// death; a power loss may take the last commits, docs/async.md).

interface CallRow {
  seq: number;
  id: string;
  function_id: string;
  state: string;
  accepted_ms: number;
  attempt: number;
  next_ms: number;
  lease_owner: string | null;
  lease_until: number | null;
  attempts: string;
  dead_reason: string | null;
  result: string | null;
  bytes: number;
  idem_key: string | null;
  kept_until: number | null;
  finished_ms: number | null;
  request: string | null;
  body: Uint8Array | null;
  callback: string | null;
}

const COLUMNS = 'seq, id, function_id, state, accepted_ms, attempt, next_ms, lease_owner, lease_until, attempts, dead_reason, result, bytes, idem_key, kept_until, finished_ms, request, body, callback';

function toCall(row: CallRow): AsyncCall {
  let request: AsyncRequest | null = null;
  if (row.request !== null) {
    const head = JSON.parse(row.request) as Omit<AsyncRequest, 'body'>;
    request = { ...head, body: row.body === null ? null : Buffer.from(row.body) };
  }
  return {
    id: row.id,
    function_id: row.function_id,
    state: row.state as AsyncState,
    accepted_at: row.accepted_ms,
    attempt: row.attempt,
    next_at: row.next_ms,
    lease_owner: row.lease_owner,
    lease_until: row.lease_until,
    attempts: JSON.parse(row.attempts) as AsyncAttempt[],
    dead_reason: row.dead_reason as AsyncCall['dead_reason'],
    result: row.result === null ? null : (JSON.parse(row.result) as AsyncCall['result']),
    bytes: row.bytes,
    idempotency_key: row.idem_key,
    kept_until: row.kept_until,
    finished_at: row.finished_ms,
    request,
    callback: row.callback === null ? null : (JSON.parse(row.callback) as AsyncCallback),
  };
}

/** A call as accept() stored it (built here rather than read back). */
function queuedCall(call: NewAsyncCall): AsyncCall {
  return {
    id: call.id, function_id: call.function_id, state: 'queued', accepted_at: call.accepted_at, attempt: 0, next_at: call.accepted_at,
    lease_owner: null, lease_until: null, attempts: [], dead_reason: null, result: null, bytes: call.bytes,
    idempotency_key: call.idempotency_key, kept_until: null, finished_at: null, request: call.request,
    callback: call.callback_url === null ? null : pendingCallback(call.callback_url),
  };
}

function placeholders(n: number): string {
  return Array.from({ length: n }, () => '?').join(', ');
}

/** A callback nobody holds (params: now, staleBefore). Its first term is the partial index async_callbacks_pending's (schema.ts 15 -> 16). */
const FREE_CALLBACK = `json_extract(callback, '$.state') = 'pending' AND state IN ('succeeded', 'failed', 'dead')
      AND (json_extract(callback, '$.lease_until') < ? OR (json_extract(callback, '$.lease_until') IS NULL AND finished_ms < ?))`;

/**
 * The free callbacks, oldest first (params: now, staleBefore, limit). INDEXED BY: left to itself the
 * planner took async_due (state IN (...)) and read every finished call, each through its request
 * body's overflow pages to reach `callback`, the last column: 10.6 ms a poll with 3,000 finished
 * calls of 64 KiB kept, 0.95 ms on the partial index, on every gateway at every poll.
 */
export const PENDING_CALLBACKS_SQL = `SELECT seq FROM async_calls INDEXED BY async_callbacks_pending WHERE ${FREE_CALLBACK} ORDER BY finished_ms LIMIT ?`;

export class SqliteAsyncCallStore implements AsyncCallStore {
  readonly #db: SqliteDb;

  constructor(db: SqliteDb) {
    this.#db = db;
  }

  accept(call: NewAsyncCall, bounds: AsyncBounds, now: number): Promise<AcceptResult> {
    return this.#db.guard('async accept', () =>
      this.#db.transaction((): AcceptResult => {
        if (call.idempotency_key !== null) {
          const seen = this.#db.get<{ call_id: string }>('SELECT call_id FROM async_idempotency WHERE function_id = ? AND key = ? AND until_ms > ?', call.function_id, call.idempotency_key, now);
          if (seen !== undefined) return { outcome: 'duplicate', id: seen.call_id };
        }
        const used = this.#db.get<{ bytes: number }>('SELECT bytes FROM async_usage WHERE function_id = ?', call.function_id)?.bytes ?? 0;
        if (used + call.bytes > bounds.functionBytes) return { outcome: 'full', bound: 'function', used, limit: bounds.functionBytes };
        const total = Number(this.#db.get<{ total: number | null }>('SELECT sum(bytes) AS total FROM async_usage')?.total ?? 0);
        if (total + call.bytes > bounds.totalBytes) return { outcome: 'full', bound: 'total', used: total, limit: bounds.totalBytes };
        const { body, ...head } = call.request;
        this.#db.run(
          `INSERT INTO async_calls (id, function_id, state, accepted_ms, attempt, next_ms, attempts, bytes, idem_key, request, body, callback)
           VALUES (?, ?, 'queued', ?, 0, ?, '[]', ?, ?, ?, ?, ?)`,
          call.id, call.function_id, call.accepted_at, call.accepted_at, call.bytes, call.idempotency_key, JSON.stringify(head), body,
          call.callback_url === null ? null : JSON.stringify(pendingCallback(call.callback_url)),
        );
        this.#addUsage(call.function_id, call.bytes);
        if (call.idempotency_key !== null) {
          this.#db.run(
            'INSERT INTO async_idempotency (function_id, key, call_id, until_ms) VALUES (?, ?, ?, ?) ON CONFLICT (function_id, key) DO UPDATE SET call_id = excluded.call_id, until_ms = excluded.until_ms',
            call.function_id, call.idempotency_key, call.id, now + bounds.idempotencyWindowMs,
          );
        }
        return { outcome: 'accepted', call: queuedCall(call) };
      }));
  }

  dueFunctions(now: number, limit: number): Promise<string[]> {
    return this.#db.guard('async due', () =>
      this.#db.all<{ function_id: string }>("SELECT DISTINCT function_id FROM async_calls WHERE state = 'queued' AND next_ms <= ? LIMIT ?", now, limit).map((r) => r.function_id));
  }

  claim(functionId: string, owner: string, now: number, leaseUntil: number, max: number): Promise<AsyncCall[]> {
    // One statement (atomic on its own): the oldest due calls become this owner's, and come back with their request.
    return this.#db.guard('async claim', () =>
      this.#db.all<CallRow>(
        `UPDATE async_calls SET state = 'running', attempt = attempt + 1, lease_owner = ?, lease_until = ?
         WHERE seq IN (SELECT seq FROM async_calls WHERE function_id = ? AND state = 'queued' AND next_ms <= ? ORDER BY seq LIMIT ?)
         RETURNING ${COLUMNS}`,
        owner, leaseUntil, functionId, now, max,
      ).sort((a, b) => a.seq - b.seq).map(toCall));
  }

  completeMany(writes: readonly AsyncCompletionWrite[], now: number): Promise<boolean[]> {
    if (writes.length === 0) return Promise.resolve([]);
    return this.#db.guard('async complete', () =>
      this.#db.transaction(() => {
        // A finished call no longer holds its request: its bytes leave the queue's count, once per function per batch.
        const released = new Map<string, number>();
        const out = writes.map((w) => {
          const row = this.#completeOne(w, now);
          if (row === undefined) return false;
          if (w.completion.state === 'succeeded' || w.completion.state === 'failed') released.set(row.function_id, (released.get(row.function_id) ?? 0) + row.bytes);
          return true;
        });
        for (const [functionId, bytes] of released) this.#addUsage(functionId, -bytes);
        return out;
      }));
  }

  /** One attempt's end, appended to the call's attempts in SQL (the row, its body included, is not read back). */
  #completeOne(w: AsyncCompletionWrite, now: number): { function_id: string; bytes: number } | undefined {
    const c = w.completion;
    const attempts = c.attempt === null ? 'attempts' : "json_insert(attempts, '$[#]', json(?))";
    const pushed = c.attempt === null ? [] : [JSON.stringify(c.attempt)];
    const where = "WHERE id = ? AND state = 'running' AND lease_owner = ? AND attempt = ? RETURNING function_id, bytes";
    if (c.state === 'queued') {
      return this.#db.get(
        `UPDATE async_calls SET state = 'queued', next_ms = ?, lease_owner = NULL, lease_until = NULL, attempts = ${attempts} ${where}`,
        c.next_at, ...pushed, w.id, w.owner, w.attempt,
      );
    }
    const finished = c.state !== 'dead';
    return this.#db.get(
      `UPDATE async_calls SET state = ?, lease_owner = NULL, lease_until = NULL, attempts = ${attempts}, dead_reason = ?, result = ?, kept_until = ?, finished_ms = ?
       ${finished ? ', request = NULL, body = NULL' : ''} ${where}`,
      c.state, ...pushed, c.state === 'dead' ? c.reason : null, c.result === null ? null : JSON.stringify(c.result), c.kept_until, now,
      w.id, w.owner, w.attempt,
    );
  }

  reap(now: number): Promise<number> {
    return this.#db.guard('async reap', () =>
      this.#db.transaction(() => {
        const rows = this.#db.all<{ seq: number; attempt: number; attempts: string; lease_until: number }>(
          "SELECT seq, attempt, attempts, lease_until FROM async_calls WHERE state = 'running' AND lease_until < ?", now);
        for (const row of rows) {
          const attempts = JSON.parse(row.attempts) as AsyncAttempt[];
          attempts.push(lostAttempt(row.attempt, row.lease_until));
          this.#db.run("UPDATE async_calls SET state = 'queued', next_ms = ?, lease_owner = NULL, lease_until = NULL, attempts = ? WHERE seq = ?", now, JSON.stringify(attempts), row.seq);
        }
        return rows.length;
      }));
  }

  get(functionId: string, id: string): Promise<AsyncCall | null> {
    return this.#db.guard('async get', () => {
      const row = this.#row(functionId, id);
      return row === undefined ? null : toCall(row);
    });
  }

  list(functionId: string, states: readonly AsyncState[], limit: number): Promise<AsyncCall[]> {
    if (states.length === 0) return Promise.resolve([]);
    return this.#db.guard('async list', () =>
      this.#db.all<CallRow>(
        `SELECT ${COLUMNS} FROM async_calls WHERE function_id = ? AND state IN (${placeholders(states.length)}) ORDER BY seq LIMIT ?`,
        functionId, ...states, limit,
      ).map(toCall));
  }

  requeue(functionId: string, ids: readonly string[] | 'all', now: number): Promise<number> {
    return this.#db.guard('async requeue', () =>
      this.#db.transaction(() => {
        const set = "SET state = 'queued', attempt = 0, next_ms = ?, accepted_ms = ?, dead_reason = NULL, result = NULL, kept_until = NULL, finished_ms = NULL";
        if (ids === 'all') return Number(this.#db.run(`UPDATE async_calls ${set} WHERE function_id = ? AND state = 'dead'`, now, now, functionId).changes);
        let n = 0;
        for (const id of ids) n += Number(this.#db.run(`UPDATE async_calls ${set} WHERE function_id = ? AND id = ? AND state = 'dead'`, now, now, functionId, id).changes);
        return n;
      }));
  }

  setCallback(functionId: string, id: string, callback: AsyncCallback): Promise<boolean> {
    return this.#db.guard('async callback', () =>
      Number(this.#db.run('UPDATE async_calls SET callback = ? WHERE id = ? AND function_id = ? AND callback IS NOT NULL', JSON.stringify(callback), id, functionId).changes) === 1);
  }

  claimCallbacks(now: number, staleBefore: number, leaseUntil: number, max: number): Promise<AsyncCall[]> {
    return this.#db.guard('async callbacks', () => {
      // Looked for without a write transaction: every gateway looks every poll, and there is mostly nothing.
      const found = this.#db.all<{ seq: number }>(PENDING_CALLBACKS_SQL, now, staleBefore, max);
      if (found.length === 0) return [];
      return this.#db.transaction(() => {
        const out: AsyncCall[] = [];
        for (const { seq } of found) {
          // Taken only if still free: another gateway may have taken it meanwhile.
          const taken = Number(this.#db.run(`UPDATE async_calls SET callback = json_set(callback, '$.lease_until', ?) WHERE seq = ? AND ${FREE_CALLBACK}`, leaseUntil, seq, now, staleBefore).changes);
          if (taken === 1) out.push(toCall(this.#db.get<CallRow>(`SELECT ${COLUMNS} FROM async_calls WHERE seq = ?`, seq)!));
        }
        return out;
      });
    });
  }

  stats(): Promise<AsyncStats> {
    return this.#db.guard('async stats', () => {
      const counts = this.#db.all<{ state: string; n: number }>("SELECT state, count(*) AS n FROM async_calls WHERE state IN ('queued', 'running', 'dead') GROUP BY state");
      const by = new Map(counts.map((c) => [c.state, Number(c.n)]));
      const oldest = this.#db.get<{ at: number | null }>("SELECT min(accepted_ms) AS at FROM async_calls WHERE state = 'queued'")?.at ?? null;
      return { queued: by.get('queued') ?? 0, running: by.get('running') ?? 0, dead: by.get('dead') ?? 0, oldestQueuedAt: oldest };
    });
  }

  sweep(now: number): Promise<number> {
    return this.#db.guard('async sweep', () =>
      this.#db.transaction(() => {
        const dead = this.#db.all<{ function_id: string; bytes: number }>("SELECT function_id, bytes FROM async_calls WHERE kept_until <= ? AND state = 'dead'", now);
        for (const d of dead) this.#addUsage(d.function_id, -d.bytes);
        this.#db.run('DELETE FROM async_idempotency WHERE until_ms <= ?', now);
        return Number(this.#db.run("DELETE FROM async_calls WHERE kept_until <= ? AND state IN ('succeeded', 'failed', 'dead')", now).changes);
      }));
  }

  deleteFunction(functionId: string): Promise<number> {
    return this.#db.guard('async delete', () =>
      this.#db.transaction(() => {
        this.#db.run('DELETE FROM async_usage WHERE function_id = ?', functionId);
        this.#db.run('DELETE FROM async_idempotency WHERE function_id = ?', functionId);
        return Number(this.#db.run('DELETE FROM async_calls WHERE function_id = ?', functionId).changes);
      }));
  }

  /** The counts are written in the calls' own transactions: they never drift. */
  async recount(_previous: UsageDrift): Promise<RecountResult> {
    return { drift: new Map(), corrections: [] };
  }

  #row(functionId: string, id: string): CallRow | undefined {
    return this.#db.get<CallRow>(`SELECT ${COLUMNS} FROM async_calls WHERE id = ? AND function_id = ?`, id, functionId);
  }

  #addUsage(functionId: string, bytes: number): void {
    this.#db.run(
      'INSERT INTO async_usage (function_id, bytes) VALUES (?, max(0, ?)) ON CONFLICT (function_id) DO UPDATE SET bytes = max(0, bytes + ?)',
      functionId, bytes, bytes,
    );
  }
}
