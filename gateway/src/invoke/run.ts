import { performance } from 'node:perf_hooks';
import { FnhostError, type FunctionRecord, type Trigger, type Upstream } from '@fnhost/core';
import { noteRequest, noteResponse } from './recording.ts';
import { RuntimeUnavailableError } from '../executor/errors.ts';
import { CAPTURE_LIMIT, collect, messageFrom500 } from './bodies.ts';
import { FunctionInactiveError, FunctionTimeoutError, recordText, runtimeEndedCall } from './errors.ts';
import { errorStackOf } from './error-stack.ts';
import type { ExecutionPath, RunOptions, RunRequest, RunResult, ScheduledFor } from './exchange.ts';
import { InvalidResponseError, unreadableFraming } from './upstream-answer.ts';
import { decodeURIComponentSafe, headersToCaller, headersToFunction, lowerCaseNames } from './headers.ts';

// One execution outside of an HTTP call (a scheduled run, function:test),
// through the same send path and the same log record as /invoke
// (./proxy.ts), answering with what a caller would have seen: the status,
// the headers and up to CAPTURE_LIMIT of the body. An inactive function is
// refused before anything begins, as /invoke refuses it: no record.

export async function runOutsideHttp(path: ExecutionPath, fn: FunctionRecord, trigger: Trigger, request: RunRequest, options: RunOptions = {}): Promise<RunResult> {
  // Refused before it begins, as an HTTP call is: no execution, so no record.
  if (!fn.active) throw new FunctionInactiveError(fn.name);
  const ex = path.begin(fn, trigger, options.pinned);
  ex.scheduled = options.scheduled;
  ex.async = options.async;
  if (ex.recording !== undefined) noteRequest(ex.recording, request.method, request.path, lowerCaseNames(request.headers), request.body);
  const headers = headersToFunction(lowerCaseNames(request.headers), { remoteAddress: '127.0.0.1', trustProxy: false, executionId: ex.logId, trigger });
  // An async attempt tells the handler which call and attempt it is (delivery is at least once: the id lets it skip a repeat).
  if (options.async !== undefined) {
    headers['x-fnhost-async-id'] = options.async.id;
    headers['x-fnhost-attempt'] = String(options.async.attempt);
  }
  let status: number;
  let errorMessage: string | null;
  let outHeaders: Record<string, string | string[]> = {};
  let data: Buffer;
  let truncated = false;
  try {
    const response = await path.send(ex, request.method, request.path, headers, request.body);
    status = response.statusCode;
    const errorHeader = response.headers['x-fnhost-error'];
    errorMessage = typeof errorHeader === 'string' ? decodeURIComponentSafe(errorHeader) : null;
    ex.errorStack = errorStackOf(response.headers);
    const ended = runtimeEndedCall(response.headers['x-fnhost-error-kind'], status, errorMessage, fn);
    if (ended !== undefined) {
      response.body.dump().catch(() => undefined);
      throw ended;
    }
    const unreadable = unreadableFraming(response.headers);
    if (unreadable !== undefined) {
      response.body.destroy();
      throw new InvalidResponseError(unreadable);
    }
    outHeaders = headersToCaller(response.headers);
    try {
      const got = await collect(response.body.stream(), CAPTURE_LIMIT);
      data = got.data;
      truncated = !got.complete;
      if (truncated) response.body.dump().catch(() => undefined);
    } catch (err) {
      if (ex.timedOut) throw new FunctionTimeoutError(fn.timeout_seconds);
      throw new RuntimeUnavailableError(`the function's response broke off: ${(err as Error).message}`);
    }
    if (status === 500 && errorMessage === null) errorMessage = messageFrom500(data, response.headers['content-type']);
    if (ex.recording !== undefined) noteResponse(ex.recording, status, outHeaders, data, truncated ? data.length + 1 : data.length);
  } catch (err) {
    const e = err instanceof FnhostError ? err : new RuntimeUnavailableError((err as Error).message);
    status = e.status;
    errorMessage = recordText(e);
    data = Buffer.from(JSON.stringify({ error: e.code, message: e.expose ? e.message : 'internal error' }));
    outHeaders = { 'content-type': 'application/json; charset=utf-8' };
  }
  path.finish(ex, status, errorMessage);
  return { log_id: ex.logId, status_code: status, execution_time_ms: Math.max(0, Math.round(performance.now() - ex.startedAt)), error_message: errorMessage, headers: outHeaders, body: data, truncated };
}
