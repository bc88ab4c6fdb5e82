import Router from '@koa/router';
import { FnhostError } from '@fnhost/core';
import { bearerRefusal } from '@fnhost/core/bearer.ts';
import { UnauthorizedError } from '../auth.ts';

/**
 * /healthz (the process answers), /readyz (it takes calls; the body says why not),
 * /metrics (Prometheus text; with `metricsTokenDigest`, only for that bearer token:
 * FNHOST_METRICS_TOKEN, the chart's metrics.auth).
 */
export function healthRoutes(options: { ready(): boolean; notReadyReason?(): string | undefined; metricsText(): string; metricsTokenDigest?: Buffer }): Router {
  const health = new Router();
  health.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  health.get('/readyz', (ctx) => {
    if (!options.ready()) throw new FnhostError('not_ready', 503, options.notReadyReason?.() ?? 'the gateway is starting or shutting down', { expose: true });
    ctx.body = { status: 'ready' };
  });
  health.get('/metrics', (ctx) => {
    const refused = bearerRefusal(ctx.get('authorization') || undefined, options.metricsTokenDigest);
    if (refused === 'missing') throw new UnauthorizedError('/metrics needs Authorization: Bearer <metrics token> (FNHOST_METRICS_TOKEN)');
    if (refused === 'wrong') throw new UnauthorizedError('the metrics token is wrong');
    ctx.type = 'text/plain; version=0.0.4; charset=utf-8';
    ctx.body = options.metricsText();
  });
  return health;
}
