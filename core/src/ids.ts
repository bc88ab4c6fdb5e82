import { randomBytes, randomUUID } from 'node:crypto';

// A log id is `log_` + 20 URL-safe characters: 7 that encode the millisecond it was made, in an
// alphabet whose byte order is its value order, then 13 random ones (78 bits). Ids made later
// sort later, so the stores' index on the id (SQLite's `logs_by_id`, MongoDB's `id`) grows at its
// right edge: a batch of records dirties a few index pages instead of one page per record, which
// with 120 random bits cost SQLite ~3× the CPU per stored record at 100,000 records and more as the
// index grew (bench/RESULTS.md, issue 31). The characters are base64url's, so the format every
// reader checks (`log_[A-Za-z0-9_-]`) is unchanged, and ids made before still resolve.

/** base64url's 64 characters in ASCII order ('-' < digits < upper case < '_' < lower case). */
const SORTABLE = '-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz';
/** 64^7 ms reach the year 2109. */
export const LOG_ID_TIME_CHARS = 7;
export const LOG_ID_RANDOM_CHARS = 13;

/** The 7 characters that open the ids made in millisecond ms (ms since the epoch, ≥ 0). */
export function logIdTimePrefix(ms: number): string {
  let prefix = '';
  let rest = Math.floor(ms);
  for (let i = 0; i < LOG_ID_TIME_CHARS; i++) {
    prefix = SORTABLE[rest % 64]! + prefix;
    rest = Math.floor(rest / 64);
  }
  return prefix;
}

/** A log id: `log_` + the time prefix of now + 13 random URL-safe characters. */
export function newLogId(now = Date.now()): string {
  // 10 random bytes are 14 base64url characters, of which 13 are whole random draws.
  return 'log_' + logIdTimePrefix(now) + randomBytes(10).toString('base64url').slice(0, LOG_ID_RANDOM_CHARS);
}

export function newFunctionId(): string {
  return randomUUID();
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: string): boolean {
  return UUID_RE.test(value);
}

/** ISO 8601 UTC with milliseconds and trailing Z, as the spec requires. */
export function isoTimestamp(ms: number): string {
  return new Date(ms).toISOString();
}
