import { expect } from 'chai';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGateway, type RunningGateway } from '../helpers/platform.ts';

// FNHOST_METRICS_TOKEN (the chart's metrics.auth, given as a file like every
// secret there): /metrics answers only that bearer token; health stays open
// (the kubelet's probes carry no credential).

describe('gateway: /metrics behind a bearer token (FNHOST_METRICS_TOKEN_FILE)', () => {
  const metricsToken = 'metrics-0123456789abcdef';
  let dir: string;
  let h: RunningGateway;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'fnhost-metrics-auth-'));
    await writeFile(join(dir, 'metrics-token'), metricsToken + '\n', { mode: 0o600 });
    h = await startGateway({ env: { FNHOST_METRICS_TOKEN_FILE: join(dir, 'metrics-token') } });
  });

  after(async () => {
    await h?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('refuses /metrics without the token and with a wrong one (401, never the figures), and serves it with the token', async () => {
    const none = await fetch(`${h.url}/metrics`);
    expect(none.status).to.equal(401);
    const noneBody = await none.text();
    expect(noneBody).to.contain('unauthorized').and.not.to.contain('fnhost_invocations_total');
    const wrong = await fetch(`${h.url}/metrics`, { headers: { authorization: 'Bearer metrics-0123456789abcdeX' } });
    expect(wrong.status).to.equal(401);
    expect(await wrong.text()).not.to.contain('fnhost_invocations_total');
    // The admin token is another credential: it does not open /metrics.
    const admin = await fetch(`${h.url}/metrics`, { headers: { authorization: `Bearer ${h.token}` } });
    expect(admin.status).to.equal(401);
    await admin.arrayBuffer();
    const right = await fetch(`${h.url}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } });
    expect(right.status).to.equal(200);
    expect(await right.text()).to.contain('# TYPE fnhost_invocations_total counter');
  });

  it('keeps /healthz and /readyz open for the probes', async () => {
    expect((await fetch(`${h.url}/healthz`)).status).to.equal(200);
    expect((await fetch(`${h.url}/readyz`)).status).to.equal(200);
  });

  it('logs only JSON records, and never the metrics token', () => {
    const lines = h.output().split('\n').filter((l) => l.trim() !== '');
    expect(lines.length).to.be.greaterThan(0);
    for (const line of lines) expect(() => JSON.parse(line), line).not.to.throw();
    expect(h.output()).not.to.contain(metricsToken);
  });

  it('refuses a metrics token shorter than 16 characters at start, naming the setting', async () => {
    await writeFile(join(dir, 'short'), 'short\n');
    const err = await startGateway({ env: { FNHOST_METRICS_TOKEN_FILE: join(dir, 'short') } }).then(
      async (g) => { await g.stop(); return null; },
      (e: unknown) => e as Error,
    );
    expect(err?.message).to.contain('FNHOST_METRICS_TOKEN is shorter than 16 characters');
  });
});
