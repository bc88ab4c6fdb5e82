import type { default as Koa, Context, Next } from 'koa';
import type Router from '@koa/router';
import { NotFoundError } from '@fnhost/core';
import { UnauthorizedError } from '../auth.ts';
import { ADMIN_CALLER, setCaller } from '../access/caller.ts';
import { newApp, type AppBase } from '../http/errors.ts';
import { mountRouter } from '../http/methods.ts';
import { setSecurityHeaders, type AdminPanel } from './router.ts';

// The admin listener (FNHOST_ADMIN_PORT): the panel on an origin of its own.
// It serves the panel's page, its sign-in, and the management API under
// /admin/api/v1 for the panel session only (cookie, CSRF token, Origin).
// It serves nothing a function wrote: no /invoke, no bearer-token /api/v1
// (that stays on the main listener), so no function's script runs on this
// origin and the browser's same-origin policy keeps it from the panel's
// session and answers. docs/security.md.

/** Where the panel reaches the management API: the same routes as /api/v1. */
export const PANEL_API_PREFIX = '/admin/api/v1';

export interface AdminAppOptions extends AppBase {
  panel: AdminPanel;
  /** The management API's routers (their paths start with /api/v1). */
  api: Router[];
}

export function adminApp(options: AdminAppOptions): Koa {
  const app = newApp(options);
  app.use(async (ctx: Context, next: Next) => {
    setSecurityHeaders(ctx);
    if (ctx.path === '/' && (ctx.method === 'GET' || ctx.method === 'HEAD')) return ctx.redirect('/admin/');
    if (ctx.path === PANEL_API_PREFIX || ctx.path.startsWith(PANEL_API_PREFIX + '/')) {
      ctx.set('cache-control', 'no-store');
      if (!(await options.panel.authenticate(ctx))) throw new UnauthorizedError('the panel API needs a panel session: sign in at /admin/');
      // A session is opened with the admin token: the panel acts as its holder.
      setCaller(ctx, ADMIN_CALLER);
      // The API's routers know their paths as /api/v1/...
      ctx.path = ctx.path.slice('/admin'.length);
      return next();
    }
    if (ctx.path === '/api' || ctx.path.startsWith('/api/')) throw new NotFoundError(`no route ${ctx.method} ${ctx.path}: the bearer-token API is on the main listener (PORT); the panel's is ${PANEL_API_PREFIX}`);
    return next();
  });
  for (const r of options.api) mountRouter(app, r);
  mountRouter(app, options.panel.router);
  return app;
}
