import { expect } from 'chai';
import { createPainter } from '../../../cli/src/format/color.ts';
import { functionDetails, functionList, retentionText, scheduleText } from '../../../cli/src/format/function.ts';
import { fn } from '../helpers/fixtures.ts';

const plain = createPainter(false);

describe('cli format: function record', () => {
  const savedTz = process.env.TZ;
  before(() => {
    process.env.TZ = 'UTC';
  });
  after(() => {
    if (savedTz === undefined) delete process.env.TZ;
    else process.env.TZ = savedTz;
  });

  it('describes each retention policy', () => {
    expect(retentionText({ type: 'time', days: 7 })).to.equal('time (7 days)');
    expect(retentionText({ type: 'time', days: 1 })).to.equal('time (1 day)');
    expect(retentionText({ type: 'count', count: 100 })).to.equal('count (100 newest)');
    expect(retentionText({ type: 'none' })).to.equal('none (keep all)');
  });

  it('describes a schedule: none, enabled with its next run, disabled', () => {
    expect(scheduleText(null)).to.equal('none');
    expect(scheduleText({ cron: '0 * * * *', timezone: 'UTC', enabled: true, next_run_at: '2026-11-22T15:00:00.000Z' })).to.equal(
      '0 * * * * (UTC), next run 2026-11-22 15:00:00 UTC',
    );
    // In the schedule's zone, named, whatever the viewer's (TZ=UTC here): 09:00 Paris is 08:00 UTC in winter.
    expect(scheduleText({ cron: '0 9 * * *', timezone: 'Europe/Paris', enabled: true, next_run_at: '2026-11-26T08:00:00.000Z' })).to.equal(
      '0 9 * * * (Europe/Paris), next run 2026-11-26 09:00:00 Europe/Paris',
    );
    expect(scheduleText({ cron: '30 0 * * *', timezone: 'Asia/Kolkata', enabled: true, next_run_at: '2026-07-01T19:00:00.000Z' })).to.equal(
      '30 0 * * * (Asia/Kolkata), next run 2026-07-02 00:30:00 Asia/Kolkata',
    );
    expect(scheduleText({ cron: '0 * * * *', timezone: 'UTC', enabled: false, next_run_at: null })).to.equal('disabled (was 0 * * * * (UTC))');
  });

  it('prints the labelled lines of function:get', () => {
    const lines = functionDetails(fn({ total_executions: 42, active: false, retention: { type: 'count', count: 100 } }), 'http://x', plain);
    const text = lines.join('\n');
    expect(text).to.match(/^Total Executions: +42$/m);
    expect(text).to.match(/^Active: +no$/m);
    expect(text).to.match(/^Retention: +count \(100 newest\)$/m);
    expect(text).to.match(/^Invocation URL: +http:\/\/127\.0\.0\.1:8080\/invoke\/5b0f1a1e/m);
    for (const label of ['ID', 'Name', 'Schedule', 'Timeout', 'Memory', 'Created', 'Updated']) expect(text).to.match(new RegExp(`^${label}: `, 'm'));
    // Times in the viewer's zone carry its name.
    expect(text).to.match(/^Created: +\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/m);
  });

  it('lists functions as a table, or says there are none', () => {
    expect(functionList([], plain)[0]).to.contain('no functions');
    const lines = functionList([fn(), fn({ name: 'other', active: false, schedule: { cron: '* * * * *', timezone: 'UTC', enabled: true } })], plain);
    expect(lines[0]).to.match(/^Name\s+ID\s+Active\s+Executions\s+Schedule$/);
    expect(lines[2]).to.match(/^other\s+\S+\s+no\s+0\s+\* \* \* \* \* \(UTC\)$/);
    const paris = functionList([fn({ schedule: { cron: '0 9 * * 1', timezone: 'Europe/Paris', enabled: false, next_run_at: null } })], plain);
    expect(paris[1]).to.match(/\s+disabled \(0 9 \* \* 1 \(Europe\/Paris\)\)$/);
  });

  it('lists every namespace with -A: a Namespace column, sorted by namespace then name', () => {
    const lines = functionList([fn({ name: 'b', namespace: 'team-b' }), fn({ name: 'z', namespace: 'team-a' }), fn({ name: 'a', namespace: 'team-b' })], plain, { allNamespaces: true });
    expect(lines[0]).to.match(/^Namespace\s+Name\s+ID\s+Active\s+Executions\s+Schedule$/);
    expect(lines.slice(1).map((l) => l.split(/\s+/).slice(0, 2).join('/'))).to.deep.equal(['team-a/z', 'team-b/a', 'team-b/b']);
    expect(functionList([], plain, { allNamespaces: true })[0]).to.contain('no functions in any namespace you may list');
  });

  it('shows the namespace and the rollout of a cluster function in function:get', () => {
    const text = functionDetails(fn({ namespace: 'team-a', rollout: { generation: 3, observed_generation: 3, ready: 'True', reason: 'Available', message: '1 of 1' } }), 'http://x', plain).join('\n');
    expect(text).to.match(/^Namespace: +team-a$/m);
    expect(text).to.match(/^Rollout: +ready, Available \(generation 3\)$/m);
    const pending = functionDetails(fn({ rollout: { generation: 4, observed_generation: 3, ready: 'True', reason: 'Available', message: '' } }), 'http://x', plain).join('\n');
    expect(pending).to.match(/^Rollout: +pending: the operator has not acted on generation 4 yet$/m);
    expect(functionDetails(fn(), 'http://x', plain).join('\n')).not.to.match(/^Rollout:/m);
  });
});
