import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

// The admin panel's end-to-end scenarios, written once and run against two
// gateways: a one-machine gateway process (panel.int.test.ts) and a
// cluster-mode gateway installed by the Helm chart on the test cluster
// (panel.cluster.test.ts). Each suite supplies a gateway (URL and admin token),
// the functions made by createScenarioFunctions, and the host that the
// `caller` function fetches; the steps, their order and their assertions are
// here, so the two suites cannot drift apart. Debian's headless Chromium is
// driven by playwright-core (no browser download); screenshots of the main
// pages go to test-output/admin/ (git-ignored).

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const CHROMIUM = process.env.FNHOST_CHROMIUM ?? '/usr/bin/chromium';
export const SHOTS = join(ROOT, 'test-output', 'admin');
export const LAUNCH_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-quic',
  '--no-first-run',
];

const AXE_SOURCE = readFileSync(join(ROOT, 'node_modules', 'axe-core', 'axe.min.js'), 'utf8');

/** Polls until check() gives a value other than undefined/false, or fails after the deadline. */
export async function until<T>(what: string, check: () => Promise<T | undefined | false>, timeoutMs = 20_000, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** Chromium must be there, and the panel built (admin/dist), before a gateway or an image is made from it. */
export function ensurePanelPrerequisites(): void {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium)`);
  if (!existsSync(join(ROOT, 'admin', 'dist', 'index.html'))) {
    const built = spawnSync(process.execPath, [join(ROOT, 'node_modules', 'vite', 'bin', 'vite.js'), 'build'], { cwd: join(ROOT, 'admin'), encoding: 'utf8' });
    if (built.status !== 0) throw new Error(`building the admin panel failed:\n${built.stdout}\n${built.stderr}`);
  }
}

/** A headless Chromium with a profile of its own, signed in to the panel as a user does (the token on the sign-in page), on the functions list. */
export async function signedInBrowser(gw: PanelGateway, options: { waitMs: number; timezoneId?: string }): Promise<{ context: BrowserContext; page: Page; close(): Promise<void> }> {
  const userDataDir = await mkdtemp(join(tmpdir(), 'fnhost-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM, headless: true, args: LAUNCH_ARGS, viewport: { width: 1280, height: 900 }, locale: 'en-GB',
    ...(options.timezoneId === undefined ? {} : { timezoneId: options.timezoneId }),
  });
  const close = async () => {
    await context.close();
    await rm(userDataDir, { recursive: true, force: true });
  };
  try {
    context.setDefaultTimeout(options.waitMs);
    const page = context.pages()[0] ?? (await context.newPage());
    await page.goto(`${gw.adminUrl}/admin/`);
    await page.getByLabel('Admin token').fill(gw.token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { level: 1, name: 'Functions' }).waitFor();
    return { context, page, close };
  } catch (err) {
    await close();
    throw err;
  }
}

export interface PanelGateway {
  /** The main listener: /invoke and the bearer-token /api/v1. */
  url: string;
  /** The admin panel's own listener (origin): /admin and /admin/api/v1. */
  adminUrl: string;
  token: string;
}

export interface ApiAnswer {
  status: number;
  body: any;
}

export function apiClient(gw: PanelGateway) {
  return async (method: string, path: string, body?: unknown): Promise<ApiAnswer> => {
    const r = await fetch(gw.url + path, {
      method,
      headers: { authorization: `Bearer ${gw.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await r.text();
    return { status: r.status, body: text === '' ? undefined : JSON.parse(text) };
  };
}

/**
 * The scenarios' functions, made through the management API (in cluster mode
 * that writes Function resources), and their first executions: `caller` once
 * before any rule (so its runtime is up when the rule changes), `pager` 40
 * successes then 5 failures. Returns the function ids by name.
 */
export async function createScenarioFunctions(gw: PanelGateway, targetUrl: string): Promise<Record<string, string>> {
  const api = apiClient(gw);
  const fns: Record<string, string> = {
    caller: `export default async (req, res) => { const r = await fetch(${JSON.stringify(targetUrl)}); res.json({ text: await r.text() }); }`,
    pager: `export default (req, res) => req.query.fail ? res.status(500).json({ failed: true }) : res.json({ n: req.query.n ?? null })`,
    toggle: `export default (req, res) => res.json({ on: true })`,
  };
  const ids: Record<string, string> = {};
  for (const [name, code] of Object.entries(fns)) {
    const created = await api('POST', '/api/v1/functions', { name, code, ...(name === 'toggle' ? { schedule: { cron: '0 3 * * *' }, retention: { type: 'time', days: 7 } } : {}) });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    ids[name] = created.body.function_id;
  }
  const invoke = async (name: string, query = '') => {
    const r = await fetch(`${gw.url}/invoke/${ids[name]}${query}`);
    return { status: r.status, text: await r.text() };
  };
  // The target is on the machine (loopback, or the node for pods), which is protected unless a rule names it (issue 29).
  const opened = await api('PUT', '/api/v1/network-policy/global', { default: 'allow', allow: [new URL(targetUrl).hostname], deny: [] });
  expect(opened.status, JSON.stringify(opened.body)).to.equal(200);
  const first = await invoke('caller');
  expect(first.text, `caller's first call (${first.status})`).to.contain('target says hi');
  for (let i = 0; i < 40; i++) expect((await invoke('pager', `?n=${i}`)).status).to.equal(200);
  for (let i = 0; i < 5; i++) expect((await invoke('pager', '?fail=1')).status).to.equal(500);
  return ids;
}

export interface ScenarioSetup {
  gw: PanelGateway;
  ids: Record<string, string>;
  /**
   * The host the `caller` function fetches: what the deny rule names (a loopback address, or the
   * host's bridge address for pods). Part of setup(), read when the tests run: a suite may learn it
   * only in its before() (the cluster's bridge address).
   */
  targetHost: string;
}

export interface ScenarioOptions {
  /** Prefix of the screenshot files (the two suites write into the same folder). */
  shotPrefix: string;
  /** How long one locator or condition may take (a cluster run is slower). */
  waitMs: number;
  /**
   * Each gateway replica's own URL, when several are behind the Service (cluster mode): a change
   * made through one reaches the others' watch-fed caches a moment later, so a step that needs it
   * everywhere first waits until each replica answers so. Absent: one gateway, whose very next
   * answer must show the change.
   */
  gatewayReplicas?: () => Promise<string[]>;
}

/**
 * Registers the scenarios (mocha `it`s, in order) in the calling describe.
 * setup() is read when the tests run, after the suite's before() made the gateway and the functions.
 */
export function definePanelScenarios(setup: () => ScenarioSetup, options: ScenarioOptions): void {
  const { waitMs } = options;
  let context: BrowserContext;
  let page: Page;
  let userDataDir: string;
  const foreignRequests: string[] = [];
  const cspViolations: string[] = [];
  const axeChecked: string[] = [];

  const gw = () => setup().gw;
  const api = (method: string, path: string, body?: unknown) => apiClient(gw())(method, path, body);
  const invoke = async (name: string, query = '') => {
    const r = await fetch(`${gw().url}/invoke/${setup().ids[name]}${query}`);
    return { status: r.status, text: await r.text() };
  };
  /** With several gateway replicas: waits until a call of `name` through each one answers `status`. */
  const everyReplicaAnswers = async (name: string, status: number) => {
    if (options.gatewayReplicas === undefined) return;
    for (const url of await options.gatewayReplicas()) {
      await until(`${name} answering ${status} through the gateway replica at ${url}`, async () => {
        const r = await fetch(`${url}/invoke/${setup().ids[name]}`);
        await r.arrayBuffer();
        return r.status === status;
      }, waitMs);
    }
  };
  /**
   * Waits until the newest row of the open function's logs matches. With several gateway replicas
   * the call's record may come from the other replica's log writer after the page read the list
   * (within its flush interval), so Refresh is pressed between looks; one gateway flushes its own
   * queue for the listing, so its first list must hold the record.
   */
  const newestLogRow = async (what: string, pattern: RegExp) => {
    const newest = page.locator('table.logs tbody tr').first();
    let seen = '';
    try {
      await until(what, async () => {
        seen = await newest.innerText().catch(() => '');
        if (pattern.test(seen)) return true;
        if (options.gatewayReplicas !== undefined) await page.getByRole('button', { name: 'Refresh', exact: true }).click();
        return false;
      }, waitMs);
    } catch (err) {
      throw new Error(`${(err as Error).message}; the newest row read: ${JSON.stringify(seen)}`);
    }
    return newest;
  };
  /** A screenshot, and an axe-core check (WCAG 2 A/AA: labels, contrast, roles) of the page as it is. */
  const shot = async (name: string) => {
    await page.screenshot({ path: join(SHOTS, `${options.shotPrefix}${name}.png`), fullPage: true });
    // Evaluated through the DevTools protocol, so the page's CSP (no inline script) stays as it is.
    if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(AXE_SOURCE);
    const violations = await page.evaluate(async () => {
      const axe = (window as unknown as { axe: { run(ctx: Document, o: object): Promise<{ violations: { id: string; help: string; nodes: { target: string[] }[] }[] }> } }).axe;
      const result = await axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } });
      return result.violations.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
    });
    expect(violations, `accessibility of ${name}`).to.deep.equal([]);
    axeChecked.push(name);
  };
  const openFunction = async (name: string) => {
    await page.goto(`${gw().adminUrl}/admin/functions/${name}`);
    await page.getByRole('heading', { level: 1, name: new RegExp(`^${name}`) }).waitFor();
  };
  const sessionCookie = async () => (await context.cookies(`${gw().adminUrl}/admin/`)).find((c) => c.name === 'fnhost_admin');
  /** The session cookie as a Cookie header. */
  const cookieHeader = async () => {
    const c = (await sessionCookie())!;
    return `${c.name}=${c.value}`;
  };

  before(async () => {
    await mkdir(SHOTS, { recursive: true });
    userDataDir = await mkdtemp(join(tmpdir(), 'fnhost-chromium-'));
    // A browser zone that is neither UTC nor the schedules' zone, so a time shown in the wrong zone (or unnamed) shows.
    context = await chromium.launchPersistentContext(userDataDir, { executablePath: CHROMIUM, headless: true, args: LAUNCH_ARGS, viewport: { width: 1280, height: 900 }, timezoneId: 'Asia/Tokyo', locale: 'en-GB' });
    context.setDefaultTimeout(waitMs);
    page = context.pages()[0] ?? (await context.newPage());
    const own = new URL(gw().adminUrl).origin;
    context.on('request', (req) => {
      const u = req.url();
      if (!u.startsWith('data:') && new URL(u).origin !== own) foreignRequests.push(u);
    });
    page.on('console', (msg) => {
      if (/Content.Security.Policy|Refused to/i.test(msg.text())) cspViolations.push(msg.text());
    });
  });

  after(async () => {
    await context?.close();
    if (userDataDir) await rm(userDataDir, { recursive: true, force: true });
  });

  it('serves the page with a CSP that allows no inline script and nothing from another host', async () => {
    const r = await fetch(`${gw().adminUrl}/admin/`);
    expect(r.status).to.equal(200);
    const csp = r.headers.get('content-security-policy')!;
    expect(csp).to.contain("script-src 'self'");
    expect(csp).to.contain("default-src 'none'");
    expect(csp).not.to.contain('unsafe-inline');
    expect(r.headers.get('x-frame-options')).to.equal('DENY');
    const html = await r.text();
    expect(html).not.to.match(/<script(?![^>]*\bsrc=)[^>]*>/);
  });

  it('refuses a wrong token with a clear page, keeps nothing in storage', async () => {
    await page.goto(`${gw().adminUrl}/admin/`);
    await page.getByLabel('Admin token').fill('definitely-not-the-token');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Wrong admin token' }).waitFor();
    await shot('wrong-token');
    expect(await sessionCookie()).to.equal(undefined);
    const direct = await fetch(`${gw().adminUrl}/admin/api/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: 'wrong' }) });
    expect(direct.status).to.equal(401);
    expect(direct.headers.get('set-cookie')).to.equal(null);
  });

  it('signs in with the admin token: an HttpOnly SameSite=Strict cookie kept off /invoke, the token never in storage', async () => {
    const token = gw().token;
    await page.getByRole('button', { name: 'Try again' }).click();
    await page.getByLabel('Admin token').waitFor();
    await shot('signin');
    await page.getByLabel('Admin token').fill(token);
    await page.getByLabel('Admin token').press('Enter');
    await page.getByRole('heading', { level: 1, name: 'Functions' }).waitFor();
    const cookie = await sessionCookie();
    expect(cookie, 'session cookie').not.to.equal(undefined);
    expect(cookie!.httpOnly).to.equal(true);
    expect(cookie!.sameSite).to.equal('Strict');
    // Browsers share cookies between the ports of one host: the path keeps the cookie from function calls.
    expect(cookie!.path).to.equal('/admin');
    expect(await context.cookies(`${gw().url}/invoke/${setup().ids.pager}`)).to.deep.equal([]);
    expect(cookie!.value).not.to.contain(token);
    const storage = await page.evaluate(() => JSON.stringify({ ...window.localStorage }) + JSON.stringify({ ...window.sessionStorage }) + document.cookie);
    expect(storage).not.to.contain(token);
    expect(storage).not.to.contain(cookie!.value);
  });

  it('lists functions with state, schedule and next run, retention, executions and last status', async () => {
    const row = (name: string) => page.getByRole('row').filter({ has: page.getByRole('link', { name, exact: true }) });
    await row('pager').getByText('500').waitFor();
    expect(await row('pager').innerText()).to.match(/active[\s\S]*none[\s\S]*keep all[\s\S]*45/);
    expect(await row('toggle').innerText()).to.match(/0 3 \* \* \* UTC[\s\S]*7 days/);
    // The next run of "0 3 * * *" (UTC) reads 03:00 in the schedule's zone, named; not 12:00 in the browser's (Asia/Tokyo).
    expect(await row('toggle').innerText()).to.match(/\d{4}, 03:00:00 UTC/);
    await shot('functions');
  });

  it('validates patterns as you type, and a deny rule makes the running function fetch fail in its next execution', async () => {
    await page.getByRole('link', { name: 'Network policies' }).click();
    await page.getByRole('heading', { level: 1, name: 'Network policies' }).waitFor();
    await page.getByLabel('Scope').selectOption({ label: 'Function caller' });
    const deny = page.getByRole('group', { name: 'Denied hosts' });
    const input = deny.getByLabel('Add deny pattern');
    await input.fill('bad host!');
    await deny.getByText(/network policy pattern "bad host!" is invalid/).waitFor();
    expect(await input.getAttribute('aria-invalid')).to.equal('true');
    expect(await deny.getByRole('button', { name: 'Add' }).isDisabled()).to.equal(true);
    await shot('policy-invalid');
    // The server checks with the same rules: a bad pattern sent directly is refused.
    const direct = await api('PUT', '/api/v1/network-policy/functions/caller', { default: 'allow', deny: ['bad host!'] });
    expect(direct.status).to.equal(400);
    const targetHost = setup().targetHost;
    expect(targetHost, 'the host the caller function fetches').to.match(/\S/);
    const escapedHost = targetHost.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    await input.fill(targetHost);
    expect(await input.getAttribute('aria-invalid')).to.equal('false');
    await deny.getByRole('button', { name: 'Add' }).click();
    await deny.getByRole('listitem').filter({ hasText: targetHost }).waitFor();
    await page.getByRole('button', { name: 'Save policy' }).click();
    await page.getByText(/Saved the policy of caller/).waitFor();
    // The change is recorded and shown: who, when, what.
    const changeRow = page.getByRole('row').filter({ hasText: 'function caller' }).first();
    await changeRow.waitFor();
    expect(await changeRow.innerText()).to.match(new RegExp(`admin \\(panel session [0-9a-f]{8}\\)[\\s\\S]*deny \\[${escapedHost}\\]`));
    await shot('policies');

    if (options.gatewayReplicas !== undefined) {
      // The function's keep-alive tunnel may be open on the other replica, which closes it within
      // its policy follow interval (docs/egress.md "Policy changes and open connections").
      await until('caller\'s fetch blocked', async () => (await invoke('caller')).status === 500, waitMs);
    }
    const denied = await invoke('caller');
    expect(denied.status, denied.text).to.equal(500);
    await openFunction('caller');
    const newest = await newestLogRow('the blocked fetch in the newest log', /blocked by network policy/);
    expect(await newest.innerText()).to.contain('500');
  });

  it('removing the rule makes the next fetch succeed', async () => {
    await page.getByRole('link', { name: 'Network policies' }).click();
    await page.getByLabel('Scope').selectOption({ label: 'Function caller (own policy)' });
    await page.getByRole('button', { name: `Remove ${setup().targetHost} from deny list` }).click();
    await page.getByRole('button', { name: 'Save policy' }).click();
    await page.getByText(/Saved the policy of caller/).waitFor();
    const ok = await invoke('caller');
    expect(ok.status, ok.text).to.equal(200);
    expect(ok.text).to.contain('target says hi');
    await openFunction('caller');
    await newestLogRow('the successful fetch in the newest log', /\b200\b/);
  });

  it('pages through logs newest first, filters by status, and charts executions', async () => {
    await openFunction('pager');
    await page.getByText('Page 1 of 3 (45 total)').waitFor();
    const rows = page.locator('table.logs tbody tr');
    expect(await rows.count()).to.equal(20);
    // Newest first: the five failures came last.
    expect(await rows.first().innerText()).to.contain('500');
    await page.getByRole('figure').locator('svg').waitFor();
    await shot('function');
    await page.getByRole('button', { name: 'Older' }).click();
    await page.getByText('Page 2 of 3 (45 total)').waitFor();
    await page.getByRole('button', { name: 'Older' }).click();
    await page.getByText('Page 3 of 3 (45 total)').waitFor();
    await until('5 rows on the last page', async () => (await rows.count()) === 5, waitMs);
    expect(await page.getByRole('button', { name: 'Older' }).isDisabled()).to.equal(true);
    await page.getByRole('button', { name: 'Newer' }).click();
    await page.getByText('Page 2 of 3 (45 total)').waitFor();
    await page.getByLabel('Status').selectOption('error');
    await page.getByText('Page 1 of 1 (5 total)').waitFor();
    await until('only errors listed', async () => (await rows.allInnerTexts()).every((t) => t.includes('500')) && (await rows.count()) === 5, waitMs);
    await page.getByText('Chart data as a table').click();
    const chartTable = await page.getByRole('figure').locator('details table').innerText();
    expect(chartTable).to.match(/From[\s\S]*Executions[\s\S]*\d+\s+\d+\s+\d+/);
    // Narrow screens: the page stays readable (no horizontal scroll of the page itself).
    await page.setViewportSize({ width: 390, height: 844 });
    await page.getByLabel('Status').selectOption('all');
    await page.getByText('Page 1 of 3 (45 total)').waitFor();
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect(overflow).to.be.at.most(1);
    await shot('function-narrow');
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  it('runs a test and toggles a function inactive (invocations refused with 403) and active again, with the keyboard', async () => {
    await openFunction('toggle');
    const details = await page.getByRole('region', { name: 'Details' }).innerText();
    expect(details).to.match(/Next run\s+\d\d? \w{3} \d{4}, 03:00:00 UTC/);
    // Other times are in the browser's zone, and say so.
    expect(details).to.match(/Created \/ updated\s+.*\d\d:\d\d:\d\d Asia\/Tokyo \/ .*Asia\/Tokyo/);
    await page.getByRole('button', { name: 'Run test' }).click();
    await page.getByRole('heading', { name: 'Test run' }).waitFor();
    expect(await page.getByRole('region', { name: 'Test run' }).innerText()).to.match(/200[\s\S]*"on": true/);
    await page.getByRole('button', { name: 'Deactivate', exact: true }).focus();
    await page.keyboard.press('Enter');
    // It asks first, and the keyboard's focus moves to the confirming button.
    await page.getByRole('group', { name: /^Deactivate toggle\?/ }).waitFor();
    expect(await page.evaluate(() => document.activeElement?.textContent)).to.equal('Yes, deactivate');
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: 'Activate', exact: true }).waitFor();
    await everyReplicaAnswers('toggle', 403);
    const refused = await invoke('toggle');
    expect(refused.status).to.equal(403);
    expect(JSON.parse(refused.text).error).to.equal('function_inactive');
    // A test run is refused the same way, under the same code, and records nothing.
    const executions = (await api('GET', '/api/v1/functions/toggle')).body.total_executions;
    await page.getByRole('button', { name: 'Run test' }).click();
    await until('the refused test run', async () => (await page.getByRole('alert').innerText().catch(() => '')).includes('(function_inactive)'), waitMs);
    expect(await page.getByRole('alert').innerText()).to.equal('function toggle is inactive; activate it to invoke it (function_inactive)');
    expect(await page.getByRole('region', { name: 'Test run' }).count()).to.equal(0);
    expect((await api('GET', '/api/v1/functions/toggle')).body.total_executions).to.equal(executions);
    await page.getByRole('button', { name: 'Activate', exact: true }).focus();
    await page.keyboard.press('Space');
    await page.getByRole('button', { name: 'Deactivate', exact: true }).waitFor();
    await everyReplicaAnswers('toggle', 200);
    const again = await invoke('toggle');
    expect(again.status, again.text).to.equal(200);
  });

  it('refuses a state change made with the session cookie but without the CSRF token, or from another origin', async () => {
    const url = `${gw().adminUrl}/admin/api/v1`;
    const cookie = await cookieHeader();
    // Reading with the cookie works (the panel's own way into the management API).
    const list = await fetch(`${url}/functions`, { headers: { cookie } });
    expect(list.status).to.equal(200);
    const noCsrf = await fetch(`${url}/functions/toggle/deactivate`, { method: 'POST', headers: { cookie } });
    expect(noCsrf.status).to.equal(403);
    expect((await noCsrf.json()).error).to.equal('forbidden');
    const wrongCsrf = await fetch(`${url}/network-policy/global`, { method: 'PUT', headers: { cookie, 'x-fnhost-csrf': 'guess', 'content-type': 'application/json' }, body: '{"default":"deny"}' });
    expect(wrongCsrf.status).to.equal(403);
    const session = await (await fetch(`${gw().adminUrl}/admin/api/session`, { headers: { cookie } })).json();
    // The main origin (function pages) is another origin: refused even with the token.
    for (const origin of ['http://evil.example', new URL(gw().url).origin]) {
      const foreign = await fetch(`${url}/functions/toggle/deactivate`, { method: 'POST', headers: { cookie, 'x-fnhost-csrf': session.csrf_token, origin } });
      expect(foreign.status, origin).to.equal(403);
    }
    // The main listener takes no panel cookie at all, with or without the CSRF token.
    const onMain = await fetch(`${gw().url}/api/v1/functions/toggle/deactivate`, { method: 'POST', headers: { cookie, 'x-fnhost-csrf': session.csrf_token } });
    expect(onMain.status).to.equal(401);
    expect((await fetch(`${gw().url}/api/v1/functions`, { headers: { cookie } })).status).to.equal(401);
    const toggle = await api('GET', '/api/v1/functions/toggle');
    expect(toggle.body?.active, `toggle as read after the refused changes (${toggle.status} ${JSON.stringify(toggle.body)})`).to.equal(true);
    expect((await api('GET', '/api/v1/network-policy')).body.global.default).to.equal('allow');
    // With the token it goes through.
    const good = await fetch(`${url}/functions/toggle/deactivate`, { method: 'POST', headers: { cookie, 'x-fnhost-csrf': session.csrf_token } });
    expect(good.status).to.equal(200);
    await api('POST', '/api/v1/functions/toggle/activate');
  });

  it('signs out: the session is gone on the server', async () => {
    const cookie = await cookieHeader();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByText('You have signed out.').waitFor();
    await shot('signed-out');
    expect((await fetch(`${gw().adminUrl}/admin/api/v1/functions`, { headers: { cookie } })).status).to.equal(401);
    expect(await sessionCookie()).to.equal(undefined);
  });

  it('made no request to any origin but the panel\'s, broke no CSP rule, and every page passed the accessibility check', () => {
    expect(foreignRequests).to.deep.equal([]);
    expect(cspViolations).to.deep.equal([]);
    expect(axeChecked).to.deep.equal(['wrong-token', 'signin', 'functions', 'policy-invalid', 'policies', 'function', 'function-narrow', 'signed-out']);
  });
}
