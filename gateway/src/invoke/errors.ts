import type { ServerResponse } from 'node:http';
import { FnhostError, type FunctionRecord } from '@fnhost/core';
import { loadsAsModule } from '../executor/module-file.ts';
import { FunctionFailedToLoadError, loadFailureText } from '../functions/code-check.ts';

// The platform's invocation outcomes (docs/api-outline.md "Platform statuses").

export class FunctionInactiveError extends FnhostError {
  constructor(name: string) {
    super('function_inactive', 403, `function ${name} is inactive; activate it to invoke it`);
  }
}

export class PayloadTooLargeError extends FnhostError {
  constructor(limit: number, what = 'request body') {
    super('payload_too_large', 413, `${what} is larger than the limit of ${limit} bytes`);
  }
}

export class FunctionTimeoutError extends FnhostError {
  /** `detail`: what the call was waiting for when its limit passed (a runtime still loading its module). */
  constructor(seconds: number, detail?: string) {
    super('function_timeout', 504, `function exceeded its time limit of ${seconds} s${detail === undefined ? '' : ` ${detail}`}`, { expose: true });
  }
}

/** What a call that reached its limit before its runtime had loaded was waiting for. */
export const STILL_LOADING = 'while its runtime was still starting and loading its module (the load has a bound of its own and goes on)';

export class FunctionOutOfMemoryError extends FnhostError {
  constructor(mib: number) {
    super('function_out_of_memory', 502, `function ran out of memory (limit ${mib} MiB)`, { expose: true });
  }
}

/**
 * The runtime ended the call itself (`x-fnhost-error-kind`: timeout,
 * out_of_memory, load): the platform's error, with one code whichever way the
 * function ran (HTTP call, test, schedule); undefined for the handler's own answers.
 * A load failure's text is the owner's (recordText), never the caller's.
 */
export function runtimeEndedCall(kind: unknown, status: number, message: string | null, fn: FunctionRecord): FnhostError | undefined {
  if (message === null) return undefined;
  if (kind === 'load') return new FunctionFailedToLoadError(loadFailureText(undefined, message, fn.code, loadsAsModule(fn.code)));
  if (kind === 'timeout') return new FnhostError('function_timeout', status, message, { expose: true });
  if (kind === 'out_of_memory') return new FnhostError('function_out_of_memory', status, message, { expose: true });
  return undefined;
}

/** What the execution record says of a platform-made error: the full text, which the caller's body may not show. */
export function recordText(err: FnhostError): string {
  return err instanceof FunctionFailedToLoadError ? err.detail : err.message;
}

/** The body every platform-made error gets, `{error, message}`; hides internals when expose is false. */
export function errorBody(err: unknown): { status: number; body: string } {
  if (err instanceof FnhostError) {
    return { status: err.status, body: JSON.stringify({ error: err.code, message: err.expose ? err.message : 'internal error' }) };
  }
  const status = (err as { status?: unknown })?.status;
  const expose = (err as { expose?: unknown })?.expose === true;
  if (typeof status === 'number' && status >= 400 && status < 600) {
    return { status, body: JSON.stringify({ error: codeForStatus(status), message: expose ? (err as Error).message : 'internal error' }) };
  }
  return { status: 500, body: JSON.stringify({ error: 'internal', message: 'internal error' }) };
}

export function codeForStatus(status: number): string {
  switch (status) {
    case 400: return 'invalid_argument';
    case 401: return 'unauthorized';
    case 403: return 'forbidden';
    case 404: return 'not_found';
    case 405: return 'method_not_allowed';
    case 409: return 'conflict';
    case 413: return 'payload_too_large';
    case 415: return 'unsupported_media_type';
    default: return status >= 500 ? 'internal' : 'bad_request';
  }
}

export function writeError(res: ServerResponse, err: unknown, extraHeaders?: Record<string, string>): number {
  const { status, body } = errorBody(err);
  if (res.headersSent || res.destroyed) {
    res.destroy();
    return status;
  }
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), ...extraHeaders });
  res.end(body);
  return status;
}

/**
 * undici refused to send a request (a header or method it does not accept).
 * The runtime never saw it, so it is not recycled: before this class, such a
 * refusal was taken for a crashed runtime, and any caller could end the
 * calls in flight on it with one header.
 */
export class UnforwardableRequestError extends FnhostError {
  constructor(reason: string, options?: { cause?: unknown }) {
    super('bad_request', 400, `the request cannot be forwarded to the function: ${reason}`, { ...options, expose: true });
  }
}

/** undici's error codes for a request it refused before writing a byte. */
const REFUSED_BEFORE_SENDING = new Set(['UND_ERR_INVALID_ARG', 'UND_ERR_NOT_SUPPORTED']);

export function isRefusedBeforeSending(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && REFUSED_BEFORE_SENDING.has(code);
}
