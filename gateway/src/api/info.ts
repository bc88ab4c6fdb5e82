import Router from '@koa/router';
import type { ApiServerInfo } from '@fnhost/core/api.ts';

// GET /api/v1/info: which kind of gateway answers (one machine or cluster) and
// the namespace of requests that name none. The CLI asks it before it lets the
// current kube context choose a namespace, which only means something against
// a cluster (docs/cli.md, Namespaces). Behind the admin token like all of /api/v1.

export function infoRoutes(info: ApiServerInfo): Router {
  const router = new Router({ prefix: '/api/v1' });
  const body: ApiServerInfo = { mode: info.mode, default_namespace: info.default_namespace };
  if (info.sandbox !== undefined) body.sandbox = info.sandbox;
  router.get('/info', (ctx) => {
    ctx.body = body;
  });
  return router;
}
