import { expect } from 'chai';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { startGateway, type RunningGateway } from '../helpers/platform.ts';
import { CHROMIUM, LAUNCH_ARGS, apiClient, ensurePanelPrerequisites, until } from './scenarios.ts';

// The panel's origin of its own, attacked as a function author would
// (issue 15): a real gateway process, real functions, Debian's Chromium. The
// admin is signed in to the panel; a function serves an HTML page on the
// main origin whose script tries every way it has at the panel's session and
// API, reads what the handler is sent, and plants panel cookies. It must get
// nothing and change nothing, and the panel must keep working.

/** A function page that attacks the panel from the main origin; its findings go into #out. */
function attackerCode(adminUrl: string): string {
  const script = `
const ADMIN = ${JSON.stringify(adminUrl)};
const out = {};
const attempt = async (name, request) => {
  try {
    const r = await request();
    out[name] = { status: r.status, type: r.type, body: (await r.text()).slice(0, 300) };
  } catch (err) {
    out[name] = { error: String(err) };
  }
};
const csrfFrom = (answer) => { try { return JSON.parse(answer.body).csrf_token || ''; } catch { return ''; } };
(async () => {
  await attempt('sessionOnMain', () => fetch('/admin/api/session', { credentials: 'include' }));
  await attempt('sessionOnAdmin', () => fetch(ADMIN + '/admin/api/session', { credentials: 'include' }));
  const csrf = csrfFrom(out.sessionOnMain) || csrfFrom(out.sessionOnAdmin) || 'none';
  const body = JSON.stringify({ default: 'deny', allow: [], deny: [] });
  const headers = { 'content-type': 'application/json', 'x-fnhost-csrf': csrf };
  await attempt('putOnMain', () => fetch('/api/v1/network-policy/global', { method: 'PUT', credentials: 'include', headers, body }));
  await attempt('putPanelPathOnMain', () => fetch('/admin/api/v1/network-policy/global', { method: 'PUT', credentials: 'include', headers, body }));
  await attempt('putOnAdmin', () => fetch(ADMIN + '/admin/api/v1/network-policy/global', { method: 'PUT', credentials: 'include', headers, body }));
  await attempt('simplePostOnAdmin', () => fetch(ADMIN + '/admin/api/v1/functions/victim/deactivate', { method: 'POST', mode: 'no-cors', credentials: 'include' }));
  await attempt('echo', () => fetch(location.pathname + '/echo', { credentials: 'include' }));
  document.cookie = 'fnhost_admin=planted-by-script; path=/admin/api';
  document.cookie = 'fnhost_admin=planted-at-root; path=/';
  out.scriptCookies = document.cookie;
  document.getElementById('out').textContent = JSON.stringify(out);
  document.title = 'done';
})();`;
  return `export default (req, res) => {
  const cookie = req.headers.cookie ?? '';
  if (req.path.endsWith('/echo')) return res.json({ cookie });
  const escape = (s) => s.replace(/[<>&]/g, (c) => '&#' + c.charCodeAt(0) + ';');
  res.send('<!doctype html><title>page</title><pre id="seen">' + escape(cookie) + '</pre><pre id="out"></pre><script>' + ${JSON.stringify(script)} + '</script>');
};`;
}

/** A function that answers with Set-Cookie for the panel's cookie names. */
const PLANTER = `export default (req, res) => {
  res.setHeader('set-cookie', ['fnhost_admin=forged-admin-path; Path=/admin; HttpOnly; SameSite=Strict', 'fnhost_admin=forged-api-path; Path=/admin/api; HttpOnly', '__Host-fnhost_admin=forged-host; Path=/; Secure; HttpOnly']);
  res.send('<!doctype html><title>planted</title><p>hello</p>');
};`;

describe('the admin panel has an origin of its own (one machine)', function () {
  this.timeout(180_000);
  let gw: RunningGateway;
  let ids: Record<string, string> = {};
  let context: BrowserContext | undefined;
  let page: Page;
  let userDataDir: string | undefined;
  const api = (method: string, path: string, body?: unknown) => apiClient(gw)(method, path, body);

  before(async () => {
    ensurePanelPrerequisites();
    gw = await startGateway();
    for (const [name, code] of Object.entries({ attacker: attackerCode(gw.adminUrl), planter: PLANTER, victim: 'export default (req, res) => res.json({ ok: true })' })) {
      const created = await api('POST', '/api/v1/functions', { name, code });
      expect(created.status, JSON.stringify(created.body)).to.equal(201);
      ids[name] = created.body.function_id;
    }
    userDataDir = await mkdtemp(join(tmpdir(), 'fnhost-chromium-'));
    context = await chromium.launchPersistentContext(userDataDir, { executablePath: CHROMIUM, headless: true, args: LAUNCH_ARGS });
    context.setDefaultTimeout(30_000);
    page = context.pages()[0] ?? (await context.newPage());
  });

  after(async () => {
    await context?.close();
    if (userDataDir) await rm(userDataDir, { recursive: true, force: true });
    await gw?.stop();
  });

  it('listens twice: the panel and its API only on the admin listener, /invoke and the bearer API only on the main one', async () => {
    expect(new URL(gw.adminUrl).origin).not.to.equal(new URL(gw.url).origin);
    // The admin listener serves no function response and no bearer-token API.
    expect((await fetch(`${gw.adminUrl}/invoke/${ids.victim}`)).status).to.equal(404);
    expect((await fetch(`${gw.adminUrl}/api/v1/functions`, { headers: { authorization: `Bearer ${gw.token}` } })).status).to.equal(404);
    expect((await fetch(`${gw.adminUrl}/admin/api/v1/functions`, { headers: { authorization: `Bearer ${gw.token}` } })).status).to.equal(401);
    expect((await fetch(`${gw.adminUrl}/admin/`)).status).to.equal(200);
    const root = await fetch(`${gw.adminUrl}/`, { redirect: 'manual' });
    expect([root.status, root.headers.get('location')]).to.deep.equal([302, '/admin/']);
    // The main listener serves no panel: no page, no sign-in, no session.
    for (const path of ['/admin/', '/admin/api/session', '/admin/api/v1/functions']) expect((await fetch(gw.url + path)).status, path).to.equal(404);
    const signIn = await fetch(`${gw.url}/admin/api/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: gw.token }) });
    expect(signIn.status).to.equal(404);
    expect(signIn.headers.get('set-cookie')).to.equal(null);
    expect((await api('GET', '/api/v1/functions')).status).to.equal(200);
    expect((await fetch(`${gw.url}/invoke/${ids.victim}`)).status).to.equal(200);
  });

  it('signs in on the admin origin', async () => {
    await page.goto(`${gw.adminUrl}/admin/`);
    await page.getByLabel('Admin token').fill(gw.token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { level: 1, name: 'Functions' }).waitFor();
  });

  it("a function's page gets nothing from the panel and changes nothing; its handler never sees the panel cookie", async () => {
    const policyBefore = (await api('GET', '/api/v1/network-policy')).body;
    await page.goto(`${gw.url}/invoke/${ids.attacker}`);
    await until('the attack script to finish', async () => (await page.title()) === 'done', 30_000);
    const out = JSON.parse(await page.locator('#out').innerText());
    const seen = await page.locator('#seen').innerText();
    // The handler: no panel cookie, neither on the page's load nor on the script's own call.
    expect(seen).not.to.contain('fnhost_admin');
    expect(out.echo.status).to.equal(200);
    expect(JSON.parse(out.echo.body).cookie).not.to.contain('fnhost_admin');
    // The session and its CSRF token: not served on this origin; unreadable across origins.
    expect(out.sessionOnMain.status).to.equal(404);
    expect(out.sessionOnMain.body).not.to.contain('csrf_token');
    expect(out.sessionOnAdmin).to.have.property('error');
    // A policy change: the cookie opens nothing on the main origin, and the panel's origin refuses the page.
    expect(out.putOnMain.status).to.equal(401);
    expect(out.putPanelPathOnMain.status).to.equal(404);
    expect(out.putOnAdmin).to.have.property('error');
    // A simple POST is sent without a preflight; the server refuses it (Origin, CSRF token: the
    // scenarios' CSRF test) and Cross-Origin-Resource-Policy hides even its opaque answer.
    expect(out.simplePostOnAdmin).to.have.property('error');
    // Nothing changed, and no change was recorded.
    expect((await api('GET', '/api/v1/network-policy')).body).to.deep.equal(policyBefore);
    expect((await api('GET', '/api/v1/network-policy/changes')).body.changes).to.deep.equal([]);
    expect((await api('GET', '/api/v1/functions/victim')).body.active).to.equal(true);
    // The script could not read the session cookie either; its own planted ones are what it sees.
    expect(out.scriptCookies).not.to.match(/fnhost_admin=(?!planted)/);
  });

  it('cookies a function page plants neither authenticate nor hide the real session on the panel origin', async () => {
    const jar = await context!.cookies(`${gw.adminUrl}/admin/api/v1/functions`);
    const planted = jar.filter((c) => c.name === 'fnhost_admin' && c.value.startsWith('planted'));
    // The browser does send the planted cookies to the panel (ports share cookies), before the real one.
    expect(planted.map((c) => c.value).sort()).to.deep.equal(['planted-at-root', 'planted-by-script']);
    for (const c of planted) expect((await fetch(`${gw.adminUrl}/admin/api/session`, { headers: { cookie: `fnhost_admin=${c.value}` } })).status).to.equal(401);
    await page.goto(`${gw.adminUrl}/admin/`);
    await page.getByRole('heading', { level: 1, name: 'Functions' }).waitFor();
    await page.getByRole('row').filter({ has: page.getByRole('link', { name: 'victim', exact: true }) }).waitFor();
    // A state change through the panel still works: the session is intact.
    await page.getByRole('link', { name: 'victim', exact: true }).click();
    await page.getByRole('button', { name: 'Deactivate', exact: true }).click();
    await page.getByRole('button', { name: 'Yes, deactivate' }).click();
    await page.getByRole('button', { name: 'Activate', exact: true }).waitFor();
    expect((await api('GET', '/api/v1/functions/victim')).body.active).to.equal(false);
    await page.getByRole('button', { name: 'Activate', exact: true }).click();
    await page.getByRole('button', { name: 'Deactivate', exact: true }).waitFor();
  });

  it("a function's Set-Cookie for the panel cookie does not authenticate, and the admin's session stays valid", async () => {
    const real = (await context!.cookies(`${gw.adminUrl}/admin/`)).find((c) => c.name === 'fnhost_admin' && !c.value.startsWith('planted'))!;
    expect(real, 'the real session cookie').not.to.equal(undefined);
    await page.goto(`${gw.url}/invoke/${ids.planter}`);
    await page.getByText('hello').waitFor();
    for (const value of ['forged-admin-path', 'forged-api-path', 'forged-host']) {
      expect((await fetch(`${gw.adminUrl}/admin/api/session`, { headers: { cookie: `fnhost_admin=${value}; __Host-fnhost_admin=${value}` } })).status, value).to.equal(401);
      expect((await fetch(`${gw.adminUrl}/admin/api/v1/functions`, { headers: { cookie: `fnhost_admin=${value}` } })).status, value).to.equal(401);
    }
    // The session the forged cookie pushed out of the browser is still the admin's, on the server.
    expect((await fetch(`${gw.adminUrl}/admin/api/session`, { headers: { cookie: `fnhost_admin=${real.value}` } })).status).to.equal(200);
    const after = (await context!.cookies(`${gw.adminUrl}/admin/`)).filter((c) => c.name === 'fnhost_admin').map((c) => c.value);
    expect(after).to.include(real.value);
    expect(after.filter((v) => v.startsWith('forged'))).to.deep.equal([]);
    await page.goto(`${gw.adminUrl}/admin/`);
    await page.getByRole('heading', { level: 1, name: 'Functions' }).waitFor();
  });
});

describe('the admin listener at start', function () {
  this.timeout(60_000);

  it('a taken admin port stops the start with a message naming FNHOST_ADMIN_PORT', async () => {
    const squatter = createServer();
    await new Promise<void>((r) => squatter.listen(0, '127.0.0.1', r));
    const port = (squatter.address() as AddressInfo).port;
    try {
      const started = startGateway({ env: { FNHOST_ADMIN_PORT: String(port) } });
      const err = await started.then(
        async (gw) => {
          await gw.stop();
          return undefined;
        },
        (e: Error) => e,
      );
      expect(err?.message).to.match(new RegExp(`FNHOST_ADMIN_PORT=${port}, FNHOST_ADMIN_HOST=127\\.0\\.0\\.1\\) cannot listen: port ${port} on 127\\.0\\.0\\.1 is already in use`));
    } finally {
      squatter.close();
    }
  });
});
