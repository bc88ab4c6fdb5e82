import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { expect } from 'chai';
import { PENDING_CALLBACKS_SQL } from '../../core/src/store/sqlite/async-calls.ts';
import { openSqliteStores } from '../../core/src/store/sqlite/index.ts';

// Every gateway looks for free callbacks at every poll (gateway/src/async/callback-sender.ts). On a
// real SQLite database of the store's schema, that query must read the partial index of pending
// callbacks, not every finished call: the planner, left to itself, chose async_due and read each
// finished call's request body to reach its callback column (10x the time with 3,000 kept).

describe('SQLite async store: the pending-callbacks query', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'fnhost-plan-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('is planned on the partial index async_callbacks_pending, with finished calls kept', async () => {
    const path = join(dir, 'fnhost.sqlite');
    const stores = openSqliteStores({ path } as Parameters<typeof openSqliteStores>[0]);
    const db = new DatabaseSync(path);
    try {
      const insert = db.prepare(`INSERT INTO async_calls (id, function_id, state, accepted_ms, attempt, next_ms, attempts, bytes, request, body, callback, finished_ms)
        VALUES (?, 'f', 'succeeded', 0, 1, 0, '[]', 1, '{}', ?, ?, ?)`);
      db.exec('BEGIN');
      for (let i = 0; i < 200; i++) insert.run(`async_${i}`, Buffer.alloc(8192), i % 50 === 0 ? JSON.stringify({ state: 'pending' }) : null, i);
      db.exec('COMMIT; ANALYZE');
      const plan = (db.prepare(`EXPLAIN QUERY PLAN ${PENDING_CALLBACKS_SQL}`).all(1, 2, 3) as Array<{ detail: string }>).map((r) => r.detail);
      expect(plan.join('; ')).to.match(/USING INDEX async_callbacks_pending/);
      expect(plan.join('; ')).to.not.match(/async_due/);
      // And it answers: the four pending callbacks, none held, all finished before staleBefore.
      expect(db.prepare(PENDING_CALLBACKS_SQL).all(Date.now(), 1_000_000, 10)).to.have.length(4);
    } finally {
      db.close();
      await stores.close();
    }
  });
});
