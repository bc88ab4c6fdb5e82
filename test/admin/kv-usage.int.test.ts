import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { startGateway, type RunningGateway } from '../helpers/platform.ts';
import { apiClient, ensurePanelPrerequisites, signedInBrowser } from './scenarios.ts';

// The function page's KV usage line (docs/kv.md "Usage") in Debian's
// headless Chromium against a real gateway process: the keys and bytes a
// function stores, of its own quota.

describe('admin panel: a function\'s KV usage (headless Chromium)', function () {
  this.timeout(120_000);
  let gw: RunningGateway;
  let closeBrowser: (() => Promise<void>) | undefined;
  let page: Page;

  before(async () => {
    ensurePanelPrerequisites();
    gw = await startGateway();
    const api = apiClient(gw);
    const code = `export default async (req, res) => { await kv.set('a', 'x'.repeat(2046)); await kv.set('b', 1); res.json({ ok: true }); }`;
    const made = await api('POST', '/api/v1/functions', { name: 'notes', code, kv_quota: { max_bytes: 1048576, max_keys: 50 } });
    expect(made.status, JSON.stringify(made.body)).to.equal(201);
    const ran = await api('POST', '/api/v1/functions/notes/test', {});
    expect(ran.status, JSON.stringify(ran.body)).to.equal(200);
    ({ page, close: closeBrowser } = await signedInBrowser(gw, { waitMs: 30_000 }));
  });
  after(async () => {
    await closeBrowser?.();
    await gw?.stop();
  });

  it('shows the keys and bytes the function stores, of its quota', async () => {
    await page.goto(`${gw.adminUrl}/admin/functions/notes`);
    const line = page.getByTestId('kv-usage');
    await line.waitFor();
    // 'a' + 2048 bytes of JSON, 'b' + 1 byte: 2051 bytes = 2 KiB.
    expect(await line.innerText()).to.equal('2 keys of 50, 2 KiB of 1 MiB (0%)');
  });
});
