import { expect } from 'chai';
import type { FunctionRecord } from '@fnhost/core';
import { UnauthorizedError } from '../../gateway/src/auth.ts';
import { plannedTimeOf, scheduleTriggerOf } from '../../gateway/src/invoke/schedule-trigger.ts';

// Cluster mode: what makes an /invoke call a scheduled run, and which planned
// run it is (the CronJob's job names it; the gateway checks it against the schedule).

const fn = (schedule: FunctionRecord['schedule']) => ({ function_id: 'f-1', name: 'ticker', schedule }) as FunctionRecord;
const every5 = fn({ cron: '*/5 * * * *', timezone: 'UTC', enabled: true });
const at = (iso: string) => Date.parse(iso);
const arrived = at('2030-01-01T10:07:10Z');
const check = (id: string, token: string) => id === 'f-1' && token === 'good';

describe('scheduled calls in cluster mode (x-fnhost-schedule-token, x-fnhost-scheduled-time)', () => {
  it('takes the planned time the job names when it is a fire time of the schedule, even a late one', () => {
    expect(plannedTimeOf('2030-01-01T10:05:00.000Z', every5, arrived)).to.equal(at('2030-01-01T10:05:00Z'));
    expect(plannedTimeOf('2030-01-01T09:00:00.000Z', every5, arrived)).to.equal(at('2030-01-01T09:00:00Z'));
  });

  it('does not believe a time that is no fire time, in the future, malformed or too long: the newest fire time before the call instead', () => {
    for (const header of ['2030-01-01T10:06:00.000Z', '2030-01-01T11:00:00.000Z', 'yesterday', '2030-01-01T10:05:00.000Z'.padEnd(41, ' '), ['a', 'b'], undefined]) {
      expect(plannedTimeOf(header, every5, arrived), String(header)).to.equal(at('2030-01-01T10:05:00Z'));
    }
  });

  it('a function whose schedule is gone: the arrival', () => {
    expect(plannedTimeOf('2030-01-01T10:05:00.000Z', fn(null), arrived)).to.equal(arrived);
  });

  it('a call without a token, or on one machine (no check), is http; a wrong token is refused', () => {
    expect(scheduleTriggerOf({}, every5, check, arrived)).to.deep.equal({ trigger: 'http' });
    expect(scheduleTriggerOf({ 'x-fnhost-schedule-token': 'good' }, every5, undefined, arrived)).to.deep.equal({ trigger: 'http' });
    expect(() => scheduleTriggerOf({ 'x-fnhost-schedule-token': 'bad' }, every5, check, arrived)).to.throw(UnauthorizedError);
    expect(scheduleTriggerOf({ 'x-fnhost-schedule-token': 'good', 'x-fnhost-scheduled-time': '2030-01-01T10:00:00Z' }, every5, check, arrived))
      .to.deep.equal({ trigger: 'schedule', plannedAt: at('2030-01-01T10:00:00Z') });
  });
});
