import Router from '@koa/router';
import { FnhostError } from '@fnhost/core';

// The gateway's own health: /healthz (the process answers), /readyz (it serves
// calls: not while starting or shutting down) and /metrics (Prometheus text,
// assembled by the caller from the parts that count things).

export function healthRoutes(deps: { ready: () => boolean; metricsText: () => string }): Router {
  const health = new Router();
  health.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  health.get('/readyz', (ctx) => {
    if (!deps.ready()) throw new FnhostError('not_ready', 503, 'the gateway is starting or shutting down', { expose: true });
    ctx.body = { status: 'ready' };
  });
  health.get('/metrics', (ctx) => {
    ctx.type = 'text/plain; version=0.0.4; charset=utf-8';
    ctx.body = deps.metricsText();
  });
  return health;
}
