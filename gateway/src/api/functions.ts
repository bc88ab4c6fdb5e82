import Router from '@koa/router';
import type { Context } from 'koa';
import { FunctionRefusedError, NotFoundError, ValidationError, limits, parseLogQuery, type FunctionRecord, type Stores } from '@fnhost/core';
import { isUuid } from '@fnhost/core/ids.ts';
import type { AccessAttributes, Verb } from '../access/attributes.ts';
import { ForbiddenError } from '../access/caller.ts';
import type { AccessControl } from '../access/control.ts';
import type { CodeWriteOptions, FunctionService } from '../functions/service.ts';
import type { Invoker } from '../invoke/proxy.ts';
import type { LogWriter } from '../logs/writer.ts';
import { readJson } from './body.ts';
import { runResultBody } from './run-result.ts';

// /api/v1/functions: the function resource, its logs and its test run. Every
// route asks the access control first (access/control.ts: the namespace rule,
// then RBAC for a Kubernetes identity) with the verb of access/attributes.ts.

export interface FunctionRoutesDeps {
  functions: FunctionService;
  invoker: Invoker;
  writer: LogWriter;
  stores: Stores;
  now: () => number;
  access: AccessControl;
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

/** `?all_namespaces=true`: a listing of every namespace (the CLI's -A). */
export function allNamespacesParam(ctx: { query: Record<string, string | string[] | undefined> }): boolean {
  const raw = ctx.query.all_namespaces;
  if (raw === undefined || raw === 'false') return false;
  if (raw === 'true') {
    if (ctx.query.namespace !== undefined) throw new ValidationError('all_namespaces=true and namespace exclude each other');
    return true;
  }
  throw new ValidationError(`all_namespaces must be true or false, got ${JSON.stringify(Array.isArray(raw) ? raw : String(raw).slice(0, 40))}`);
}

/** `?allow_load_error=true` on a create or update: store code whose top level throws while loading. */
export function codeWriteOptions(ctx: { query: Record<string, string | string[] | undefined> }): CodeWriteOptions {
  const raw = ctx.query.allow_load_error;
  if (raw === undefined || raw === 'false') return {};
  if (raw === 'true') return { allowLoadError: true };
  throw new ValidationError(`allow_load_error must be true or false, got ${JSON.stringify(Array.isArray(raw) ? raw : String(raw).slice(0, 40))}`);
}

const ns = namespaceParam;

/**
 * The function a `{ref}` route acts on, once the caller may do `verb` on it.
 * The check is made in the function's own namespace (a UUID ref finds a
 * function in any namespace). A caller refused there while naming another
 * namespace learns nothing about it: the answer is the not-found one. A ref
 * that finds nothing is checked in the namespace asked for, so a caller
 * without rights there gets 403 whether or not the function exists.
 */
export async function authorizedFunction(
  ctx: Pick<Context, 'state' | 'query'> & { params: Record<string, string | undefined> },
  functions: FunctionService,
  access: AccessControl,
  verb: Verb,
  subresource?: AccessAttributes['subresource'],
): Promise<FunctionRecord> {
  const ref = ctx.params.ref!;
  const requested = functions.namespace(ns(ctx));
  let fn: FunctionRecord;
  try {
    fn = functions.resolve(ref, requested);
  } catch (err) {
    // A refused Function is told only to whom may see it: the same check as a name that finds nothing.
    if (err instanceof NotFoundError || err instanceof FunctionRefusedError) await access.check(ctx, { verb, resource: 'functions', subresource, namespace: requested, ...(isUuid(ref) ? {} : { name: ref }) });
    throw err;
  }
  try {
    await access.check(ctx, { verb, resource: 'functions', subresource, namespace: fn.namespace, name: fn.name });
  } catch (err) {
    if (err instanceof ForbiddenError && fn.namespace !== requested) throw new NotFoundError(`function "${ref}" not found in namespace "${requested}"`);
    throw err;
  }
  return fn;
}

export function functionRoutes(deps: FunctionRoutesDeps): Router {
  const { functions, invoker, writer, stores, access } = deps;
  const router = new Router({ prefix: '/api/v1/functions' });
  const target = (ctx: Context & { params: Record<string, string | undefined> }, verb: Verb, subresource?: AccessAttributes['subresource']) => authorizedFunction(ctx, functions, access, verb, subresource);

  router.get('/', async (ctx) => {
    let listed: FunctionRecord[];
    if (allNamespacesParam(ctx)) {
      // As kubectl's -A: a list across namespaces is a cluster-scope permission.
      await access.check(ctx, { verb: 'list', resource: 'functions', namespace: '' });
      listed = [];
      for (const fn of functions.all()) if (await access.namespaceAllowed(fn.namespace)) listed.push(fn);
    } else {
      // No ?namespace=: the default one (on one machine the only one).
      const namespace = functions.namespace(ns(ctx));
      await access.check(ctx, { verb: 'list', resource: 'functions', namespace });
      listed = functions.all(namespace);
    }
    ctx.body = { functions: await Promise.all(listed.map((fn) => functions.toApi(fn, false))) };
  });

  router.post('/', async (ctx) => {
    await access.check(ctx, { verb: 'create', resource: 'functions', namespace: functions.namespace(ns(ctx)) });
    const fn = await functions.create(await readJson(ctx, limits.MAX_API_BODY_BYTES), ns(ctx), codeWriteOptions(ctx));
    ctx.status = 201;
    ctx.set('location', `/api/v1/functions/${fn.function_id}`);
    ctx.body = await functions.toApi(fn, true);
  });

  router.get('/:ref', async (ctx) => {
    await functions.catchUp(ctx.params.ref!, ns(ctx));
    ctx.body = await functions.toApi(await target(ctx, 'get'), true);
  });

  router.patch('/:ref', async (ctx) => {
    await target(ctx, 'patch');
    ctx.body = await functions.toApi(await functions.update(ctx.params.ref!, await readJson(ctx, limits.MAX_API_BODY_BYTES), ns(ctx), codeWriteOptions(ctx)), true);
  });

  router.delete('/:ref', async (ctx) => {
    await target(ctx, 'delete');
    await functions.delete(ctx.params.ref!, ns(ctx));
    ctx.status = 204;
  });

  router.post('/:ref/activate', async (ctx) => {
    await target(ctx, 'patch');
    ctx.body = await functions.toApi(await functions.setActive(ctx.params.ref!, true, ns(ctx)), true);
  });

  router.post('/:ref/deactivate', async (ctx) => {
    await target(ctx, 'patch');
    ctx.body = await functions.toApi(await functions.setActive(ctx.params.ref!, false, ns(ctx)), true);
  });

  router.put('/:ref/retention', async (ctx) => {
    await target(ctx, 'update');
    ctx.body = await functions.toApi(await functions.setRetention(ctx.params.ref!, await readJson(ctx, limits.MAX_API_BODY_BYTES), ns(ctx)), true);
  });

  router.put('/:ref/scaling', async (ctx) => {
    ctx.body = await functions.toApi(await functions.setScaling(ctx.params.ref!, await readJson(ctx, 4096), ns(ctx)), true);
  });

  router.put('/:ref/schedule', async (ctx) => {
    await target(ctx, 'update');
    ctx.body = await functions.toApi(await functions.setSchedule(ctx.params.ref!, await readJson(ctx, limits.MAX_API_BODY_BYTES), ns(ctx)), true);
  });

  router.delete('/:ref/schedule', async (ctx) => {
    await target(ctx, 'patch');
    ctx.body = await functions.toApi(await functions.disableSchedule(ctx.params.ref!, ns(ctx)), true);
  });

  router.post('/:ref/test', async (ctx) => {
    const fn = await target(ctx, 'create', 'test');
    const request = parseTestRequest(await readJson(ctx, limits.MAX_API_BODY_BYTES));
    ctx.body = runResultBody(await invoker.run(fn, 'test', request));
  });

  router.get('/:ref/logs', async (ctx) => {
    const fn = await target(ctx, 'get', 'logs');
    const query = parseLogQuery({ status: ctx.query.status, limit: ctx.query.limit, page: ctx.query.page });
    // Read your own writes: what ran before this request is listed.
    await writer.flush();
    ctx.body = await stores.logs.list(fn.function_id, query, fn.retention, deps.now());
  });

  return router;
}
