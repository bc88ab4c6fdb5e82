import Router from '@koa/router';
import { LogNotFoundError, type Stores } from '@fnhost/core';
import type { AccessControl } from '../access/control.ts';
import type { FunctionService } from '../functions/service.ts';
import type { LogWriter } from '../logs/writer.ts';
import { authorizedFunction } from './functions.ts';

// /api/v1/functions/{ref}/logs/{id} (one record with its console output) and
// /api/v1/functions/{ref}/latency (percentiles from the histogram buckets).
// Console output is only ever read here, one record at a time: listings stay
// as small as the spec's fields (P3).

export interface ExecutionRoutesDeps {
  functions: FunctionService;
  writer: LogWriter;
  stores: Stores;
  now: () => number;
  access: AccessControl;
}

/** What a log id looks like (core/src/ids.ts); anything else cannot name a record. */
const LOG_ID = /^log_[A-Za-z0-9_-]{1,64}$/;

export function executionRoutes(deps: ExecutionRoutesDeps): Router {
  const { functions, writer, stores, access } = deps;
  const router = new Router({ prefix: '/api/v1/functions' });

  // A record (console output included) is read with the logs permission; latency with the function's own.
  router.get('/:ref/logs/:id', async (ctx) => {
    const fn = await authorizedFunction(ctx, functions, access, 'get', 'logs');
    const id = ctx.params.id!;
    const unknown = () => new LogNotFoundError(`function ${fn.name} has no execution log "${id.slice(0, 80)}" (it never existed, or its retention removed it; fnhost function:logs ${fn.name} lists the ones kept)`);
    if (!LOG_ID.test(id)) throw unknown();
    // Read your own writes, as the listing does.
    await writer.flush();
    const log = await stores.insight.getLog(fn.function_id, id, fn.retention, deps.now());
    if (log === null) throw unknown();
    ctx.body = { ...log, console: await stores.insight.getConsole(fn.function_id, id) };
  });

  router.get('/:ref/latency', async (ctx) => {
    const fn = await authorizedFunction(ctx, functions, access, 'get');
    await writer.flush();
    ctx.body = await stores.insight.latency(fn.function_id, deps.now());
  });

  return router;
}
