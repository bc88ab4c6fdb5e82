import { expect } from 'chai';
import { TestClock, startHarness, type Harness } from './harness.ts';

describe('gateway log listing, retention and total executions', function () {
  this.timeout(60_000);
  let h: Harness;
  let id: string;
  before(async () => {
    h = await startHarness();
    const fn = await h.createFunction('mixed', `export default (req, res) => res.status(Number(req.query.s ?? 200)).json({ s: req.query.s })`);
    id = fn.function_id;
    // 5 successes, 3 errors (404, 500, 502), 1 redirect: 9 in all, oldest first.
    for (const s of [200, 201, 404, 200, 500, 302, 204, 502, 200]) {
      const r = await h.invoke(id, `?s=${s}`, { redirect: 'manual' });
      expect(r.status).to.equal(s);
      await r.arrayBuffer();
    }
  });
  after(async () => {
    await h?.close();
  });

  it('lists newest first with the spec pagination object, filtering by status class', async () => {
    const all = await h.logs('mixed');
    expect(all.logs.map((l: { status_code: number }) => l.status_code)).to.deep.equal([200, 502, 204, 302, 500, 200, 404, 201, 200]);
    expect(all.pagination).to.deep.equal({ currentPage: 1, totalPages: 1, totalCount: 9, hasNextPage: false, hasPrevPage: false });
    const success = await h.logs('mixed', '?status=success');
    expect(success.pagination.totalCount).to.equal(5);
    const errors = await h.logs('mixed', '?status=error&limit=2&page=2');
    expect(errors.logs.map((l: { status_code: number }) => l.status_code)).to.deep.equal([404]);
    expect(errors.pagination).to.deep.equal({ currentPage: 2, totalPages: 2, totalCount: 3, hasNextPage: false, hasPrevPage: true });
  });

  it('pagination edges: a page past the end is empty with true totals; limit outside 1..1000 is 400 naming it', async () => {
    const past = await h.logs('mixed', '?limit=5&page=3');
    expect(past.logs).to.deep.equal([]);
    expect(past.pagination).to.deep.equal({ currentPage: 3, totalPages: 2, totalCount: 9, hasNextPage: false, hasPrevPage: true });
    for (const q of ['?limit=0', '?limit=1001', '?limit=abc', '?page=0', '?status=bad']) {
      const r = await h.api('GET', `/api/v1/functions/mixed/logs${q}`);
      expect(r.status, q).to.equal(400);
      expect(r.body.error).to.equal('invalid_argument');
      expect(r.body.message).to.match(/limit|page|status/);
    }
    const max = await h.logs('mixed', '?limit=1000');
    expect(max.logs).to.have.length(9);
    const other = await h.createFunction('quiet', 'export default (req, res) => res.json({})');
    const empty = await h.logs(other.function_id);
    expect(empty.pagination).to.deep.equal({ currentPage: 1, totalPages: 1, totalCount: 0, hasNextPage: false, hasPrevPage: false });
  });

  it('applies count retention to existing logs at once; total executions does not fall', async () => {
    const set = await h.api('PUT', '/api/v1/functions/mixed/retention', { type: 'count', count: 4 });
    expect(set.status).to.equal(200);
    expect(set.body.retention).to.deep.equal({ type: 'count', count: 4 });
    const logs = await h.logs('mixed');
    expect(logs.pagination.totalCount).to.equal(4);
    expect(logs.logs.map((l: { status_code: number }) => l.status_code)).to.deep.equal([200, 502, 204, 302]);
    expect((await h.api('GET', '/api/v1/functions/mixed')).body.total_executions).to.equal(9);
    await h.platform.sweep();
    expect((await h.logs('mixed')).pagination.totalCount).to.equal(4);
    expect((await h.api('GET', '/api/v1/functions/mixed')).body.total_executions).to.equal(9);
  });

  it('applies none (keeps every new record) and rejects a policy with the wrong fields', async () => {
    const none = await h.api('PUT', '/api/v1/functions/mixed/retention', { type: 'none' });
    expect(none.body.retention).to.deep.equal({ type: 'none' });
    for (let i = 0; i < 3; i++) await (await h.invoke(id)).arrayBuffer();
    expect((await h.logs('mixed')).pagination.totalCount).to.equal(7);
    expect((await h.api('GET', '/api/v1/functions/mixed')).body.total_executions).to.equal(12);
    const bad = await h.api('PUT', '/api/v1/functions/mixed/retention', { type: 'count', days: 3 });
    expect(bad.status).to.equal(400);
    expect(bad.body.message).to.match(/count/);
  });
});

describe('gateway time retention (test clock)', function () {
  this.timeout(60_000);
  let h: Harness;
  const clock = new TestClock();
  before(async () => {
    clock.current = Date.now();
    h = await startHarness({ clock });
  });
  after(async () => {
    await h?.close();
  });

  it('hides records older than the window at once, the sweeper deletes them, and the total stays', async () => {
    const fn = await h.createFunction('aging', 'export default (req, res) => res.json({})');
    expect(fn.retention).to.deep.equal({ type: 'none' });
    for (let i = 0; i < 3; i++) await (await h.invoke(fn.function_id)).arrayBuffer();
    const set = await h.api('PUT', '/api/v1/functions/aging/retention', { type: 'time', days: 1 });
    expect(set.body.retention).to.deep.equal({ type: 'time', days: 1 });
    expect((await h.logs('aging')).pagination.totalCount).to.equal(3);
    clock.current += 2 * 86_400_000;
    expect((await h.logs('aging')).pagination.totalCount).to.equal(0);
    await h.platform.sweep();
    await h.api('PUT', '/api/v1/functions/aging/retention', { type: 'none' });
    expect((await h.logs('aging')).pagination.totalCount, 'deleted by the sweep, not only hidden').to.equal(0);
    expect((await h.api('GET', '/api/v1/functions/aging')).body.total_executions).to.equal(3);
  });
});
