import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { startGateway, type RunningGateway } from '../helpers/platform.ts';
import { apiClient, ensurePanelPrerequisites, signedInBrowser, until } from './scenarios.ts';

// The function page's ledger of scheduled runs in Debian's headless Chromium
// against a real gateway process: its runs in the schedule's zone (the
// browser's is another), a run fired from the page, and no such section for a
// function without a schedule.

describe('admin panel: the ledger of scheduled runs (headless Chromium)', function () {
  this.timeout(120_000);
  let gw: RunningGateway;
  let closeBrowser: (() => Promise<void>) | undefined;
  let page: Page;

  before(async () => {
    ensurePanelPrerequisites();
    gw = await startGateway();
    const api = apiClient(gw);
    const made = await api('POST', '/api/v1/functions', { name: 'nightly', code: 'export default (req, res) => res.json({ ok: true })', schedule: { cron: '0 3 * * *', timezone: 'Europe/Paris' } });
    expect(made.status, JSON.stringify(made.body)).to.equal(201);
    expect((await api('POST', '/api/v1/functions', { name: 'plain', code: 'export default (req, res) => res.json({})' })).status).to.equal(201);
    expect((await api('POST', '/api/v1/functions/nightly/schedule/run')).status).to.equal(200);
    // A browser zone that is neither UTC nor the schedule's, so a time shown in the wrong zone shows.
    ({ page, close: closeBrowser } = await signedInBrowser(gw, { waitMs: 30_000, timezoneId: 'Asia/Tokyo' }));
  });
  after(async () => {
    await closeBrowser?.();
    await gw?.stop();
  });

  it("shows the runs newest first in the schedule's zone with the next planned ones, and fires one from the page", async () => {
    await page.goto(`${gw.adminUrl}/admin/functions/nightly`);
    const section = page.getByRole('region', { name: 'Scheduled runs', exact: true });
    await section.getByRole('region', { name: 'Scheduled runs table' }).waitFor();
    expect(await section.innerText()).to.contain("Times in Europe/Paris (the schedule's zone). Overlapping runs: forbid");
    // The next runs at 03:00 in Paris, named as such, although the browser is in Tokyo.
    expect(await section.innerText()).to.match(/Next planned: .*03:00:00 Europe\/Paris/);
    const rows = section.locator('tbody tr[data-outcome="ran"]');
    expect(await rows.count()).to.equal(1);
    const first = await rows.first().innerText();
    expect(first).to.match(/Europe\/Paris \(manual\)/);
    expect(first).to.match(/\b200\b/);
    expect(first).to.match(/log_\S+/);

    await section.getByRole('button', { name: 'Run schedule now' }).click();
    await page.getByRole('heading', { name: 'Schedule run (manual)' }).waitFor();
    await until('the second manual run in the ledger', async () => (await rows.count()) === 2);
    const logs = page.getByRole('region', { name: 'Execution logs table' });
    await until('both runs in the execution logs', async () => (await logs.locator('tbody tr[data-log-id]').count()) === 2);
    expect(await logs.innerText()).to.contain('schedule');
  });

  it('a function without a schedule has no ledger section', async () => {
    await page.goto(`${gw.adminUrl}/admin/functions/plain`);
    await page.getByRole('heading', { level: 2, name: 'Details' }).waitFor();
    expect(await page.getByRole('heading', { level: 2, name: 'Scheduled runs' }).count()).to.equal(0);
  });
});
