import { randomBytes, randomUUID } from 'node:crypto';

/** A log id: `log_` + 20 URL-safe characters (120 random bits). */
export function newLogId(): string {
  return 'log_' + randomBytes(15).toString('base64url');
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
