import Router from '@koa/router';
import { ValidationError, limits, parseLogQuery, type Stores } from '@fnhost/core';
import type { FunctionService } from '../functions/service.ts';
import type { Invoker } from '../invoke/proxy.ts';
import type { LogWriter } from '../logs/writer.ts';
import { readJson } from './body.ts';
import { runResultBody } from './run-result.ts';

// /api/v1/functions: the function resource, its logs and its test run.

export interface FunctionRoutesDeps {
  functions: FunctionService;
  invoker: Invoker;
  writer: LogWriter;
  stores: Stores;
  now: () => number;
}

const TEST_FIELDS = new Set(['method', 'path', 'query', 'headers', 'body']);
const METHOD = /^[A-Z]{1,16}$/;

/** The request function:test sends: default `POST /` with the JSON body `{}`. */
export function parseTestRequest(raw: unknown): { method: string; path: string; headers: Record<string, string>; body: Buffer | null } {
  const spec = raw === undefined ? {} : raw;
  if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) throw new ValidationError('test body must be an object {method?, path?, query?, headers?, body?}');
  const s = spec as Record<string, unknown>;
  for (const key of Object.keys(s)) if (!TEST_FIELDS.has(key)) throw new ValidationError(`test: unknown field "${key}"; allowed: ${[...TEST_FIELDS].join(', ')}`);
  const method = s.method === undefined ? 'POST' : String(s.method).toUpperCase();
  if (!METHOD.test(method)) throw new ValidationError(`test method ${JSON.stringify(s.method)} is not an HTTP method`);
  const path = s.path === undefined ? '/' : s.path;
  if (typeof path !== 'string' || !path.startsWith('/') || path.length > 2048 || /[\s#]/.test(path)) throw new ValidationError(`test path ${JSON.stringify(path)} must start with "/" and contain no spaces`);
  let query = '';
  if (s.query !== undefined) {
    if (typeof s.query !== 'object' || s.query === null || Array.isArray(s.query)) throw new ValidationError('test query must be an object of string values');
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(s.query)) {
      if (Array.isArray(v)) for (const item of v) params.append(k, String(item));
      else params.append(k, String(v));
    }
    query = params.toString();
  }
  const headers: Record<string, string> = {};
  if (s.headers !== undefined) {
    if (typeof s.headers !== 'object' || s.headers === null || Array.isArray(s.headers)) throw new ValidationError('test headers must be an object of string values');
    for (const [k, v] of Object.entries(s.headers)) {
      if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(k)) throw new ValidationError(`test header name "${k}" is invalid`);
      if (typeof v !== 'string' || /[\r\n]/.test(v)) throw new ValidationError(`test header ${k} must be a single-line string`);
      headers[k.toLowerCase()] = v;
    }
  }
  let body: Buffer | null = null;
  const hasBody = method !== 'GET' && method !== 'HEAD';
  if (hasBody) {
    const value = s.body === undefined ? {} : s.body;
    if (typeof value === 'string' && headers['content-type'] !== undefined && !/json/i.test(headers['content-type'])) {
      body = Buffer.from(value);
    } else {
      body = Buffer.from(JSON.stringify(value));
      headers['content-type'] ??= 'application/json';
    }
    headers['content-length'] = String(body.length);
  } else if (s.body !== undefined) {
    throw new ValidationError(`test: a ${method} request has no body`);
  }
  const fullPath = query === '' ? path : `${path}${path.includes('?') ? '&' : '?'}${query}`;
  return { method, path: fullPath, headers, body };
}

/** `?namespace=` of a management request (once at most); undefined means the gateway's default. */
export function namespaceParam(ctx: { query: Record<string, string | string[] | undefined> }): string | undefined {
  const raw = ctx.query.namespace;
  if (Array.isArray(raw)) throw new ValidationError('namespace must be given once');
  return raw;
}

const ns = namespaceParam;

export function functionRoutes(deps: FunctionRoutesDeps): Router {
  const { functions, invoker, writer, stores } = deps;
  const router = new Router({ prefix: '/api/v1/functions' });

  router.get('/', async (ctx) => {
    // One machine: the default namespace is the only one, so this lists everything, as before namespaces.
    ctx.body = { functions: await Promise.all(functions.all(ns(ctx)).map((fn) => functions.toApi(fn, false))) };
  });

  router.post('/', async (ctx) => {
    const fn = await functions.create(await readJson(ctx, limits.MAX_API_BODY_BYTES), ns(ctx));
    ctx.status = 201;
    ctx.set('location', `/api/v1/functions/${fn.function_id}`);
    ctx.body = await functions.toApi(fn, true);
  });

  router.get('/:ref', async (ctx) => {
    ctx.body = await functions.toApi(functions.resolve(ctx.params.ref!, ns(ctx)), true);
  });

  router.patch('/:ref', async (ctx) => {
    ctx.body = await functions.toApi(await functions.update(ctx.params.ref!, await readJson(ctx, limits.MAX_API_BODY_BYTES), ns(ctx)), true);
  });

  router.delete('/:ref', async (ctx) => {
    await functions.delete(ctx.params.ref!, ns(ctx));
    ctx.status = 204;
  });

  router.post('/:ref/activate', async (ctx) => {
    ctx.body = await functions.toApi(await functions.setActive(ctx.params.ref!, true, ns(ctx)), true);
  });

  router.post('/:ref/deactivate', async (ctx) => {
    ctx.body = await functions.toApi(await functions.setActive(ctx.params.ref!, false, ns(ctx)), true);
  });

  router.put('/:ref/retention', async (ctx) => {
    ctx.body = await functions.toApi(await functions.setRetention(ctx.params.ref!, await readJson(ctx, limits.MAX_API_BODY_BYTES), ns(ctx)), true);
  });

  router.put('/:ref/schedule', async (ctx) => {
    ctx.body = await functions.toApi(await functions.setSchedule(ctx.params.ref!, await readJson(ctx, limits.MAX_API_BODY_BYTES), ns(ctx)), true);
  });

  router.delete('/:ref/schedule', async (ctx) => {
    ctx.body = await functions.toApi(await functions.disableSchedule(ctx.params.ref!, ns(ctx)), true);
  });

  router.post('/:ref/test', async (ctx) => {
    const fn = functions.resolve(ctx.params.ref!, ns(ctx));
    const request = parseTestRequest(await readJson(ctx, limits.MAX_API_BODY_BYTES));
    ctx.body = runResultBody(await invoker.run(fn, 'test', request));
  });

  router.get('/:ref/logs', async (ctx) => {
    const fn = functions.resolve(ctx.params.ref!, ns(ctx));
    const query = parseLogQuery({ status: ctx.query.status, limit: ctx.query.limit, page: ctx.query.page });
    // Read your own writes: what ran before this request is listed.
    await writer.flush();
    ctx.body = await stores.logs.list(fn.function_id, query, fn.retention, deps.now());
  });

  return router;
}
