import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { startGateway, type RunningGateway } from '../helpers/platform.ts';
import { apiClient, ensurePanelPrerequisites, signedInBrowser, until } from './scenarios.ts';

// The function page's async calls in Debian's headless Chromium against a real gateway process
// with real runtimes (issue 33): the queued, running and dead calls as `fnhost function:async`
// lists them, and dead calls requeued from the page, one and all.

describe('admin panel: a function\'s async calls (headless Chromium)', function () {
  this.timeout(180_000);
  let gw: RunningGateway;
  let api: ReturnType<typeof apiClient>;
  let closeBrowser: (() => Promise<void>) | undefined;
  let page: Page;
  const dead: string[] = [];
  const held: string[] = [];

  const accept = async (fnId: string) => {
    const r = await fetch(`${gw.url}/async-invoke/${fnId}/job`, { method: 'POST', body: 'x' });
    expect(r.status).to.equal(202);
    return ((await r.json()) as { async_id: string }).async_id;
  };
  const attemptsOf = async (fn: string, id: string) => (await api('GET', `/api/v1/functions/${fn}/async/${id}`)).body.attempts.length as number;

  before(async () => {
    ensurePanelPrerequisites();
    // One attempt at once per function, so that a slow function's calls wait queued behind it.
    gw = await startGateway({ env: { FNHOST_ASYNC_MAX_IN_FLIGHT: '1', FNHOST_ASYNC_POLL_MS: '100', FNHOST_ASYNC_RETRY_BASE_MS: '50' } });
    api = apiClient(gw);
    const flaky = await api('POST', '/api/v1/functions', { name: 'flaky', code: 'export default (req, res) => res.status(500).json({ broken: true })', async: { max_retries: 0 } });
    expect(flaky.status, JSON.stringify(flaky.body)).to.equal(201);
    const slow = await api('POST', '/api/v1/functions', { name: 'slow', timeout_seconds: 120, code: 'export default async (req, res) => { await new Promise((r) => setTimeout(r, 90_000)); res.end() }' });
    expect(slow.status, JSON.stringify(slow.body)).to.equal(201);
    expect((await api('POST', '/api/v1/functions', { name: 'quiet', code: 'export default (req, res) => res.end()' })).status).to.equal(201);
    for (let i = 0; i < 2; i++) dead.push(await accept(flaky.body.function_id));
    for (let i = 0; i < 3; i++) held.push(await accept(slow.body.function_id));
    await until('both flaky calls dead', async () => (await api('GET', '/api/v1/functions/flaky/async?state=dead')).body.calls.length === 2, 60_000);
    await until('one slow call running', async () => (await api('GET', '/api/v1/functions/slow/async?state=running')).body.calls.length === 1, 60_000);
    ({ page, close: closeBrowser } = await signedInBrowser(gw, { waitMs: 30_000 }));
  });
  after(async () => {
    await closeBrowser?.();
    await gw?.stop();
  });

  it('lists the running and queued calls oldest first, with no retry for them', async () => {
    await page.goto(`${gw.adminUrl}/admin/functions/slow`);
    const section = page.getByRole('region', { name: 'Async calls', exact: true });
    const table = section.getByRole('region', { name: 'Async calls table' });
    await table.waitFor();
    const rows = table.locator('tbody tr[data-async-id]');
    await until('three rows', async () => (await rows.count()) === 3);
    expect(await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-async-id')))).to.deep.equal(held);
    expect(await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-state')))).to.deep.equal(['running', 'queued', 'queued']);
    expect(await rows.nth(0).innerText()).to.contain('running now');
    expect(await rows.nth(1).innerText()).to.match(/POST \/job[\s\S]*attempt at /);
    expect(await section.getByRole('button', { name: /^Retry async_/ }).count()).to.equal(0);
    expect(await section.getByRole('button', { name: 'Retry all dead' }).isDisabled()).to.equal(true);
  });

  it('shows dead calls with their attempts and why; Retry requeues one, Retry all dead the rest', async () => {
    await page.goto(`${gw.adminUrl}/admin/functions/flaky`);
    const section = page.getByRole('region', { name: 'Async calls', exact: true });
    const rows = section.locator('tbody tr[data-state="dead"]');
    await until('two dead rows', async () => (await rows.count()) === 2);
    for (const id of dead) expect(await section.locator(`tr[data-async-id="${id}"]`).innerText()).to.match(/dead[\s\S]*1: 500[\s\S]*retries used up/);

    await section.getByRole('button', { name: `Retry ${dead[0]}` }).click();
    // Requeued as a new call: it runs once more (its earlier attempt kept) and dies again.
    await until('the first call run again', async () => (await attemptsOf('flaky', dead[0]!)) === 2, 60_000);
    expect(await attemptsOf('flaky', dead[1]!)).to.equal(1);
    await page.getByRole('button', { name: 'Refresh' }).click();
    await until('the panel showing its second attempt', async () => /1: 500, 1: 500/.test(await section.locator(`tr[data-async-id="${dead[0]}"]`).innerText()));

    await section.getByRole('button', { name: 'Retry all dead' }).click();
    await section.getByRole('button', { name: 'Yes, retry all' }).click();
    await until('both calls run again', async () => (await attemptsOf('flaky', dead[0]!)) === 3 && (await attemptsOf('flaky', dead[1]!)) === 2, 60_000);
    // Each attempt is an execution record of the function (trigger async).
    await page.getByRole('button', { name: 'Refresh' }).click();
    const logs = page.getByRole('region', { name: 'Execution logs table' });
    await until('five async records in the execution logs', async () => (await logs.locator('tbody tr[data-log-id]').count()) === 5);
    expect(await logs.innerText()).to.contain('async');
  });

  it('a function without async calls says so', async () => {
    await page.goto(`${gw.adminUrl}/admin/functions/quiet`);
    const section = page.getByRole('region', { name: 'Async calls', exact: true });
    await until('the empty list', async () => (await section.innerText()).includes('No queued, running or dead calls.'));
  });
});
