import type { default as Koa, Context, Next } from 'koa';
import type Router from '@koa/router';
import { FnhostError } from '@fnhost/core';

// A router's answer to a method its routes lack, with the one error body of
// every other refusal (errorMiddleware) instead of Koa's plain-text status
// line: 405 method_not_allowed when the path takes other methods (RFC 9110
// 15.5.6, with Allow naming them), 501 method_not_implemented for a method
// no route of this server takes (TRACE, PROPFIND, ...; RFC 9110 15.6.2).
// OPTIONS answers 200 with Allow and no body. gateway/openapi.yaml says so
// under x-unlisted-methods.

/** A method the path does not take. */
export class MethodNotAllowedError extends FnhostError {
  constructor(method: string, path: string, allow: string) {
    super('method_not_allowed', 405, `${method} is not allowed on ${path}; it takes ${allow}`);
  }
}

/** A method no route of the server takes. */
export class MethodNotImplementedError extends FnhostError {
  constructor(method: string) {
    super('method_not_implemented', 501, `the method ${method} is not implemented here`, { expose: true });
  }
}

/** The router's routes, then its 405/501/OPTIONS answers. */
export function mountRouter(app: Koa, router: Router): void {
  app.use(router.routes()).use(otherMethods(router));
}

function otherMethods(router: Router) {
  const allowed = router.allowedMethods();
  return async (ctx: Context, next: Next) => {
    await allowed(ctx as Parameters<typeof allowed>[0], next);
    if (ctx.body !== undefined && ctx.body !== null) return;
    if (ctx.status === 405) throw new MethodNotAllowedError(ctx.method, ctx.path, ctx.response.get('allow'));
    if (ctx.status === 501) throw new MethodNotImplementedError(ctx.method);
  };
}
