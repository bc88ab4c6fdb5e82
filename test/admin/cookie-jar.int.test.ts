import { expect } from 'chai';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { startGateway, type RunningGateway } from '../helpers/platform.ts';
import { CHROMIUM, LAUNCH_ARGS, apiClient, ensurePanelPrerequisites, until } from './scenarios.ts';

// Attack 7 of issue 27: a function page tries to sign the admin out of the panel by cookies
// (a real gateway, Debian's Chromium). Cookies ignore ports, so a page of the main listener can
// plant cookies for the panel's paths on its own host name, and push enough of them to make the
// browser evict the panel's. The panel's address has a host name of its own
// (fnhost-admin.localhost, gateway/src/admin/panel-host.ts), whose jar no function page can
// reach: the page plants as many cookies as Chromium keeps, on every panel path and the root,
// from each host name the main listener answers on, and the admin stays signed in.

/** Cookies the page sets: more than Chromium keeps for one domain (180), so it evicts. */
const PLANTED = 400;
const PANEL_PATHS = ['/', '/admin', '/admin/', '/admin/api', '/admin/api/', '/admin/api/session', '/admin/api/v1', '/admin/api/v1/', '/admin/api/v1/functions', '/admin/api/v1/network-policy', '/admin/assets'];

const PLANTER = `export default (req, res) => {
  const script = ${JSON.stringify(`
const paths = ${JSON.stringify(PANEL_PATHS)};
for (let i = 0; i < ${PLANTED}; i++) {
  const path = paths[i % paths.length];
  // Half are the panel's cookie name on its paths (to hide its session), half other names (to evict it).
  document.cookie = (i % 2 === 0 ? 'fnhost_admin=planted-' + i : 'filler' + i + '=x') + '; path=' + path + '; max-age=3600; samesite=lax';
}
// Domain cookies, for the panel's name and what contains it: a browser must refuse or scope them.
for (const domain of ['localhost', '.localhost', 'fnhost-admin.localhost', location.hostname]) {
  document.cookie = 'fnhost_admin=planted-domain; domain=' + domain + '; path=/admin; max-age=3600';
}
document.title = 'planted';`)};
  res.send('<!doctype html><title>page</title><script>' + script + '</script>');
};`;

describe('attack 7: a function page cannot sign the admin out of the panel by cookies (Chromium)', function () {
  this.timeout(180_000);
  let gw: RunningGateway;
  let planter = '';
  let context: BrowserContext | undefined;
  let page: Page;
  let userDataDir: string | undefined;

  before(async () => {
    ensurePanelPrerequisites();
    gw = await startGateway();
    const created = await apiClient(gw)('POST', '/api/v1/functions', { name: 'planter', code: PLANTER });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    planter = created.body.function_id;
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

  const signIn = async () => {
    await page.goto(gw.panelUrl);
    await page.getByLabel('Admin token').fill(gw.token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { level: 1, name: 'Functions' }).waitFor();
  };
  const functionPages = () => {
    const port = new URL(gw.url).port;
    return [`http://127.0.0.1:${port}/invoke/${planter}/`, `http://localhost:${port}/invoke/${planter}/`];
  };
  const plantEverywhere = async () => {
    for (const url of functionPages()) {
      const answer = await page.goto(url);
      expect(answer?.status(), url).to.equal(200);
      await until(`the page at ${url} to plant its cookies`, async () => (await page.title()) === 'planted', 30_000);
      // Its host's jar overflowed: the page set over 200 distinct cookies (200 fillers, the panel's
      // name on 11 paths), Chromium kept at most what it allows for one domain (180) and evicted
      // the rest; planted panel cookies remain.
      const host = new URL(url).hostname;
      const kept = (await context!.cookies()).filter((c) => c.domain === host);
      expect(kept.length, `cookies kept for ${host}`).to.be.within(1, 180);
      expect(kept.some((c) => c.name === 'fnhost_admin' && c.value.startsWith('planted')), `planted panel cookies remain for ${host}`).to.equal(true);
    }
  };

  /**
   * The panel's jar holds its own session cookie and nothing the page planted: no cookie of its
   * host but the session, and no domain cookie that would go to it (Playwright's cookies(url)
   * filter counts a host-only cookie of localhost as one for every *.localhost, which Chromium
   * does not send there: so the jar is read whole and judged by domain).
   */
  const expectPanelJarOwn = async () => {
    const panelHost = new URL(gw.panelUrl).hostname;
    const all = await context!.cookies();
    const own = all.filter((c) => c.domain === panelHost || c.domain === `.${panelHost}`);
    expect(own.map((c) => `${c.name}=${c.value.slice(0, 8)}`), 'the panel host\'s cookies').to.have.length(1);
    expect(own[0]!.name).to.equal('fnhost_admin');
    expect(own[0]!.value).not.to.match(/^planted/);
    const domainCookies = all.filter((c) => c.domain.startsWith('.') && `.${panelHost}`.endsWith(c.domain));
    expect(domainCookies.map((c) => `${c.domain} ${c.name}`), 'domain cookies that would reach the panel').to.deep.equal([]);
  };

  it('the panel is opened on a host name of its own', () => {
    expect(new URL(gw.panelUrl).hostname).to.equal('fnhost-admin.localhost');
    expect(new URL(gw.panelUrl).port).to.equal(new URL(gw.adminUrl).port);
  });

  it('after a function page fills its jar with panel cookies on every panel path, the admin is still signed in', async () => {
    await signIn();
    await plantEverywhere();
    await page.goto(gw.panelUrl);
    await page.getByRole('heading', { level: 1, name: 'Functions' }).waitFor();
    expect(await page.getByRole('button', { name: 'Sign in' }).count()).to.equal(0);
    await expectPanelJarOwn();
  });

  it('signing out and in again works with the planted cookies still there', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    await plantEverywhere();
    await signIn();
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'Functions' }).waitFor();
  });

  it('the main listener serves nothing on the panel\'s host name or below it (421)', async () => {
    const port = new URL(gw.url).port;
    for (const host of ['fnhost-admin.localhost', 'x.fnhost-admin.localhost', 'FNHOST-ADMIN.localhost.']) {
      const answer = await page.goto(`http://${host}:${port}/invoke/${planter}/`);
      expect(answer?.status(), host).to.equal(421);
      expect(await answer?.text()).to.contain('misdirected_request');
    }
    await expectPanelJarOwn();
  });
});
