import Router from '@koa/router';
import { ASYNC_STATES, NotFoundError, ValidationError, isAsyncId, limits, type AsyncCallStore, type AsyncState } from '@fnhost/core';
import type { AccessControl } from '../access/control.ts';
import { readJson } from '../api/body.ts';
import { authorizedFunction } from '../api/functions.ts';
import type { FunctionService } from '../functions/service.ts';
import { ownerView } from './view.ts';

// /api/v1/functions/{ref}/async: a function's async calls for its owner
// (docs/async.md). Reading them is reading the logs (each attempt names its
// record); requeueing dead calls runs the function, as a test run does.

export interface AsyncRoutesDeps {
  functions: FunctionService;
  store: AsyncCallStore;
  now: () => number;
  access: AccessControl;
  /** Told of requeued calls (the dispatcher starts them at once). */
  requeued(functionId: string): void;
}

const DEFAULT_LIMIT = 100;
export const MAX_ASYNC_LIST = 1000;
const DEFAULT_STATES: readonly AsyncState[] = ['queued', 'running', 'dead'];
/** The most ids one retry request may name. */
const MAX_RETRY_IDS = 1000;

export function parseStates(raw: unknown): readonly AsyncState[] {
  if (raw === undefined) return DEFAULT_STATES;
  if (typeof raw !== 'string' || raw === '') throw new ValidationError(`state must be a comma-separated list of ${ASYNC_STATES.join(', ')}`);
  const states = raw.split(',');
  for (const s of states) if (!ASYNC_STATES.includes(s as AsyncState)) throw new ValidationError(`state "${s.slice(0, 40)}" is not one of ${ASYNC_STATES.join(', ')}`);
  return [...new Set(states)] as AsyncState[];
}

export function parseLimit(raw: unknown): number {
  if (raw === undefined) return DEFAULT_LIMIT;
  if (typeof raw !== 'string' || !/^\d{1,4}$/.test(raw) || Number(raw) < 1 || Number(raw) > MAX_ASYNC_LIST) {
    throw new ValidationError(`limit ${JSON.stringify(raw)?.slice(0, 40)} must be a whole number from 1 to ${MAX_ASYNC_LIST}`);
  }
  return Number(raw);
}

/** `{"ids": [...]}` or `{"all": true}`. */
export function parseRetry(raw: unknown): readonly string[] | 'all' {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new ValidationError('the body must be {"ids": ["async_..."]} or {"all": true}');
  const body = raw as Record<string, unknown>;
  if (body.all === true && body.ids === undefined) return 'all';
  if (body.all !== undefined && body.all !== false) throw new ValidationError('all must be true (and no ids given) to requeue every dead call');
  if (!Array.isArray(body.ids) || body.ids.length === 0 || body.ids.length > MAX_RETRY_IDS) throw new ValidationError(`ids must be a list of 1 to ${MAX_RETRY_IDS} async ids`);
  for (const id of body.ids) if (typeof id !== 'string' || !isAsyncId(id)) throw new ValidationError(`"${String(id).slice(0, 60)}" is not an async id (async_ and 22 characters)`);
  return body.ids as string[];
}

export function asyncRoutes(deps: AsyncRoutesDeps): Router {
  const { functions, store, access } = deps;
  const router = new Router({ prefix: '/api/v1/functions' });

  router.get('/:ref/async', async (ctx) => {
    const fn = await authorizedFunction(ctx, functions, access, 'get', 'logs');
    const states = parseStates(ctx.query.state);
    const limit = parseLimit(ctx.query.limit);
    const calls = await store.list(fn.function_id, states, limit);
    ctx.body = { function_id: fn.function_id, states, calls: calls.map(ownerView) };
  });

  router.get('/:ref/async/:id', async (ctx) => {
    const fn = await authorizedFunction(ctx, functions, access, 'get', 'logs');
    const id = ctx.params.id!;
    const call = isAsyncId(id) ? await store.get(fn.function_id, id) : null;
    if (call === null) throw new NotFoundError(`no async call "${id.slice(0, 60)}" of function ${fn.name}`);
    ctx.body = ownerView(call);
  });

  router.post('/:ref/dead-letters/retry', async (ctx) => {
    const fn = await authorizedFunction(ctx, functions, access, 'create', 'test');
    const which = parseRetry(await readJson(ctx, limits.MAX_API_BODY_BYTES));
    const requeued = await store.requeue(fn.function_id, which, deps.now());
    if (requeued > 0) deps.requeued(fn.function_id);
    ctx.body = { function_id: fn.function_id, requeued };
  });

  return router;
}
