import { expect } from 'chai';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Koa from 'koa';
import { openSqliteStores } from '@fnhost/core/store/sqlite/index.ts';
import { errorMiddleware } from '../../gateway/src/http/errors.ts';
import { digest } from '../../gateway/src/auth.ts';
import { silentLogger } from '../../gateway/src/log.ts';
import { adminPanel } from '../../gateway/src/admin/router.ts';

// The admin router over real HTTP with a dist folder the test writes: static
// serving stays inside the folder, page paths get index.html, a missing build
// is a clear 503, and the session endpoints behave.

const TOKEN = 'router-test-token-0123456789';

type Served = { url: string; server: Server; close(): Promise<void> };

async function serve(distDir: string, proxy = false): Promise<Served> {
  const app = new Koa({ proxy });
  app.silent = true;
  app.use(errorMiddleware(silentLogger));
  const stores = openSqliteStores({ path: ':memory:' });
  const panel = adminPanel({ token: { digest: digest(TOKEN), source: 'FNHOST_TOKEN', file: '' }, now: Date.now, distDir, sessionStore: stores.sessions });
  app.use(panel.router.routes());
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((r) => server.once('listening', () => r()));
  const close = async () => {
    await new Promise((r) => server.close(r));
    panel.close();
    await stores.close();
  };
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, close };
}

describe('admin router over HTTP', () => {
  let dir: string;
  let built: Served;
  let empty: Served;
  let proxied: Served;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'fnhost-admin-dist-'));
    await mkdir(join(dir, 'dist', 'assets'), { recursive: true });
    await writeFile(join(dir, 'dist', 'index.html'), '<!doctype html><title>panel</title>');
    await writeFile(join(dir, 'dist', 'assets', 'app-abc.js'), 'console.log(1)');
    await writeFile(join(dir, 'secret.txt'), 'outside');
    await mkdir(join(dir, 'nothing'));
    built = await serve(join(dir, 'dist'));
    empty = await serve(join(dir, 'nothing'));
    proxied = await serve(join(dir, 'dist'), true);
  });
  after(async () => {
    await built?.close();
    await empty?.close();
    await proxied?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('serves index.html for /admin, /admin/ and page paths, with the CSP, never cached', async () => {
    for (const path of ['/admin', '/admin/', '/admin/functions/hello', '/admin/policies']) {
      const r = await fetch(built.url + path);
      expect(r.status, path).to.equal(200);
      expect(await r.text()).to.contain('<title>panel</title>');
      expect(r.headers.get('content-type')).to.match(/text\/html/);
      expect(r.headers.get('cache-control')).to.equal('no-store');
      expect(r.headers.get('content-security-policy')).to.contain("script-src 'self'");
    }
  });

  it('serves hashed assets for a year, and 404 for a missing asset or API path', async () => {
    const js = await fetch(`${built.url}/admin/assets/app-abc.js`);
    expect(js.status).to.equal(200);
    expect(js.headers.get('content-type')).to.match(/javascript/);
    expect(js.headers.get('cache-control')).to.contain('immutable');
    expect((await fetch(`${built.url}/admin/assets/gone.js`)).status).to.equal(404);
    expect((await fetch(`${built.url}/admin/api/nothing`)).status).to.equal(404);
    expect((await fetch(`${built.url}/admin/robots.txt`)).status).to.equal(404);
  });

  it('never serves a file outside the dist folder', async () => {
    for (const path of ['/admin/../secret.txt', '/admin/%2e%2e/secret.txt', '/admin/..%2fsecret.txt', '/admin/assets/%2e%2e/%2e%2e/secret.txt']) {
      const r = await fetch(built.url + path);
      expect(await r.text(), path).not.to.contain('outside');
    }
    const bad = await fetch(`${built.url}/admin/%E0%A4%A`);
    expect(bad.status).to.equal(400);
  });

  it('answers 503 admin_not_built naming the build command when there is no build', async () => {
    const r = await fetch(`${empty.url}/admin/`);
    expect(r.status).to.equal(503);
    const body = await r.json();
    expect(body.error).to.equal('admin_not_built');
    expect(body.message).to.contain('npm run build -w admin');
  });

  it('signs in, reports the session, and signs out only with the CSRF token', async () => {
    const bad = await fetch(`${built.url}/admin/api/session`, { method: 'POST', body: '{"nope":1}' });
    expect(bad.status).to.equal(400);
    const signIn = await fetch(`${built.url}/admin/api/session`, { method: 'POST', body: JSON.stringify({ token: TOKEN }) });
    expect(signIn.status).to.equal(201);
    const { csrf_token } = await signIn.json();
    const cookie = signIn.headers.getSetCookie()[0]!.split(';')[0]!;
    const info = await fetch(`${built.url}/admin/api/session`, { headers: { cookie } });
    expect(info.status).to.equal(200);
    expect((await info.json()).csrf_token).to.equal(csrf_token);
    expect(info.headers.get('cache-control')).to.equal('no-store');
    expect((await fetch(`${built.url}/admin/api/session`, { method: 'DELETE', headers: { cookie } })).status).to.equal(403);
    const out = await fetch(`${built.url}/admin/api/session`, { method: 'DELETE', headers: { cookie, 'x-fnhost-csrf': csrf_token } });
    expect(out.status).to.equal(204);
    expect(out.headers.get('set-cookie')).to.contain('Max-Age=0');
    expect((await fetch(`${built.url}/admin/api/session`, { headers: { cookie } })).status).to.equal(401);
  });

  it('marks the cookie __Host- and Secure behind TLS: X-Forwarded-Proto https only from a trusted proxy', async () => {
    const signIn = (url: string) =>
      fetch(`${url}/admin/api/session`, { method: 'POST', headers: { 'x-forwarded-proto': 'https', origin: `https://${new URL(url).host}` }, body: JSON.stringify({ token: TOKEN }) });
    const trusted = await signIn(proxied.url);
    expect(trusted.status).to.equal(201);
    expect(trusted.headers.getSetCookie()[0]).to.match(/^__Host-fnhost_admin=[\w-]{43}; Path=\/; HttpOnly; SameSite=Strict; Max-Age=\d+; Secure$/);
    // The __Host- cookie is a session like the plain one.
    const tlsCookie = trusted.headers.getSetCookie()[0]!.split(';')[0]!;
    expect((await fetch(`${proxied.url}/admin/api/session`, { headers: { cookie: tlsCookie, 'x-forwarded-proto': 'https' } })).status).to.equal(200);
    const untrusted = await signIn(built.url);
    expect(untrusted.status).to.equal(201);
    expect(untrusted.headers.getSetCookie()[0]).to.match(/^fnhost_admin=[\w-]{43}; Path=\/admin; /);
    expect(untrusted.headers.getSetCookie()[0]).not.to.contain('Secure');
    const foreign = await fetch(`${proxied.url}/admin/api/session`, { method: 'POST', headers: { 'x-forwarded-proto': 'https', origin: 'https://evil.example' }, body: JSON.stringify({ token: TOKEN }) });
    expect(foreign.status).to.equal(403);
  });
});
