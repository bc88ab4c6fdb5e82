import { expect } from 'chai';
import type { BrowserContext, Page } from 'playwright-core';
import { startGateway, type RunningGateway } from '../helpers/platform.ts';
import { apiClient, ensurePanelPrerequisites, signedInBrowser, until } from './scenarios.ts';

// What a new user met in the panel after the first ten minutes (issue 20,
// item 8), each in Debian's headless Chromium against a real gateway: long
// input, precise pattern messages, unsaved changes, confirmations, long
// error messages, the chart and the functions table on a 390 px screen, the
// log filter and page in the URL, the first policy change, a missing
// function's page.

const WAIT_MS = 30_000;

describe('admin panel: long input, unsaved changes, confirmations, narrow screens, URL state', function () {
  this.timeout(180_000);
  let gw: RunningGateway;
  let context: BrowserContext;
  let page: Page;
  let closeBrowser: (() => Promise<void>) | undefined;
  const ids: Record<string, string> = {};
  const api = (method: string, path: string, body?: unknown) => apiClient(gw)(method, path, body);
  const invoke = async (name: string, query = '') => (await fetch(`${gw.url}/invoke/${ids[name]}${query}`)).status;
  /** How far the page scrolls sideways (0 when nothing is wider than the screen). */
  const overflow = () => page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  const openPolicies = async () => {
    await page.goto(`${gw.adminUrl}/admin/policies`);
    await page.getByRole('heading', { level: 1, name: 'Network policies' }).waitFor();
  };
  const openFunction = async (name: string, query = '') => {
    await page.goto(`${gw.adminUrl}/admin/functions/${name}${query}`);
    await page.getByRole('heading', { level: 1, name: new RegExp(`^${name}`) }).waitFor();
  };

  before(async () => {
    ensurePanelPrerequisites();
    gw = await startGateway();
    const code: Record<string, string> = {
      pager: `export default (req, res) => req.query.fail ? res.status(500).json({ failed: true }) : res.json({ ok: true })`,
      longerr: `export default () => { throw new Error('boom ' + 'x'.repeat(3000)); }`,
      // A call with ?wait=1 takes 2.5 s: the calls around it fall into buckets with empty ones between.
      slow: `export default async (req, res) => { if (req.query.wait) await new Promise((r) => setTimeout(r, 2500)); res.json({}); }`,
      guarded: `export default (req, res) => res.json({ on: true })`,
    };
    for (const [name, source] of Object.entries(code)) {
      const created = await api('POST', '/api/v1/functions', { name, code: source });
      expect(created.status, JSON.stringify(created.body)).to.equal(201);
      ids[name] = created.body.function_id;
    }
    for (let i = 0; i < 25; i++) expect(await invoke('pager')).to.equal(200);
    for (let i = 0; i < 5; i++) expect(await invoke('pager', '?fail=1')).to.equal(500);
    expect(await invoke('longerr')).to.equal(500);
    expect(await invoke('slow')).to.equal(200);
    expect(await invoke('slow', '?wait=1')).to.equal(200);
    expect(await invoke('slow')).to.equal(200);
    ({ context, page, close: closeBrowser } = await signedInBrowser(gw, { waitMs: WAIT_MS }));
  });

  after(async () => {
    await closeBrowser?.();
    await gw?.stop();
  });

  it('a 5,000-character pattern neither widens the page nor comes back whole in the message or the 400', async () => {
    await openPolicies();
    const long = 'a'.repeat(5000);
    const deny = page.getByRole('group', { name: 'Denied hosts' });
    await deny.getByLabel('Add deny pattern').fill(long);
    const message = deny.getByText(/network policy pattern/);
    await message.waitFor();
    const text = await message.innerText();
    expect(text).to.contain('(5000 characters)');
    expect(text.length).to.be.below(300);
    expect(await overflow()).to.be.at.most(1);
    const refused = await api('PUT', '/api/v1/network-policy/global', { default: 'allow', deny: [long] });
    expect(refused.status).to.equal(400);
    expect(refused.body.message).to.contain('(5000 characters)');
    expect(JSON.stringify(refused.body).length).to.be.below(400);
    await deny.getByLabel('Add deny pattern').fill('');
  });

  it('says what a refused pattern is: a URL, a host with a path, a script, a bad CIDR', async () => {
    const deny = page.getByRole('group', { name: 'Denied hosts' });
    const input = deny.getByLabel('Add deny pattern');
    const said: [string, RegExp][] = [
      ['http://', /is invalid: a URL; give a host name \(example\.com\) or a CIDR/],
      ['https://api.example.com/v1', /is invalid: a URL; give a host name/],
      ['example.com/x', /is invalid: a host with a path; give the host alone \(example\.com\)/],
      ['<script>alert(1)</script>', /is invalid: markup or a script, not a host/],
      ['10.0.0.0/33', /is invalid: not a valid CIDR: the prefix length of an IPv4 network is a number from 0 to 32, got "33"/],
    ];
    for (const [raw, expected] of said) {
      await input.fill(raw);
      await until(`the message for ${raw}`, async () => expected.test(await page.locator(`#${await input.getAttribute('aria-describedby')}`).innerText()), WAIT_MS);
      expect(await input.getAttribute('aria-invalid')).to.equal('true');
    }
    await input.fill('');
  });

  it('asks before unsaved policy edits are lost by a link, by another scope, or by the back button', async () => {
    await openPolicies();
    const deny = page.getByRole('group', { name: 'Denied hosts' });
    await deny.getByLabel('Add deny pattern').fill('unsaved.example.com');
    await deny.getByRole('button', { name: 'Add' }).click();
    await page.getByText('Unsaved changes').waitFor();
    const questions: string[] = [];
    // Stay: the edit is kept.
    page.once('dialog', (d) => {
      questions.push(d.message());
      void d.dismiss();
    });
    await page.getByRole('link', { name: 'Functions', exact: true }).click();
    await until('the question', async () => questions.length === 1, WAIT_MS);
    expect(questions[0]).to.equal('The policy has unsaved changes. Leave and lose them?');
    expect(new URL(page.url()).pathname).to.equal('/admin/policies');
    await deny.getByRole('listitem').filter({ hasText: 'unsaved.example.com' }).waitFor();
    // Another scope would load its own policy: asked too, and refused keeps the scope.
    page.once('dialog', (d) => {
      questions.push(d.message());
      void d.dismiss();
    });
    await page.getByLabel('Scope').selectOption({ label: 'Function guarded' });
    await until('the second question', async () => questions.length === 2, WAIT_MS);
    expect(await page.getByLabel('Scope').inputValue()).to.equal('global');
    await deny.getByRole('listitem').filter({ hasText: 'unsaved.example.com' }).waitFor();
    // A reload or a closed tab: the browser's own question (beforeunload), and staying keeps the edit.
    const types: string[] = [];
    page.once('dialog', (d) => {
      types.push(d.type());
      void d.dismiss();
    });
    await page.reload({ timeout: 2_000 }).catch(() => undefined);
    await until('the browser\'s question', async () => types.length === 1, WAIT_MS);
    expect(types).to.deep.equal(['beforeunload']);
    await deny.getByRole('listitem').filter({ hasText: 'unsaved.example.com' }).waitFor();
    page.once('dialog', (d) => void d.accept());
    await page.getByRole('link', { name: 'Functions', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Functions' }).waitFor();
    expect((await api('GET', '/api/v1/network-policy')).body.global.deny).to.deep.equal([]);
    // The back button within the panel asks too, and staying puts the URL back.
    await page.getByRole('link', { name: 'Network policies' }).click();
    await deny.getByLabel('Add deny pattern').fill('unsaved.example.com');
    await deny.getByRole('button', { name: 'Add' }).click();
    page.once('dialog', (d) => {
      questions.push(d.message());
      void d.dismiss();
    });
    await page.evaluate(() => window.history.back());
    await until('the question on back', async () => questions.length === 3, WAIT_MS);
    await until('the policies URL again', async () => new URL(page.url()).pathname === '/admin/policies', WAIT_MS);
    await deny.getByRole('listitem').filter({ hasText: 'unsaved.example.com' }).waitFor();
    page.once('dialog', (d) => void d.accept());
    await page.evaluate(() => window.history.back());
    await page.getByRole('heading', { level: 1, name: 'Functions' }).waitFor();
  });

  it('reads the first policy of a scope as "no own policy", not "none (removed)"', async () => {
    expect((await api('PUT', `/api/v1/network-policy/functions/guarded`, { default: 'allow', deny: ['first.example.com'] })).status).to.equal(200);
    await openPolicies();
    const row = page.getByRole('row').filter({ hasText: 'function guarded' }).first();
    await row.waitFor();
    const cells = await row.getByRole('cell').allInnerTexts();
    expect(cells[3]).to.equal('no own policy (the global one applied)');
    expect(cells[4]).to.contain('deny [first.example.com]');
    expect(await page.getByRole('table').innerText()).not.to.contain('none (removed)');
  });

  it('asks before it removes a function policy, and Cancel keeps it', async () => {
    await page.getByLabel('Scope').selectOption({ label: 'Function guarded (own policy)' });
    await page.getByRole('button', { name: 'Remove function policy' }).click();
    const ask = page.getByRole('group', { name: /^Remove the policy of guarded\?/ });
    await ask.waitFor();
    await ask.getByRole('button', { name: 'Cancel' }).click();
    expect(await ask.count()).to.equal(0);
    expect((await api('GET', '/api/v1/network-policy')).body.functions[ids.guarded!]).to.not.equal(undefined);
    await page.getByRole('button', { name: 'Remove function policy' }).click();
    await page.getByRole('button', { name: 'Yes, remove it' }).click();
    await page.getByText('Removed the policy of guarded').waitFor();
    expect((await api('GET', '/api/v1/network-policy')).body.functions[ids.guarded!]).to.equal(undefined);
    const newest = page.getByRole('row').filter({ hasText: 'function guarded' }).first();
    await until('the removal in the history', async () => (await newest.innerText()).includes('removed (the global policy applies)'), WAIT_MS);
  });

  it('asks before it deactivates a function, and Cancel keeps it active', async () => {
    await openFunction('guarded');
    await page.getByRole('button', { name: 'Deactivate', exact: true }).click();
    const ask = page.getByRole('group', { name: /^Deactivate guarded\?/ });
    await ask.waitFor();
    expect(await ask.innerText()).to.contain('refused with 403');
    await ask.getByRole('button', { name: 'Cancel' }).click();
    expect((await api('GET', '/api/v1/functions/guarded')).body.active).to.equal(true);
    expect(await page.evaluate(() => document.activeElement?.textContent)).to.equal('Deactivate');
    await page.getByRole('button', { name: 'Deactivate', exact: true }).click();
    await page.getByRole('button', { name: 'Yes, deactivate' }).click();
    await page.getByRole('button', { name: 'Activate', exact: true }).waitFor();
    expect((await api('GET', '/api/v1/functions/guarded')).body.active).to.equal(false);
  });

  it('clamps a 3,000-character error to a few lines, with a way to read it whole', async () => {
    await openFunction('longerr');
    const cell = page.locator('table.logs tbody tr').first().locator('td.err');
    const more = cell.getByRole('button', { name: /^Show all \(\d+ characters\)$/ });
    await more.waitFor();
    const box = (await cell.boundingBox())!;
    expect(box.height).to.be.below(200);
    expect((await cell.innerText()).length).to.be.below(300);
    await more.click();
    await cell.getByRole('button', { name: 'Show less' }).waitFor();
    const stored = (await api('GET', '/api/v1/functions/longerr/logs')).body.logs[0].error_message as string;
    expect(stored.length).to.be.above(1000);
    expect(await cell.innerText()).to.contain(stored);
  });

  it('keeps the log filter and page in the URL: a reload shows the same logs', async () => {
    await openFunction('pager');
    await page.getByText('Page 1 of 2 (30 total)').waitFor();
    await page.getByRole('button', { name: 'Older' }).click();
    await page.getByText('Page 2 of 2 (30 total)').waitFor();
    expect(new URL(page.url()).search).to.equal('?page=2');
    await page.getByLabel('Status').selectOption('error');
    await page.getByText('Page 1 of 1 (5 total)').waitFor();
    expect(new URL(page.url()).search).to.equal('?status=error');
    await page.getByLabel('Status').selectOption('success');
    await page.getByRole('button', { name: 'Older' }).click();
    await page.getByText('Page 2 of 2 (25 total)').waitFor();
    expect(new URL(page.url()).search).to.equal('?status=success&page=2');
    await page.reload();
    await page.getByText('Page 2 of 2 (25 total)').waitFor();
    expect(await page.getByLabel('Status').inputValue()).to.equal('success');
    // A link with the query opens the same view.
    await openFunction('pager', '?status=error');
    await page.getByText('Page 1 of 1 (5 total)').waitFor();
  });

  it('breaks the p95 line at empty buckets and labels both axes readably at 390 px', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      await openFunction('slow');
      const svg = page.getByRole('figure').locator('svg');
      await svg.waitFor();
      await page.getByText('Chart data as a table').click();
      const rows = await page.getByRole('figure').locator('details tbody tr').allInnerTexts();
      const p95s = rows.map((r) => r.trim().split(/\s+/).pop());
      expect(p95s, 'an empty bucket between two with calls').to.include('—');
      // One line (or dot) per run of buckets with a p95, none across an empty bucket.
      let runs = 0;
      p95s.forEach((p, i) => {
        if (p !== '—' && (i === 0 || p95s[i - 1] === '—')) runs++;
      });
      expect(runs).to.be.at.least(2);
      expect(await svg.locator('polyline.line-p95, circle.dot-p95').count()).to.equal(runs);
      // Both axes have a title and more than 0 and the maximum; each label is drawn at least 11 px high.
      expect(await svg.locator('text.axis-title').allTextContents()).to.deep.equal(['executions', 'p95 (ms)']);
      const ticks = svg.locator('text.tick');
      expect(await ticks.count()).to.be.at.least(6);
      for (const box of await ticks.evaluateAll((els) => els.map((e) => e.getBoundingClientRect().height))) expect(box).to.be.at.least(11);
      expect(await overflow()).to.be.at.most(1);
    } finally {
      await page.setViewportSize({ width: 1280, height: 900 });
    }
  });

  it('at 390 px says the functions table has columns past the edge', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      await page.getByRole('link', { name: 'Functions', exact: true }).click();
      await page.getByRole('heading', { level: 1, name: 'Functions' }).waitFor();
      const hint = page.getByText(/more columns? to the right: scroll the table sideways/);
      await hint.waitFor();
      expect(await page.getByRole('region', { name: 'Functions table' }).getAttribute('aria-describedby')).to.equal(await hint.getAttribute('id'));
      expect(await overflow()).to.be.at.most(1);
    } finally {
      await page.setViewportSize({ width: 1280, height: 900 });
    }
    await until('the hint gone on a wide screen', async () => (await page.getByText(/more columns? to the right/).count()) === 0, WAIT_MS);
  });

  it('gives a missing function\'s page a way back', async () => {
    await page.goto(`${gw.adminUrl}/admin/functions/no-such-function`);
    await page.getByRole('alert').filter({ hasText: 'not_found' }).waitFor();
    await page.getByRole('link', { name: '← All functions' }).click();
    await page.getByRole('heading', { level: 1, name: 'Functions' }).waitFor();
  });
});
