import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { startGateway, type RunningGateway } from '../helpers/platform.ts';
import { apiClient, ensurePanelPrerequisites, signedInBrowser, until } from './scenarios.ts';

// The policies page's "Check a connection" beside the editor (issue 29), in Debian's headless
// Chromium against a real gateway process: the same answer as fnhost policy:check, with the
// rule, the scope and the addresses; a save makes the next check answer by the new policy.

describe('admin panel: the explanation beside the policy editor (headless Chromium)', function () {
  this.timeout(120_000);
  let gw: RunningGateway;
  let closeBrowser: (() => Promise<void>) | undefined;
  let page: Page;

  before(async () => {
    ensurePanelPrerequisites();
    gw = await startGateway();
    const api = apiClient(gw);
    expect((await api('POST', '/api/v1/functions', { name: 'caller', code: 'export default (req, res) => res.json({})' })).status).to.equal(201);
    expect((await api('PUT', '/api/v1/network-policy/global', { default: 'deny', allow: ['localhost'], deny: [] })).status).to.equal(200);
    ({ page, close: closeBrowser } = await signedInBrowser(gw, { waitMs: 30_000 }));
  });
  after(async () => {
    await closeBrowser?.();
    await gw?.stop();
  });

  const ask = async (target: string) => {
    const card = page.getByRole('region', { name: 'Check a connection' });
    await card.getByLabel('Host and port').fill(target);
    await card.getByRole('button', { name: 'Check' }).click();
    const answer = card.getByRole('status', { name: 'Connection check answer' });
    await until(`the answer for ${target}`, async () => (await answer.count()) === 1 && (await answer.innerText()).includes(target.replace(/^\[|\](?=:)/g, '')));
    return answer.innerText();
  };

  it('answers denied with the rule, the scope and the addresses a name resolves to; an allow saved in the editor changes the answer', async () => {
    await page.goto(`${gw.adminUrl}/admin/policies`);
    await page.getByRole('heading', { name: 'Check a connection' }).waitFor();
    let text = await ask('localhost:3000');
    expect(text).to.match(/^Denied: connection to localhost:3000 blocked by network policy: it resolves to (127\.0\.0\.1|::1) \(global rule host\)/);
    expect(text).to.contain('Rule host (global policy)');
    expect(text).to.match(/127\.0\.0\.1: denied \(global rule host\)/);

    text = await ask('127.0.0.1:3000');
    expect(text).to.contain('Denied');
    // Open the machine's loopback to this function in the editor, then ask again.
    await page.getByLabel('Scope').selectOption({ label: 'Function caller' });
    await page.getByLabel('Add allow pattern').fill('127.0.0.1');
    await page.getByRole('button', { name: 'Add' }).last().click();
    await page.getByRole('button', { name: 'Save policy' }).click();
    await page.getByText('Saved the policy of caller').waitFor();
    text = await ask('127.0.0.1:3000');
    expect(text).to.match(/^Allowed: connection to 127\.0\.0\.1:3000 is allowed \(function rule 127\.0\.0\.1\)/);
    const admin = new URL(gw.adminUrl).port;
    text = await ask(`127.0.0.1:${admin}`);
    expect(text).to.contain("the platform's own listener");
    expect(text).to.contain('Rule listener (global policy)');
  });
});
