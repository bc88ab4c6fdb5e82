import { expect } from 'chai';
import type { AddressInfo, Server } from 'node:net';
import { secretDigest } from '../../core/src/bearer.ts';
import { startHttpServer } from '../../operator/src/http.ts';
import { Metrics } from '../../operator/src/metrics.ts';

// The operator's health and metrics port: /readyz says why it is not ready
// (MongoDB unreachable, informers not synced); /metrics with a token set
// (FNHOST_METRICS_TOKEN) answers only that bearer token.

describe('operator: health and metrics port', () => {
  let server: Server;
  let base: string;
  let reason: string | undefined = 'MongoDB unreachable at mongodb://db:27017/fnhost: connect ECONNREFUSED';

  before(async () => {
    const metrics = new Metrics();
    metrics.inc('fnhost_operator_reconciles_total', 'Reconciles.');
    server = await startHttpServer(0, '127.0.0.1', { ready: () => reason === undefined, notReadyReason: () => reason ?? '', metrics, metricsTokenDigest: secretDigest('operator-metrics-0123456789') });
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('answers /readyz 503 with the reason while it waits, 200 after', async () => {
    const waiting = await fetch(`${base}/readyz`);
    expect(waiting.status).to.equal(503);
    expect(await waiting.text()).to.contain('MongoDB unreachable at mongodb://db:27017/fnhost');
    reason = undefined;
    expect((await fetch(`${base}/readyz`)).status).to.equal(200);
    expect((await fetch(`${base}/healthz`)).status).to.equal(200);
  });

  it('answers /metrics only with the metrics token', async () => {
    const none = await fetch(`${base}/metrics`);
    expect(none.status).to.equal(401);
    expect(await none.text()).not.to.contain('fnhost_operator_reconciles_total');
    const wrong = await fetch(`${base}/metrics`, { headers: { authorization: 'Bearer operator-metrics-012345678X' } });
    expect(wrong.status).to.equal(401);
    await wrong.arrayBuffer();
    const right = await fetch(`${base}/metrics`, { headers: { authorization: 'Bearer operator-metrics-0123456789' } });
    expect(right.status).to.equal(200);
    expect(await right.text()).to.contain('fnhost_operator_reconciles_total');
  });
});
