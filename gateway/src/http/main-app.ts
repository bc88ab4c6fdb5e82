import type { default as Koa, Context, Next } from 'koa';
import type Router from '@koa/router';
import { NotFoundError } from '@fnhost/core';
import type { AdminToken } from '../auth.ts';
import { apiAuth } from '../access/authenticate.ts';
import type { KubeAccess } from '../access/kube-access.ts';
import { newApp, type AppBase } from './errors.ts';
import { mountRouter } from './methods.ts';

// The main listener's Koa part (PORT): health and metrics, the management API
// /api/v1 for bearer tokens only (the admin token, or in cluster mode a
// Kubernetes token: access/authenticate.ts), and the runtimes' /internal/v1. /invoke
// is served beside it by the raw invocation path (app.ts). A panel cookie
// opens nothing here: the panel has a listener of its own (admin/listener.ts),
// because this origin serves pages that functions write. docs/security.md.

export interface MainAppOptions extends AppBase {
  health: Router;
  /** The management API's routers (paths under /api/v1). */
  api: Router[];
  internal: Router;
  adminToken: AdminToken;
  /** Cluster mode: Kubernetes tokens accepted too. */
  kubeAccess?: KubeAccess;
}

export function mainApp(options: MainAppOptions): Koa {
  const app = newApp(options);
  mountRouter(app, options.health);
  const auth = apiAuth({ adminToken: options.adminToken, kube: options.kubeAccess });
  app.use(async (ctx: Context, next: Next) => {
    if (ctx.path === '/api/v1' || ctx.path.startsWith('/api/v1/')) return auth(ctx, next);
    if (ctx.path === '/admin' || ctx.path.startsWith('/admin/')) throw new NotFoundError('the admin panel is not on this listener: it has its own (FNHOST_ADMIN_PORT, by default the port after PORT; in the chart ingress.adminHost)');
    return next();
  });
  for (const r of options.api) mountRouter(app, r);
  mountRouter(app, options.internal);
  return app;
}
