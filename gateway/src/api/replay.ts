import Router from '@koa/router';
import {
  LogNotFoundError, ReplayError, ValidationError, bodyBytes, diffResponses, limits, recordResponse, recordingOf, validateCode,
  type FunctionRecord, type RecordedExchange, type Stores, type ThrowawayRuntime,
} from '@fnhost/core';
import type { FunctionService } from '../functions/service.ts';
import type { Invoker } from '../invoke/proxy.ts';
import type { LogWriter } from '../logs/writer.ts';
import { FunctionInactiveError } from '../invoke/errors.ts';
import { readJson } from './body.ts';
import { authorizedFunction } from './functions.ts';
import type { AccessControl } from '../access/control.ts';
import type { Verb } from '../access/attributes.ts';

// Replay (docs/replay.md): a record's stored request, and that request sent
// again to the function's current code, or once to a throwaway version of
// it (never stored, never serving), recorded with trigger `replay`.

export interface ReplayRoutesDeps {
  functions: FunctionService;
  invoker: Invoker;
  writer: LogWriter;
  stores: Stores;
  now: () => number;
  access: AccessControl;
  /** A runtime for an unstored version: one machine Executor.throwaway, cluster mode a throwaway Function (cluster/throwaway.ts). */
  throwaway: (fn: FunctionRecord) => Promise<ThrowawayRuntime>;
}

const REPLAY_FIELDS = new Set(['code']);

export function replayRoutes(deps: ReplayRoutesDeps): Router {
  const { functions, invoker, writer, stores, access } = deps;
  const router = new Router({ prefix: '/api/v1/functions' });

  /** The record's exchange, or the error that says why there is none. */
  // Reading a stored request is reading the function's logs; replaying it runs the function, as a test run does.
  async function recorded(
    ctx: Parameters<typeof authorizedFunction>[0],
    logId: string,
    verb: Verb,
    subresource: 'logs' | 'test',
  ): Promise<{ fn: FunctionRecord; exchange: RecordedExchange; executed_at: string; trigger: string }> {
    const fn = await authorizedFunction(ctx, functions, access, verb, subresource);
    if (logId.length > 100) throw new ValidationError('log id is longer than 100 characters');
    // Read your own writes: a call made just before is found.
    await writer.flush();
    const found = await stores.exchanges.get(fn.function_id, logId, fn.retention, deps.now());
    if (!found.found) throw new LogNotFoundError(`log "${logId}" not found for function ${fn.name} (never recorded, or past its retention)`);
    if (found.exchange === null) {
      throw new ReplayError('replay_not_recorded', 409, recordingOf(fn).enabled
        ? `log ${logId} of ${fn.name} has no recorded request: ${fn.name} was not recording requests when it ran (record_requests was turned on later)`
        : `log ${logId} of ${fn.name} has no recorded request: ${fn.name} does not record requests (record_requests is off); turn it on and replay a later execution`);
    }
    return { fn, exchange: found.exchange, executed_at: found.executed_at, trigger: found.trigger };
  }

  router.get('/:ref/logs/:id/request', async (ctx) => {
    const { exchange, executed_at, trigger } = await recorded(ctx, ctx.params.id!, 'get', 'logs');
    ctx.body = { log_id: ctx.params.id, executed_at, trigger, request: exchange.request, response: exchange.response };
  });

  router.post('/:ref/logs/:id/replay', async (ctx) => {
    const raw = await readJson(ctx, limits.MAX_API_BODY_BYTES);
    const spec = raw === undefined ? {} : raw;
    if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) throw new ValidationError('replay body must be an object {code?}');
    for (const key of Object.keys(spec)) if (!REPLAY_FIELDS.has(key)) throw new ValidationError(`replay: unknown field "${key}"; allowed: code`);
    const code = (spec as { code?: unknown }).code === undefined ? undefined : validateCode((spec as { code?: unknown }).code);
    const { fn, exchange } = await recorded(ctx, ctx.params.id!, 'create', 'test');
    const { request } = exchange;
    // Refused before anything else, as /invoke refuses it: nothing runs, nothing is recorded.
    if (!fn.active) throw new FunctionInactiveError(fn.name);
    if (request.body?.omitted !== undefined || request.body?.truncated === true) {
      throw new ReplayError('replay_body_incomplete', 422, request.body.omitted !== undefined
        ? `log ${ctx.params.id} cannot be replayed: its request body was not kept (${request.body.omitted})`
        : `log ${ctx.params.id} cannot be replayed: its request body was ${request.body.size} bytes, over the ${fn.name}'s record_requests.max_body_bytes bound, so only its first ${Buffer.byteLength(request.body.data, request.body.encoding === 'base64' ? 'base64' : 'utf8')} were kept`);
    }
    const run = {
      method: request.method,
      path: request.query === '' ? request.path : `${request.path}?${request.query}`,
      headers: request.headers,
      body: bodyBytes(request.body),
    };
    const target: FunctionRecord = code === undefined ? fn : { ...fn, code };
    let runtime: ThrowawayRuntime | undefined;
    let result;
    try {
      if (code !== undefined) runtime = await deps.throwaway(target);
      result = await invoker.run(target, 'replay', run, { pinned: runtime?.upstream });
    } finally {
      await runtime?.discard();
    }
    // The new answer recorded as the old one was (same bound, same masking), so they compare like for like.
    const settings = recordingOf(fn);
    const replayed = recordResponse(result.status_code, result.headers, result.body, { ...settings, enabled: true }, result.truncated ? result.body.length + 1 : result.body.length);
    ctx.body = {
      log_id: result.log_id,
      replayed_from: ctx.params.id,
      code: code === undefined ? 'current' : 'throwaway',
      execution_time_ms: result.execution_time_ms,
      error_message: result.error_message,
      recorded: exchange.response,
      replayed,
      changes: exchange.response === null ? null : diffResponses(exchange.response, replayed),
    };
  });

  return router;
}
