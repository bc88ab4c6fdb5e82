import type { Context, Next } from 'koa';
import { NotFoundError, type FnhostError } from '@fnhost/core';
import { errorBody } from '../invoke/errors.ts';
import type { Logger } from '../log.ts';

/** The error middleware: the one place error bodies are written (both listeners use it). */
export function errorMiddleware(logger: Logger) {
  return async (ctx: Context, next: Next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) throw new NotFoundError(`no route ${ctx.method} ${ctx.path}`);
    } catch (err) {
      const { status, body } = errorBody(err);
      if (status >= 500) logger.error('request failed', { method: ctx.method, path: ctx.path, status, error: (err as Error).message, code: (err as FnhostError).code });
      ctx.status = status;
      ctx.type = 'application/json';
      ctx.body = body;
      if (status === 401) ctx.set('www-authenticate', 'Bearer realm="fnhost"');
    }
  };
}
