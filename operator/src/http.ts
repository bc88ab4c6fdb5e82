import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { bearerRefusal } from '@fnhost/core/bearer.ts';
import type { Metrics } from './metrics.ts';

// /healthz: the process serves requests. /readyz: the operator is useful:
// a standby replica is ready (it is waiting for the Lease, as intended); the
// leader is ready once every informer has listed. /metrics: Prometheus text,
// with `metricsTokenDigest` only for that bearer token (FNHOST_METRICS_TOKEN).

export function startHttpServer(port: number, host: string, probes: { ready(): boolean; notReadyReason?(): string; metrics: Metrics; metricsTokenDigest?: Buffer }): Promise<Server> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    if (path === '/healthz') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
    } else if (path === '/readyz') {
      const ready = probes.ready();
      res.writeHead(ready ? 200 : 503, { 'content-type': 'text/plain' }).end(ready ? 'ok\n' : `${probes.notReadyReason?.() ?? 'informers not synced'}\n`);
    } else if (path === '/metrics') {
      const refused = bearerRefusal(req.headers.authorization, probes.metricsTokenDigest);
      if (refused !== null) {
        res.writeHead(401, { 'content-type': 'text/plain', 'www-authenticate': 'Bearer' }).end(refused === 'missing' ? '/metrics needs Authorization: Bearer <metrics token>\n' : 'the metrics token is wrong\n');
        return;
      }
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(probes.metrics.render());
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
    }
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}
