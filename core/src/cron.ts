import { CronExpressionParser } from 'cron-parser';
import { ValidationError } from './errors.ts';

// fnhost schedules are exactly five fields; cron-parser also accepts 4 and 6,
// so the field count is checked here, and each field is parsed alone (the
// others `*`) so that an error names the field that is wrong.

export const CRON_FIELD_NAMES = ['minute', 'hour', 'day-of-month', 'month', 'day-of-week'] as const;

const MAX_CRON_LENGTH = 256;

function parseAt(expression: string, timezone: string, from: Date) {
  return CronExpressionParser.parse(expression, { tz: timezone, currentDate: from });
}

/** Throws ValidationError naming the bad part; returns the normalised expression. */
export function validateCron(expression: unknown, timezone = 'UTC'): string {
  if (typeof expression !== 'string' || expression.trim() === '') {
    throw new ValidationError('cron expression is required: five fields "minute hour day-of-month month day-of-week", for example "0 * * * *"');
  }
  if (expression.length > MAX_CRON_LENGTH) {
    throw new ValidationError(`cron expression is longer than ${MAX_CRON_LENGTH} characters`);
  }
  validateTimezone(timezone);
  const fields = expression.trim().split(/\s+/);
  if (fields.length !== 5) {
    throw new ValidationError(
      `cron expression "${expression}" has ${fields.length} field${fields.length === 1 ? '' : 's'}; expected 5: minute hour day-of-month month day-of-week`,
    );
  }
  const from = new Date();
  fields.forEach((field, index) => {
    const alone = CRON_FIELD_NAMES.map((_, i) => (i === index ? field : '*')).join(' ');
    try {
      parseAt(alone, 'UTC', from);
    } catch (err) {
      throw new ValidationError(
        `cron expression "${expression}": ${CRON_FIELD_NAMES[index]} field "${field}" is invalid (${(err as Error).message})`,
        { cause: err },
      );
    }
  });
  const normalised = fields.join(' ');
  try {
    parseAt(normalised, timezone, from).next();
  } catch (err) {
    throw new ValidationError(`cron expression "${expression}" never fires (${(err as Error).message})`, { cause: err });
  }
  return normalised;
}

export function validateTimezone(timezone: unknown): string {
  if (typeof timezone !== 'string' || timezone === '') throw new ValidationError('timezone must be an IANA zone name such as "UTC" or "Europe/Paris"');
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
  } catch (err) {
    throw new ValidationError(`timezone "${timezone}" is not an IANA zone name such as "UTC" or "Europe/Paris"`, { cause: err });
  }
  return timezone;
}

/** The next fire time strictly after `after` (ms since epoch), for a validated expression. */
export function nextFireTime(expression: string, timezone: string, after: number): number {
  return parseAt(expression, timezone, new Date(after)).next().getTime();
}
