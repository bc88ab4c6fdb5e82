import { expect } from 'chai';
import {
  isPlannedTime, latestPlannedAtOrBefore, ledgerExpiry, nextPlanned, planCatchUp, plannedBetween,
} from '../../core/src/schedule-ledger.ts';

const at = (iso: string) => Date.parse(iso);
const iso = (ms: number) => new Date(ms).toISOString();
const MIN = 60_000;

describe('schedule ledger planning', () => {
  it('lists the planned times in (after, until], newest first, the end included and the start not', () => {
    const got = plannedBetween('* * * * *', 'UTC', at('2030-01-01T10:00:00Z'), at('2030-01-01T10:03:00Z'), 10).map(iso);
    expect(got).to.deep.equal(['2030-01-01T10:03:00.000Z', '2030-01-01T10:02:00.000Z', '2030-01-01T10:01:00.000Z']);
    expect(plannedBetween('* * * * *', 'UTC', at('2030-01-01T10:00:00Z'), at('2030-01-01T10:00:59Z'), 10)).to.deep.equal([]);
    expect(plannedBetween('* * * * *', 'UTC', at('2030-01-01T10:05:00Z'), at('2030-01-01T10:00:00Z'), 10)).to.deep.equal([]);
  });

  it('keeps only the newest `max` of a long outage, without walking every minute of it', () => {
    const got = plannedBetween('* * * * *', 'UTC', at('2029-01-01T00:00:00Z'), at('2030-01-01T10:00:30Z'), 3).map(iso);
    expect(got).to.deep.equal(['2030-01-01T10:00:00.000Z', '2030-01-01T09:59:00.000Z', '2030-01-01T09:58:00.000Z']);
  });

  it("reads the fields in the schedule's time zone", () => {
    // 09:00 in Paris on Monday 2030-01-07 is 08:00 UTC (winter).
    const got = plannedBetween('0 9 * * 1', 'Europe/Paris', at('2030-01-01T00:00:00Z'), at('2030-01-14T12:00:00Z'), 5).map(iso);
    expect(got).to.deep.equal(['2030-01-14T08:00:00.000Z', '2030-01-07T08:00:00.000Z']);
    expect(isPlannedTime('0 9 * * 1', 'Europe/Paris', at('2030-01-07T08:00:00Z'))).to.equal(true);
    expect(isPlannedTime('0 9 * * 1', 'Europe/Paris', at('2030-01-07T09:00:00Z'))).to.equal(false);
    expect(isPlannedTime('* * * * *', 'UTC', at('2030-01-07T09:00:01Z'))).to.equal(false);
    expect(isPlannedTime('* * * * *', 'UTC', Number.NaN)).to.equal(false);
  });

  it('finds the newest planned time at or before an instant within a look-back, and the next ones after', () => {
    expect(iso(latestPlannedAtOrBefore('*/5 * * * *', 'UTC', at('2030-01-01T10:07:10Z'), 3_600_000)!)).to.equal('2030-01-01T10:05:00.000Z');
    expect(latestPlannedAtOrBefore('0 0 1 1 *', 'UTC', at('2030-06-01T00:00:00Z'), 3_600_000)).to.equal(undefined);
    expect(nextPlanned('*/5 * * * *', 'UTC', at('2030-01-01T10:05:00Z'), 3).map(iso)).to.deep.equal(['2030-01-01T10:10:00.000Z', '2030-01-01T10:15:00.000Z', '2030-01-01T10:20:00.000Z']);
  });

  describe('missed runs at start (startingDeadlineSeconds)', () => {
    const base = { cron: '* * * * *', timezone: 'UTC', since: at('2030-01-01T10:00:00Z'), startingDeadlineMs: 5 * MIN, active: true };

    it('runs the newest missed run late when within the deadline, and records the earlier ones missed (platform_down)', () => {
      const plan = planCatchUp({ ...base, now: at('2030-01-01T10:03:30Z') });
      expect(iso(plan.runNow!)).to.equal('2030-01-01T10:03:00.000Z');
      expect(plan.missed.map((m) => [iso(m.plannedAt), m.reason])).to.deep.equal([
        ['2030-01-01T10:02:00.000Z', 'platform_down'],
        ['2030-01-01T10:01:00.000Z', 'platform_down'],
      ]);
    });

    it('runs nothing when the newest missed run is past the deadline: every one is missed', () => {
      const plan = planCatchUp({ ...base, cron: '0 * * * *', since: at('2030-01-01T08:00:00Z'), now: at('2030-01-01T10:30:00Z') });
      expect(plan.runNow).to.equal(null);
      expect(plan.missed.map((m) => iso(m.plannedAt))).to.deep.equal(['2030-01-01T10:00:00.000Z', '2030-01-01T09:00:00.000Z']);
    });

    it('a deadline of 0 starts only a run planned for this very instant', () => {
      expect(planCatchUp({ ...base, startingDeadlineMs: 0, now: at('2030-01-01T10:02:00.001Z') }).runNow).to.equal(null);
      expect(iso(planCatchUp({ ...base, startingDeadlineMs: 0, now: at('2030-01-01T10:02:00Z') }).runNow!)).to.equal('2030-01-01T10:02:00.000Z');
    });

    it('records at most maxMissed of them, the newest', () => {
      const plan = planCatchUp({ ...base, since: at('2029-12-31T00:00:00Z'), now: at('2030-01-01T10:00:10Z'), maxMissed: 4 });
      expect(iso(plan.runNow!)).to.equal('2030-01-01T10:00:00.000Z');
      expect(plan.missed.map((m) => iso(m.plannedAt))).to.deep.equal(['2030-01-01T09:59:00.000Z', '2030-01-01T09:58:00.000Z', '2030-01-01T09:57:00.000Z', '2030-01-01T09:56:00.000Z']);
    });

    it('runs nothing for an inactive function: its newest run is missed as function_inactive', () => {
      const plan = planCatchUp({ ...base, active: false, now: at('2030-01-01T10:02:30Z') });
      expect(plan.runNow).to.equal(null);
      expect(plan.missed.map((m) => [iso(m.plannedAt), m.reason])).to.deep.equal([
        ['2030-01-01T10:02:00.000Z', 'function_inactive'],
        ['2030-01-01T10:01:00.000Z', 'platform_down'],
      ]);
    });

    it('finds nothing when no run was planned since the last one accounted for', () => {
      expect(planCatchUp({ ...base, since: at('2030-01-01T10:03:00Z'), now: at('2030-01-01T10:03:59Z') })).to.deep.equal({ missed: [], runNow: null });
    });
  });

  it("lets an entry go with the function's time retention, keeps it otherwise", () => {
    expect(ledgerExpiry({ type: 'time', days: 2 }, at('2030-01-01T00:00:00Z'))).to.equal(at('2030-01-03T00:00:00Z'));
    expect(ledgerExpiry({ type: 'count', count: 5 }, 0)).to.equal(null);
    expect(ledgerExpiry({ type: 'none' }, 0)).to.equal(null);
  });
});
