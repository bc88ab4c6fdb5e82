import { expect } from 'chai';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { startGateway, type RunningGateway } from '../helpers/platform.ts';
import { bundleHandler } from '../../cli/src/bundle/bundle.ts';
import { CHROMIUM, LAUNCH_ARGS, apiClient, createScenarioFunctions, definePanelScenarios, ensurePanelPrerequisites, until } from './scenarios.ts';

// The admin panel end to end: Debian's headless Chromium driven by
// playwright-core (no browser download), against a real gateway process
// with real functions and a real loopback server their fetch calls. The
// scenarios themselves are in scenarios.ts, shared with panel.cluster.test.ts
// (the same steps against a cluster-mode gateway). Screenshots of the main
// pages go to test-output/admin/ (git-ignored).

/** Signs in on the panel's page with the admin token, as a user does, up to the functions list. */
async function signIn(page: Page, gw: RunningGateway): Promise<void> {
  await page.goto(`${gw.adminUrl}/admin/`);
  await page.getByLabel('Admin token').fill(gw.token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { level: 1, name: 'Functions' }).waitFor();
}

describe('admin panel in headless Chromium against a real gateway', function () {
  this.timeout(180_000);
  let gw: RunningGateway;
  let target: Server;
  let ids: Record<string, string> = {};

  before(async function () {
    ensurePanelPrerequisites();
    target = createServer((req, res) => res.end('target says hi'));
    await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
    const targetUrl = `http://127.0.0.1:${(target.address() as AddressInfo).port}/`;
    // The scenario's caller fetches a local server: a sandbox has no network of its own, and its
    // outbound connections take the egress path (issue 16, item 3, built apart). Until then: unsandboxed.
    gw = await startGateway({ env: { FNHOST_SANDBOX: 'off' } });
    ids = await createScenarioFunctions(gw, targetUrl);
  });

  definePanelScenarios(() => ({ gw, ids, targetHost: '127.0.0.1' }), { shotPrefix: '', waitMs: 30_000 });

  after(async () => {
    await gw?.stop();
    target?.close();
  });
});

describe('admin panel sessions expire', function () {
  this.timeout(60_000);
  let gw: RunningGateway;
  let context: BrowserContext | undefined;
  let userDataDir: string | undefined;
  before(async () => {
    gw = await startGateway({ env: { FNHOST_ADMIN_SESSION_IDLE_SECONDS: '1' } });
  });
  after(async () => {
    await context?.close();
    if (userDataDir) await rm(userDataDir, { recursive: true, force: true });
    await gw?.stop();
  });

  it('an idle session stops working after its idle time', async () => {
    const signIn = await fetch(`${gw.adminUrl}/admin/api/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: gw.token }) });
    expect(signIn.status).to.equal(201);
    const cookie = signIn.headers.getSetCookie()[0]!.split(';')[0]!;
    const started = Date.now();
    const expired = await until('the session to expire', async () => {
      const r = await fetch(`${gw.adminUrl}/admin/api/v1/functions`, { headers: { cookie } });
      // Polling touches the session, so poll more slowly than the idle time.
      return r.status === 401 ? r : undefined;
    }, 20_000, 1500);
    expect(expired.status).to.equal(401);
    expect(Date.now() - started).to.be.at.least(1000);
  });

  it('the page returns to sign-in with a notice when its session has expired', async () => {
    userDataDir = await mkdtemp(join(tmpdir(), 'fnhost-chromium-'));
    context = await chromium.launchPersistentContext(userDataDir, { executablePath: CHROMIUM, headless: true, args: LAUNCH_ARGS });
    const page = context.pages()[0] ?? (await context.newPage());
    await signIn(page, gw);
    const cookie = (await context.cookies(`${gw.adminUrl}/admin/`)).find((c) => c.name === 'fnhost_admin')!;
    // The page makes no request while idle; wait (without touching the session) until the server has dropped it.
    await until('the session to expire on the server', async () => {
      const r = await fetch(`${gw.adminUrl}/admin/api/session`, { headers: { cookie: `fnhost_admin=${cookie.value}` } });
      return r.status === 401;
    }, 20_000, 1500);
    await page.getByRole('link', { name: 'Network policies' }).click();
    await page.getByText('Your session has expired or was ended. Sign in again.').waitFor();
    await page.getByLabel('Admin token').waitFor();
  });
});

describe('admin panel: the banner of a gateway that cannot sandbox', function () {
  this.timeout(90_000);
  let context: BrowserContext | undefined;
  let userDataDir: string | undefined;
  after(async () => {
    await context?.close();
    if (userDataDir) await rm(userDataDir, { recursive: true, force: true });
  });

  const bannerOf = async (gw: RunningGateway): Promise<string | null> => {
    userDataDir ??= await mkdtemp(join(tmpdir(), 'fnhost-chromium-'));
    context ??= await chromium.launchPersistentContext(userDataDir, { executablePath: CHROMIUM, headless: true, args: LAUNCH_ARGS });
    const page = await context.newPage();
    try {
      await signIn(page, gw);
      // The info request follows the sign-in: wait for it to be answered before looking.
      await page.waitForLoadState('networkidle');
      const banner = page.getByRole('note').filter({ hasText: 'No sandbox' });
      return (await banner.count()) === 0 ? null : await banner.innerText();
    } finally {
      await page.close();
    }
  };

  it('says on every page that functions run without a sandbox, as GET /api/v1/info does', async () => {
    const gw = await startGateway({ env: { FNHOST_SANDBOX: 'off' } });
    try {
      const info = await (await fetch(`${gw.url}/api/v1/info`, { headers: { authorization: `Bearer ${gw.token}` } })).json();
      expect(info.sandbox.enabled).to.equal(false);
      expect(await bannerOf(gw)).to.include(info.sandbox.warning);
    } finally {
      await gw.stop();
    }
  });

  it('shows no banner when runtimes are sandboxed', async function () {
    const gw = await startGateway();
    try {
      const info = await (await fetch(`${gw.url}/api/v1/info`, { headers: { authorization: `Bearer ${gw.token}` } })).json();
      // Sandboxed wherever bubblewrap runs (make test installs it); the first case covers the other side.
      expect(info.sandbox.enabled, JSON.stringify(info.sandbox)).to.equal(true);
      expect(await bannerOf(gw)).to.equal(null);
    } finally {
      await gw.stop();
    }
  });
});

describe('admin panel: the stack of a thrown error, at the owner\'s file and line', function () {
  this.timeout(90_000);
  let gw: RunningGateway;
  let project: string;
  let context: BrowserContext | undefined;
  let userDataDir: string | undefined;
  before(async () => {
    ensurePanelPrerequisites();
    gw = await startGateway();
    project = await mkdtemp(join(tmpdir(), 'fnhost-panel-project-'));
  });
  after(async () => {
    await context?.close();
    if (userDataDir) await rm(userDataDir, { recursive: true, force: true });
    await rm(project, { recursive: true, force: true });
    await gw?.stop();
  });

  it('shows the record\'s error_stack under its error, from a bundle the API took as it was', async () => {
    // The module the CLI would send: two TypeScript files bundled with their source map.
    await mkdir(join(project, 'src'));
    await writeFile(join(project, 'package.json'), '{ "name": "panel-stack", "private": true, "type": "module" }\n');
    await writeFile(join(project, 'src', 'explode.ts'), 'export function explode(what: string): never {\n  throw new Error(`panel ${what}`);\n}\n');
    await writeFile(join(project, 'src', 'handler.ts'), "import { explode } from './explode.ts';\n\nexport default function handler(): void {\n  explode('boom');\n}\n");
    const { code } = await bundleHandler(join(project, 'src', 'handler.ts'), project);
    const api = apiClient(gw);
    const created = await api('POST', '/api/v1/functions', { name: 'thrower', code });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    expect((await fetch(`${gw.url}/invoke/${created.body.function_id}`)).status).to.equal(500);
    userDataDir = await mkdtemp(join(tmpdir(), 'fnhost-chromium-'));
    context = await chromium.launchPersistentContext(userDataDir, { executablePath: CHROMIUM, headless: true, args: LAUNCH_ARGS });
    const page = context.pages()[0] ?? (await context.newPage());
    await signIn(page, gw);
    // The record is written off the request path: reload the page until it is listed.
    const summary = page.locator('table.logs summary', { hasText: 'Stack' });
    await until('the failed execution with its stack', async () => {
      await page.goto(`${gw.adminUrl}/admin/functions/thrower`);
      await page.getByRole('heading', { level: 1, name: /^thrower/ }).waitFor();
      await page.locator('table.logs tbody tr').first().waitFor();
      return (await summary.count()) === 1;
    }, 30_000, 500);
    const row = page.locator('table.logs tbody tr').first();
    expect(await row.innerText()).to.contain('Error: panel boom');
    await summary.click();
    expect(await row.locator('details pre').innerText()).to.equal('at explode (src/explode.ts:2:9)\nat handler (src/handler.ts:4:3)');
  });
});

describe('admin panel: an execution opened from the logs table, with its console output, and the latency table', function () {
  this.timeout(90_000);
  let gw: RunningGateway;
  let context: BrowserContext | undefined;
  let userDataDir: string | undefined;
  before(async () => {
    ensurePanelPrerequisites();
    gw = await startGateway();
  });
  after(async () => {
    await context?.close();
    if (userDataDir) await rm(userDataDir, { recursive: true, force: true });
    await gw?.stop();
  });

  it('opens a record by its time (click or Enter), shows its fields and console output, and closes it', async () => {
    const api = apiClient(gw);
    const created = await api('POST', '/api/v1/functions', {
      name: 'talker',
      code: "export default (req, res) => { console.log('talker says', req.query.n); console.error('talker <b>warns</b>'); res.status(Number(req.query.s)).json({}); }",
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    const id = created.body.function_id;
    for (const [n, s] of [['one', 200], ['two', 502]]) await (await fetch(`${gw.url}/invoke/${id}?n=${n}&s=${s}`)).arrayBuffer();
    const logs = (await api('GET', '/api/v1/functions/talker/logs')).body.logs as Array<{ id: string }>;
    for (const log of logs) {
      await until('console output', async () => (await api('GET', `/api/v1/functions/talker/logs/${log.id}`)).body.console !== null || undefined, 30_000, 100);
    }
    userDataDir = await mkdtemp(join(tmpdir(), 'fnhost-chromium-'));
    context = await chromium.launchPersistentContext(userDataDir, { executablePath: CHROMIUM, headless: true, args: LAUNCH_ARGS });
    const page = context.pages()[0] ?? (await context.newPage());
    await signIn(page, gw);
    await page.goto(`${gw.adminUrl}/admin/functions/talker`);
    await page.getByRole('heading', { level: 1, name: /^talker/ }).waitFor();
    // The latency table under the chart: both executions in the last hour.
    const hourRow = page.locator('table.latency tr', { hasText: 'Last hour' });
    await hourRow.waitFor();
    expect((await hourRow.locator('td').first().innerText()).trim()).to.equal('2');
    // Click the newest row's time.
    await page.locator(`tr[data-log-id="${logs[0]!.id}"] button.link`).click();
    const opened = page.locator('section.execution');
    await opened.getByRole('heading', { name: `Execution ${logs[0]!.id}` }).waitFor();
    await opened.locator('pre.console').waitFor();
    expect(await opened.locator('pre.console').innerText()).to.match(/^\+\d+ms out talker says two\n\+\d+ms err talker <b>warns<\/b>\s*$/);
    // Handler output is text, never markup.
    expect(await opened.locator('pre.console b').count()).to.equal(0);
    expect(await opened.locator('dl').innerText()).to.contain('502');
    expect(page.url()).to.contain(`log=${logs[0]!.id}`);
    // The keyboard: the older row's time is a button; Enter opens it.
    await page.locator(`tr[data-log-id="${logs[1]!.id}"] button.link`).focus();
    await page.keyboard.press('Enter');
    await opened.getByRole('heading', { name: `Execution ${logs[1]!.id}` }).waitFor();
    await until('the older record\'s output', async () => /talker says one/.test(await opened.locator('pre.console').innerText()) || undefined, 10_000, 100);
    // A reload shows the same record (the URL names it); Close hides it.
    await page.reload();
    await opened.getByRole('heading', { name: `Execution ${logs[1]!.id}` }).waitFor();
    await opened.getByRole('button', { name: 'Close' }).click();
    await opened.waitFor({ state: 'detached' });
    expect(page.url()).to.not.contain('log=');
    // An unknown id (a stale link) says so.
    await page.goto(`${gw.adminUrl}/admin/functions/talker?log=log_nosuchrecord00000000`);
    expect(await opened.getByRole('alert').innerText()).to.contain('has no execution log "log_nosuchrecord00000000"');
  });
});
