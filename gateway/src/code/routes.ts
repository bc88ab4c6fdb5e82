import Router from '@koa/router';
import type { Context } from 'koa';
import { CodeStoreFullError, CodeTooLargeError, limits, parseDigest, type CodeStore } from '@fnhost/core';
import type { AccessControl } from '../access/control.ts';
import { namespaceParam } from '../api/functions.ts';
import type { FunctionService } from '../functions/service.ts';
import { BodyTimeoutError } from '../invoke/body-budget.ts';
import type { Refusals } from '../resources/refusals.ts';
import type { CodeSettings } from './settings.ts';
import { bodyChunks, TooManyUploadsError, UploadSlots } from './upload.ts';

// /api/v1/code/{digest}: code uploaded by digest (docs/gateway.md "The code store"). Whoever may
// create functions in a namespace may upload there (the create verb on functions). The body
// streams to the store (a temp file, GridFS chunks) as it is hashed; it is never held whole.

export interface CodeRoutesDeps {
  store: CodeStore;
  functions: FunctionService;
  access: AccessControl;
  settings: CodeSettings;
  bodyIdleTimeoutMs: number;
  refusals: Refusals;
  now: () => number;
}

export function codeRoutes(deps: CodeRoutesDeps): Router {
  const router = new Router({ prefix: '/api/v1/code' });
  const slots = new UploadSlots(deps.settings.maxConcurrentUploads);
  const bounds = { maxTotalBytes: deps.settings.maxTotalBytes, maxNamespaceBytes: deps.settings.maxNamespaceBytes };

  const refused = (err: unknown, namespace: string): void => {
    if (err instanceof CodeStoreFullError) {
      deps.refusals.refused(err.scope === 'total' ? 'code_store_bytes' : 'namespace_code_bytes', 'a code upload was refused: the code store is at its byte bound', { scope: err.scope, namespace });
    } else if (err instanceof TooManyUploadsError) {
      deps.refusals.refused('code_uploads', 'a code upload was refused: too many uploads at once', { limit: slots.limit });
    } else if (err instanceof BodyTimeoutError) {
      deps.refusals.refused('body_timeout', 'a code upload stopped arriving; it was ended', { body_idle_timeout_ms: deps.bodyIdleTimeoutMs });
    }
  };

  const precheck = async (namespace: string, digest: string, size: number): Promise<void> => {
    if ((await deps.store.stat(namespace, digest)) !== null) return;
    const [total, mine] = await Promise.all([deps.store.usage(), deps.store.usage(namespace)]);
    if (total.bytes + size > bounds.maxTotalBytes) throw new CodeStoreFullError('total', total.bytes, size, bounds.maxTotalBytes, namespace);
    if (mine.bytes + size > bounds.maxNamespaceBytes) throw new CodeStoreFullError('namespace', mine.bytes, size, bounds.maxNamespaceBytes, namespace);
  };

  router.put('/:digest', async (ctx: Context) => {
    const namespace = deps.functions.namespace(namespaceParam(ctx));
    await deps.access.check(ctx, { verb: 'create', resource: 'functions', namespace });
    const digest = parseDigest(ctx.params.digest);
    try {
      // Refused on its declared length before a byte is read.
      const declared = ctx.get('content-length') === '' ? undefined : Number(ctx.get('content-length'));
      if (declared !== undefined && declared > limits.MAX_CODE_REF_BYTES) throw new CodeTooLargeError(declared);
      const release = slots.take();
      try {
        // A declared length past a byte bound is refused before a byte is read too (the stream is checked again as it comes).
        if (declared !== undefined && Number.isSafeInteger(declared)) await precheck(namespace, digest, declared);
        const result = await deps.store.put(bodyChunks(ctx.req, deps.bodyIdleTimeoutMs), { expectedDigest: digest, namespace, maxBytes: limits.MAX_CODE_REF_BYTES, bounds, now: deps.now() });
        ctx.status = result.created ? 201 : 200;
        ctx.set('location', `/api/v1/code/${digest}`);
        ctx.body = { digest: result.digest, size: result.size, created: result.created };
      } finally {
        release();
      }
    } catch (err) {
      refused(err, namespace);
      if (err instanceof TooManyUploadsError) ctx.set('retry-after', String(err.retryAfterSeconds));
      // The rest of a refused body is not read: the connection ends after the answer.
      if (!ctx.req.readableEnded) ctx.set('connection', 'close');
      throw err;
    }
  });

  router.head('/:digest', async (ctx: Context) => {
    const namespace = deps.functions.namespace(namespaceParam(ctx));
    await deps.access.check(ctx, { verb: 'get', resource: 'functions', namespace });
    const info = await deps.store.stat(namespace, parseDigest(ctx.params.digest));
    ctx.status = info === null ? 404 : 200;
    if (info !== null) ctx.set('x-fnhost-code-size', String(info.size));
  });

  return router;
}
