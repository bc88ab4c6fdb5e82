import { ValidationError } from './errors.ts';
import * as limits from './limits.ts';
import { validateCodeRef, type CodeRef } from './code/digest.ts';
import type { LogQuery, RetentionPolicy, StatusFilter } from './model.ts';

// Validation shared by the management API (authoritative) and the CLI (early,
// friendlier errors). Every message names the bad value and the rule.

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

export function validateFunctionName(name: unknown): string {
  if (typeof name !== 'string' || name === '') {
    throw new ValidationError('function name is required');
  }
  if (name.length > limits.MAX_FUNCTION_NAME_LENGTH || !DNS1123_LABEL.test(name)) {
    throw new ValidationError(
      `function name "${name.slice(0, 80)}" is invalid: use 1-${limits.MAX_FUNCTION_NAME_LENGTH} lowercase letters, digits and '-', starting and ending with a letter or digit (a DNS-1123 label)`,
    );
  }
  return name;
}

/** Parses a positive integer given as a number or a decimal string. */
export function parsePositiveInt(value: unknown, what: string, max: number): number {
  const n = typeof value === 'string' && /^\s*\d+\s*$/.test(value) ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > max) {
    throw new ValidationError(`${what} must be an integer from 1 to ${max}, got ${JSON.stringify(value)}`);
  }
  return n;
}

export function validateStatusFilter(value: unknown): StatusFilter {
  if (value === undefined) return 'all';
  if (value === 'all' || value === 'success' || value === 'error') return value;
  throw new ValidationError(`status must be one of success, error, all; got ${JSON.stringify(value)}`);
}

/** Builds a LogQuery from raw (string or number) inputs, applying the spec's defaults. */
export function parseLogQuery(raw: { status?: unknown; limit?: unknown; page?: unknown }): LogQuery {
  return {
    status: validateStatusFilter(raw.status),
    limit: raw.limit === undefined ? limits.DEFAULT_LOG_PAGE_LIMIT : parsePositiveInt(raw.limit, 'limit', limits.MAX_LOG_PAGE_LIMIT),
    page: raw.page === undefined ? 1 : parsePositiveInt(raw.page, 'page', Number.MAX_SAFE_INTEGER),
  };
}

/** Accepts `{type, days?, count?}`; days only with time, count only with count. */
export function validateRetention(raw: unknown): RetentionPolicy {
  if (typeof raw !== 'object' || raw === null) throw new ValidationError('retention must be an object {type, days?, count?}');
  const { type, days, count } = raw as Record<string, unknown>;
  switch (type) {
    case 'none':
      if (days !== undefined || count !== undefined) throw new ValidationError('retention type none takes neither days nor count');
      return { type: 'none' };
    case 'time':
      if (count !== undefined) throw new ValidationError('retention type time takes days, not count');
      if (days === undefined) throw new ValidationError('retention type time needs days (an integer from 1 to ' + limits.MAX_RETENTION_DAYS + ')');
      return { type: 'time', days: parsePositiveInt(days, 'days', limits.MAX_RETENTION_DAYS) };
    case 'count':
      if (days !== undefined) throw new ValidationError('retention type count takes count, not days');
      if (count === undefined) throw new ValidationError('retention type count needs count (an integer from 1 to ' + limits.MAX_RETENTION_COUNT + ')');
      return { type: 'count', count: parsePositiveInt(count, 'count', limits.MAX_RETENTION_COUNT) };
    default:
      throw new ValidationError(`retention type must be one of time, count, none; got ${JSON.stringify(type)}`);
  }
}

export function validateTimeoutSeconds(value: unknown, platformMax = limits.MAX_TIMEOUT_SECONDS): number {
  return parsePositiveInt(value, 'timeout (seconds)', platformMax);
}

export function validateMemoryMiB(value: unknown): number {
  const n = parsePositiveInt(value, 'memory (MiB)', limits.MAX_MEMORY_MIB);
  if (n < limits.MIN_MEMORY_MIB) throw new ValidationError(`memory (MiB) must be at least ${limits.MIN_MEMORY_MIB}, got ${n}`);
  return n;
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function validateEnv(raw: unknown): Record<string, string> {
  if (raw === undefined) return {};
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new ValidationError('env must be an object of string values');
  const entries = Object.entries(raw as Record<string, unknown>);
  if (entries.length > limits.MAX_ENV_VARS) throw new ValidationError(`env has ${entries.length} variables; at most ${limits.MAX_ENV_VARS} are allowed`);
  const env: Record<string, string> = {};
  for (const [name, value] of entries) {
    if (!ENV_NAME.test(name)) throw new ValidationError(`env name "${name}" is invalid: use letters, digits and '_', not starting with a digit`);
    if (name.startsWith('FNHOST_')) throw new ValidationError(`env name "${name}" is reserved: the FNHOST_ prefix belongs to the platform`);
    if (typeof value !== 'string') throw new ValidationError(`env ${name} must be a string`);
    if (Buffer.byteLength(value) > limits.MAX_ENV_VALUE_BYTES) throw new ValidationError(`env ${name} is larger than ${limits.MAX_ENV_VALUE_BYTES} bytes`);
    env[name] = value;
  }
  return env;
}

const ROUTE = /^\/[A-Za-z0-9\-._~:/*@]*$/;

export function validateRoutes(raw: unknown): string[] {
  if (raw === undefined) return [];
  if (!Array.isArray(raw)) throw new ValidationError('routes must be an array of path patterns such as "/users/:userId"');
  if (raw.length > limits.MAX_ROUTES) throw new ValidationError(`at most ${limits.MAX_ROUTES} routes are allowed, got ${raw.length}`);
  return raw.map((route) => {
    if (typeof route !== 'string' || route.length > limits.MAX_ROUTE_LENGTH || !ROUTE.test(route)) {
      throw new ValidationError(`route ${JSON.stringify(route)} is invalid: a path pattern starting with "/", such as "/users/:userId"`);
    }
    return route;
  });
}

export function validateCode(code: unknown): string {
  if (typeof code !== 'string' || code.trim() === '') throw new ValidationError('code is required: the source of a JavaScript module that exports a handler');
  const size = Buffer.byteLength(code);
  if (size > limits.MAX_CODE_BYTES) throw new ValidationError(`code is ${size} bytes; the limit inline is ${limits.MAX_CODE_BYTES} bytes (larger code, up to ${limits.MAX_CODE_REF_BYTES} bytes, is uploaded and named by code_ref: the CLI does it)`);
  return code;
}

/** A function's code as given: inline `code`, or `code_ref` naming stored code, exactly one of them. */
export type CodeSource = { code: string; code_ref?: undefined } | { code: ''; code_ref: CodeRef };

/**
 * Exactly one of `code` (inline, up to MAX_CODE_BYTES) and `code_ref` ({digest, size}, up to
 * MAX_CODE_REF_BYTES). `required` false (an update): neither given is undefined (unchanged).
 */
export function validateCodeSource(raw: { code?: unknown; code_ref?: unknown }, required: boolean): CodeSource | undefined {
  const hasCode = raw.code !== undefined;
  const hasRef = raw.code_ref !== undefined && raw.code_ref !== null;
  if (hasCode && hasRef) throw new ValidationError('give either code (the module source inline) or code_ref ({digest, size} of uploaded code), not both');
  if (hasRef) return { code: '', code_ref: validateCodeRef(raw.code_ref) };
  if (hasCode || required) {
    if (!hasCode) throw new ValidationError('code is required: the source of a JavaScript module that exports a handler (or code_ref: {digest, size} of code uploaded with PUT /api/v1/code/{digest})');
    return { code: validateCode(raw.code) };
  }
  return undefined;
}
