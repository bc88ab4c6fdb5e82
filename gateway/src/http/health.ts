import Router from '@koa/router';
import { FnhostError } from '@fnhost/core';

/** /healthz (the process answers), /readyz (it takes calls), /metrics (Prometheus text). */
export function healthRoutes(options: { ready(): boolean; metricsText(): string }): Router {
  const health = new Router();
  health.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  health.get('/readyz', (ctx) => {
    if (!options.ready()) throw new FnhostError('not_ready', 503, 'the gateway is starting or shutting down', { expose: true });
    ctx.body = { status: 'ready' };
  });
  health.get('/metrics', (ctx) => {
    ctx.type = 'text/plain; version=0.0.4; charset=utf-8';
    ctx.body = options.metricsText();
  });
  return health;
}
