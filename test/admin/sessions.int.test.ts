import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { MongoClient } from 'mongodb';
import { startGateway, type RunningGateway } from '../helpers/platform.ts';
import { startMongoServer, type MongoTestServer } from '../helpers/mongo-server.ts';

// Admin panel sessions live in the stores, not in one gateway's memory:
// two gateway processes sharing one MongoDB (the stand-in of test/README.md,
// or a real server from MONGODB_URL) honour each other's sessions and
// sign-outs, and a one-machine gateway restarted on the same data directory
// keeps its sessions (SQLite). What the databases hold is checked too: the
// SHA-256 of the session id, never the id.

const TOKEN = 'a-long-enough-admin-token-for-sessions';

interface PanelSession {
  cookie: string;
  id: string;
  csrf: string;
}

async function signIn(gw: RunningGateway): Promise<PanelSession> {
  const r = await fetch(`${gw.adminUrl}/admin/api/session`, { method: 'POST', headers: { 'content-type': 'application/json', origin: gw.adminUrl }, body: JSON.stringify({ token: gw.token }) });
  expect(r.status).to.equal(201);
  const [setCookie, legacyRemoval] = r.headers.getSetCookie();
  expect(setCookie).to.match(/^fnhost_admin=[A-Za-z0-9_-]{43}; Path=\/admin; HttpOnly; SameSite=Strict; Max-Age=28800$/);
  // The Path=/ cookie of gateways before the origin split is removed: it would go to /invoke.
  expect(legacyRemoval).to.equal('fnhost_admin=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0');
  const cookie = setCookie!.split(';')[0]!;
  return { cookie, id: cookie.slice('fnhost_admin='.length), csrf: (await r.json()).csrf_token };
}

/** A state change made with the panel session, as the page makes it (cookie, CSRF header, Origin). */
function putGlobalPolicy(gw: RunningGateway, session: PanelSession, csrf: string | undefined, deny: string[]) {
  return fetch(`${gw.adminUrl}/admin/api/v1/network-policy/global`, {
    method: 'PUT',
    headers: { cookie: session.cookie, origin: gw.adminUrl, 'content-type': 'application/json', ...(csrf === undefined ? {} : { 'x-fnhost-csrf': csrf }) },
    body: JSON.stringify({ default: 'allow', allow: [], deny }),
  });
}

const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');

describe('admin panel sessions shared by two gateways on one MongoDB', function () {
  this.timeout(180_000);
  let mongo: MongoTestServer;
  let url: string;
  let database: string;
  let a: RunningGateway | undefined;
  let b: RunningGateway | undefined;
  let client: MongoClient | undefined;

  before(async () => {
    mongo = await startMongoServer();
    database = `fnhost_sessions_${process.pid}_${Date.now()}`;
    const parsed = new URL(mongo.url);
    parsed.pathname = `/${database}`;
    url = parsed.toString();
    [a, b] = await Promise.all([startGateway({ token: TOKEN, env: { MONGODB_URL: url } }), startGateway({ token: TOKEN, env: { MONGODB_URL: url } })]);
    client = await MongoClient.connect(mongo.url);
  });
  after(async () => {
    const codes = await Promise.all([a?.stop(), b?.stop()]);
    if (!mongo?.standIn) await client?.db(database).dropDatabase();
    await client?.close();
    await mongo?.stop();
    expect(codes).to.deep.equal([0, 0]);
  });

  it('a session made on gateway A works on B for reads and state changes; signing out on B ends it on A', async () => {
    const session = await signIn(a!);
    const sessions = client!.db(database).collection('admin_sessions');

    // The database holds the SHA-256 of the id, never the id.
    const doc = await sessions.findOne({ _id: sha256(session.id) as never });
    expect(doc, 'the session document, keyed by the hash of the id').to.not.equal(null);
    expect(JSON.stringify(await sessions.find().toArray())).to.not.include(session.id);
    expect(doc!['expireAt']).to.be.instanceOf(Date);

    // B knows the session: the same CSRF token, and reads through its panel API.
    const info = await fetch(`${b!.adminUrl}/admin/api/session`, { headers: { cookie: session.cookie } });
    expect(info.status).to.equal(200);
    expect((await info.json()).csrf_token).to.equal(session.csrf);
    expect((await fetch(`${b!.adminUrl}/admin/api/v1/functions`, { headers: { cookie: session.cookie } })).status).to.equal(200);

    // A state change on B needs the session's CSRF token, as on A.
    expect((await putGlobalPolicy(b!, session, undefined, ['10.0.0.0/8'])).status).to.equal(403);
    expect((await putGlobalPolicy(b!, session, 'x'.repeat(43), ['10.0.0.0/8'])).status).to.equal(403);
    const changed = await putGlobalPolicy(b!, session, session.csrf, ['10.0.0.0/8']);
    expect(changed.status, await changed.clone().text()).to.equal(200);
    const changes = await (await fetch(`${a!.url}/api/v1/network-policy/changes?limit=1`, { headers: { authorization: `Bearer ${TOKEN}` } })).json();
    expect(changes.changes[0]).to.deep.include({ scope: 'global', actor: `admin (panel session ${doc!['label']})` });

    // Sign-out on B (with the CSRF token) ends the session for A too.
    const out = await fetch(`${b!.adminUrl}/admin/api/session`, { method: 'DELETE', headers: { cookie: session.cookie, origin: b!.adminUrl, 'x-fnhost-csrf': session.csrf } });
    expect(out.status).to.equal(204);
    expect(out.headers.get('set-cookie')).to.contain('Max-Age=0');
    expect(await sessions.countDocuments({ _id: sha256(session.id) as never })).to.equal(0);
    expect((await fetch(`${a!.adminUrl}/admin/api/session`, { headers: { cookie: session.cookie } })).status).to.equal(401);
    expect((await fetch(`${a!.adminUrl}/admin/api/v1/functions`, { headers: { cookie: session.cookie } })).status).to.equal(401);
    expect((await putGlobalPolicy(a!, session, session.csrf, [])).status).to.equal(401);
  });

  it('a sign-in on B replaces the old session of that browser everywhere, and sessions of other browsers are untouched', async () => {
    const first = await signIn(a!);
    const other = await signIn(a!);
    const again = await fetch(`${b!.adminUrl}/admin/api/session`, { method: 'POST', headers: { cookie: first.cookie, origin: b!.adminUrl, 'content-type': 'application/json' }, body: JSON.stringify({ token: TOKEN }) });
    expect(again.status).to.equal(201);
    const replaced = again.headers.getSetCookie()[0]!.split(';')[0]!;
    expect(replaced).to.not.equal(first.cookie);
    expect((await fetch(`${a!.adminUrl}/admin/api/session`, { headers: { cookie: first.cookie } })).status).to.equal(401);
    expect((await fetch(`${a!.adminUrl}/admin/api/session`, { headers: { cookie: replaced } })).status).to.equal(200);
    expect((await fetch(`${b!.adminUrl}/admin/api/session`, { headers: { cookie: other.cookie } })).status).to.equal(200);
  });
});

describe('admin panel sessions survive a restart of a one-machine gateway (SQLite)', function () {
  this.timeout(120_000);
  let gw: RunningGateway | undefined;
  let dataDir: string | undefined;
  after(async () => {
    await gw?.stop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('the cookie and CSRF token of a session made before the restart still work after it', async () => {
    gw = await startGateway({ keepDataDir: true });
    dataDir = gw.dataDir;
    const session = await signIn(gw);
    expect(await gw.stop()).to.equal(0);

    // The database file holds the hash of the id, never the id.
    const db = new DatabaseSync(join(dataDir, 'fnhost.db'), { readOnly: true });
    try {
      const rows = db.prepare('SELECT * FROM admin_sessions').all() as Array<Record<string, unknown>>;
      expect(rows.map((r) => r['id_hash'])).to.deep.equal([sha256(session.id)]);
      expect(JSON.stringify(rows)).to.not.include(session.id);
      expect(rows[0]).to.include({ csrf: session.csrf });
    } finally {
      db.close();
    }

    gw = await startGateway({ dataDir, keepDataDir: true });
    const info = await fetch(`${gw.adminUrl}/admin/api/session`, { headers: { cookie: session.cookie } });
    expect(info.status).to.equal(200);
    expect((await info.json()).csrf_token).to.equal(session.csrf);
    expect((await putGlobalPolicy(gw, session, session.csrf, ['192.0.2.0/24'])).status).to.equal(200);
    const out = await fetch(`${gw.adminUrl}/admin/api/session`, { method: 'DELETE', headers: { cookie: session.cookie, origin: gw.adminUrl, 'x-fnhost-csrf': session.csrf } });
    expect(out.status).to.equal(204);
    expect((await fetch(`${gw.adminUrl}/admin/api/session`, { headers: { cookie: session.cookie } })).status).to.equal(401);
    expect(await gw.stop()).to.equal(0);
  });
});
