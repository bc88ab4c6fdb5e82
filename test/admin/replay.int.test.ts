import { expect } from 'chai';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { startGateway, type RunningGateway } from '../helpers/platform.ts';
import { CHROMIUM, LAUNCH_ARGS, apiClient, ensurePanelPrerequisites } from './scenarios.ts';

// The panel's request recording (docs/replay.md) in Debian's headless
// Chromium against a real gateway: turning it on with a redaction policy,
// and a record's stored request opened from the log table.

describe('admin panel: request recording and a record\'s stored request', function () {
  this.timeout(120_000);
  let gw: RunningGateway;
  let context: BrowserContext | undefined;
  let userDataDir: string | undefined;
  let page: Page;
  let id: string;

  before(async () => {
    ensurePanelPrerequisites();
    gw = await startGateway();
    const created = await apiClient(gw)('POST', '/api/v1/functions', { name: 'rec', code: 'export default (req, res) => res.json({ ok: true, got: req.body })' });
    expect(created.status).to.equal(201);
    id = created.body.function_id;
    userDataDir = await mkdtemp(join(tmpdir(), 'fnhost-chromium-'));
    context = await chromium.launchPersistentContext(userDataDir, { executablePath: CHROMIUM, headless: true, args: LAUNCH_ARGS, viewport: { width: 1280, height: 900 } });
    page = context.pages()[0] ?? (await context.newPage());
    await page.goto(`${gw.adminUrl}/admin/`);
    await page.getByLabel('Admin token').fill(gw.token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { level: 1, name: 'Functions' }).waitFor();
  });
  after(async () => {
    await context?.close();
    if (userDataDir) await rm(userDataDir, { recursive: true, force: true });
    await gw?.stop();
  });

  it('shows recording off, turns it on with a masked JSON path, and opens a record\'s stored request (masked, no credentials)', async () => {
    await page.goto(`${gw.adminUrl}/admin/functions/rec`);
    await page.getByRole('heading', { level: 2, name: 'Request recording' }).waitFor();
    expect(await page.getByTestId('recording-summary').textContent()).to.equal('off');
    // A policy the server refuses is shown, naming the path.
    await page.getByLabel('Record requests and responses').check();
    await page.getByLabel(/Mask these JSON paths/).fill('card.number');
    await page.getByRole('button', { name: 'Save recording' }).click();
    expect(await page.getByRole('alert').textContent()).to.match(/JSON path "card.number" is invalid/);
    await page.getByLabel(/Mask these JSON paths/).fill('$..card.number');
    await page.getByLabel(/Mask these headers/).fill('x-card-token');
    await page.getByRole('button', { name: 'Save recording' }).click();
    await page.getByTestId('recording-summary').filter({ hasText: 'on, bodies up to 65536 bytes, masked: x-card-token, $..card.number' }).waitFor();
    expect((await apiClient(gw)('GET', '/api/v1/functions/rec')).body.record_requests).to.deep.include({ enabled: true });

    const call = await fetch(`${gw.url}/invoke/${id}/buy?x=1`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer caller-secret', 'x-card-token': 'tok_1' },
      body: JSON.stringify({ card: { number: '4111111111111111' }, qty: 2 }),
    });
    expect(call.status).to.equal(200);
    await call.arrayBuffer();
    await page.getByRole('button', { name: 'Refresh' }).click();
    const row = page.locator('tr[data-log-id]').first();
    await row.getByText('Request', { exact: true }).click();
    const body = row.locator('.exchange-body');
    await body.waitFor();
    const text = (await body.textContent())!;
    expect(text).to.contain('POST /buy?x=1');
    expect(text).to.contain('x-card-token: [redacted]');
    expect(text).to.contain('"number": "[redacted]"');
    expect(text).to.contain('"qty": 2');
    expect(text).to.contain('Response: 200');
    expect(text).to.contain(`fnhost function:replay rec ${await row.getAttribute('data-log-id')}`);
    expect(text).to.not.contain('4111111111111111').and.not.contain('caller-secret').and.not.contain('authorization');
  });
});
