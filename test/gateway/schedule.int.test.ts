import { expect } from 'chai';
import { TestClock, startHarness, waitFor, type Harness } from './harness.ts';

describe('gateway local scheduler (test clock)', function () {
  this.timeout(60_000);
  let h: Harness;
  const clock = new TestClock();
  before(async () => {
    h = await startHarness({ clock });
  });
  after(async () => {
    await h?.close();
  });

  it('runs a * * * * * schedule every minute through the invocation path, each run logged with trigger schedule', async () => {
    const fn = await h.createFunction('ticker', `export default (req, res) => res.json({ trigger: req.headers['x-fnhost-trigger'], method: req.method })`);
    const set = await h.api('PUT', '/api/v1/functions/ticker/schedule', { cron: '* * * * *' });
    expect(set.status).to.equal(200);
    expect(set.body.schedule).to.deep.equal({ cron: '* * * * *', timezone: 'UTC', enabled: true, next_run_at: '2030-01-01T10:01:00.000Z' });
    // Each run ends before the next is due: a run still going would make the next one missed (concurrency policy forbid).
    for (const [step, n] of [[30_000, 1], [60_000, 2], [60_000, 3]] as const) {
      clock.advance(step);
      await waitFor(async () => (await h.logs('ticker')).pagination.totalCount === n, `scheduled run ${n}`);
    }
    const logs = await h.logs('ticker');
    for (const log of logs.logs) expect(log, JSON.stringify(log)).to.include({ function_id: fn.function_id, status_code: 200, trigger: 'schedule', error_message: null });
    const got = await h.api('GET', '/api/v1/functions/ticker');
    expect(got.body.total_executions).to.equal(3);
    expect(got.body.schedule.next_run_at).to.equal('2030-01-01T10:04:00.000Z');
  });

  it('disabling the schedule stops the fires and keeps the expression; disabling again (or with none) is 200', async () => {
    const off = await h.api('DELETE', '/api/v1/functions/ticker/schedule');
    expect(off.status).to.equal(200);
    expect(off.body.schedule).to.deep.equal({ cron: '* * * * *', timezone: 'UTC', enabled: false, next_run_at: null });
    clock.advance(5 * 60_000);
    await new Promise((r) => setTimeout(r, 300));
    expect((await h.logs('ticker')).pagination.totalCount).to.equal(3);
    expect((await h.api('DELETE', '/api/v1/functions/ticker/schedule')).status).to.equal(200);
    await h.createFunction('plain', 'export default (req, res) => res.json({})');
    const none = await h.api('DELETE', '/api/v1/functions/plain/schedule');
    expect(none.status).to.equal(200);
    expect(none.body.schedule).to.equal(null);
  });

  it('an inactive function does not fire; activating resumes its schedule', async () => {
    await h.createFunction('napper', 'export default (req, res) => res.json({})');
    await h.api('PUT', '/api/v1/functions/napper/schedule', { cron: '* * * * *' });
    const off = await h.api('POST', '/api/v1/functions/napper/deactivate');
    expect(off.body.schedule.next_run_at).to.equal(null);
    clock.advance(3 * 60_000);
    await new Promise((r) => setTimeout(r, 200));
    expect((await h.logs('napper')).pagination.totalCount).to.equal(0);
    const on = await h.api('POST', '/api/v1/functions/napper/activate');
    expect(on.body.schedule.next_run_at).to.be.a('string');
    clock.advance(60_000);
    await waitFor(async () => (await h.logs('napper')).pagination.totalCount === 1, 'the schedule to fire after activation');
  });

  it('rejects a cron that has the wrong shape or can never fire, naming it', async () => {
    const bad = await h.api('PUT', '/api/v1/functions/plain/schedule', { cron: '* * * *' });
    expect(bad.status).to.equal(400);
    expect(bad.body.message).to.match(/4 fields; expected 5/);
    const never = await h.api('PUT', '/api/v1/functions/plain/schedule', { cron: '0 0 31 2 *' });
    expect(never.status).to.equal(400);
    expect(never.body.message).to.match(/0 0 31 2 \*/);
    const tz = await h.api('PUT', '/api/v1/functions/plain/schedule', { cron: '0 9 * * 1', timezone: 'Mars/Base' });
    expect(tz.status).to.equal(400);
    expect(tz.body.message).to.match(/Mars\/Base/);
    const named = await h.api('PUT', '/api/v1/functions/plain/schedule', { cron: '0 9 * * 1', timezone: 'Europe/Paris' });
    expect(named.status, JSON.stringify(named.body)).to.equal(200);
    expect(named.body.schedule).to.include({ cron: '0 9 * * 1', timezone: 'Europe/Paris', enabled: true });
    // 2030-01-07 is a Monday; 09:00 in Paris is 08:00 UTC in winter.
    expect(named.body.schedule.next_run_at).to.equal('2030-01-07T08:00:00.000Z');
  });
});
