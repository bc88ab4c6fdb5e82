import Koa, { type Context, type Next } from 'koa';
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
      // A refusal at a bound says when to try again (RFC 9110 §10.2.3).
      const retryAfter = (err as { retryAfterSeconds?: unknown }).retryAfterSeconds;
      if (typeof retryAfter === 'number') ctx.set('retry-after', String(retryAfter));
    }
  };
}

/** What every listener's Koa app shares: proxy trust, no default error printing, errorMiddleware first. */
export interface AppBase {
  /** Trust X-Forwarded-* from the peer (FNHOST_TRUST_PROXY). */
  trustProxy: boolean;
  logger: Logger;
}

export function newApp(base: AppBase): Koa {
  const app = new Koa({ proxy: base.trustProxy });
  app.silent = true;
  app.use(errorMiddleware(base.logger));
  return app;
}
