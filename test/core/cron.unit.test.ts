import { expect } from 'chai';
import { ValidationError } from '../../core/src/errors.ts';
import { CRON_FIELD_NAMES, nextFireTime, validateCron, validateTimezone } from '../../core/src/cron.ts';

function errorOf(fn: () => unknown): ValidationError {
  try {
    fn();
  } catch (err) {
    expect(err).to.be.instanceOf(ValidationError);
    return err as ValidationError;
  }
  throw new Error('expected a ValidationError');
}

describe('cron', () => {
  it("accepts the spec's shapes and common forms, normalising whitespace", () => {
    for (const expression of ['* * * * *', '0 * * * *', '0 0 * * *', '0 9 * * 1', '*/15 * * * *', '0,30 8-18 * * 1-5', '0 0 1 JAN *', '0 0 * * MON', '0 0 29 2 *', '* * * * 7']) {
      expect(validateCron(expression), expression).to.equal(expression);
    }
    expect(validateCron('  0   9 * *\t1 ')).to.equal('0 9 * * 1');
  });

  it('requires exactly five fields and says how many it got', () => {
    expect(errorOf(() => validateCron('* * * *')).message).to.include('has 4 fields; expected 5');
    expect(errorOf(() => validateCron('0 * * * * *')).message).to.include('has 6 fields; expected 5');
    expect(errorOf(() => validateCron('@daily')).message).to.include('has 1 field;');
  });

  it('names the field that is wrong and the bad value', () => {
    const cases: [string, string, string][] = [
      ['60 * * * *', 'minute', '60'],
      ['* 24 * * *', 'hour', '24'],
      ['* * 0 * *', 'day-of-month', '0'],
      ['* * * 13 *', 'month', '13'],
      ['* * * * 8', 'day-of-week', '8'],
      ['a * * * *', 'minute', 'a'],
      ['5-1 * * * *', 'minute', '5-1'],
    ];
    for (const [expression, field, value] of cases) {
      const message = errorOf(() => validateCron(expression)).message;
      expect(message, expression).to.include(`${field} field "${value}" is invalid`);
      expect(message).to.include(expression);
    }
    expect(CRON_FIELD_NAMES).to.deep.equal(['minute', 'hour', 'day-of-month', 'month', 'day-of-week']);
  });

  it('rejects a schedule that can never fire, such as 31 February', () => {
    expect(errorOf(() => validateCron('0 0 31 2 *')).message).to.include('"0 0 31 2 *" never fires');
    expect(errorOf(() => validateCron('0 0 30 2 *')).message).to.include('never fires');
  });

  it('rejects empty, non-string and overlong expressions', () => {
    expect(errorOf(() => validateCron('')).message).to.include('required');
    expect(errorOf(() => validateCron(undefined)).message).to.include('required');
    expect(errorOf(() => validateCron(5)).message).to.include('required');
    expect(errorOf(() => validateCron('1,'.repeat(200) + '1 * * * *')).message).to.include('longer than 256');
  });

  it('checks the time zone', () => {
    expect(validateTimezone('Europe/Paris')).to.equal('Europe/Paris');
    expect(errorOf(() => validateCron('* * * * *', 'Mars/Olympus')).message).to.include('"Mars/Olympus"');
    expect(errorOf(() => validateTimezone('')).message).to.include('IANA');
  });

  it('computes the next fire time strictly after the given instant, in the given zone', () => {
    const sunday = Date.UTC(2026, 10, 22, 12, 0, 0);
    expect(new Date(nextFireTime('0 9 * * 1', 'UTC', sunday)).toISOString()).to.equal('2026-11-23T09:00:00.000Z');
    expect(new Date(nextFireTime('* * * * *', 'UTC', sunday)).toISOString()).to.equal('2026-11-22T12:01:00.000Z');
    expect(new Date(nextFireTime('0 * * * *', 'UTC', sunday)).toISOString()).to.equal('2026-11-22T13:00:00.000Z');
    // Midnight in Paris (UTC+1 in November) is 23:00 UTC.
    expect(new Date(nextFireTime('0 0 * * *', 'Europe/Paris', sunday)).toISOString()).to.equal('2026-11-22T23:00:00.000Z');
  });
});
