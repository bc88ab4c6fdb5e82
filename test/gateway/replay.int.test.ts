import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { DatabaseSync } from 'node:sqlite';
import { join } from 'node:path';
import { startHarness, waitFor, type Harness } from './harness.ts';
import { startGateway } from '../helpers/platform.ts';
import { startMongoServer, type MongoTestServer } from '../helpers/mongo-server.ts';

// Request recording and replay (docs/replay.md) through a real gateway, real
// runtime processes and real SQLite; the MongoDB part through a gateway
// process on the wire-protocol stand-in.

const ECHO = `export default (req, res) => res.json({ v: 1, got: req.body, q: req.query.q ?? null })`;
const ECHO_V2 = `export default (req, res) => res.json({ v: 2, got: req.body, q: req.query.q ?? null, extra: true })`;
const RECORDING = { enabled: true, redact: { headers: ['x-card-token'], json_paths: ['$..card.number', '$.items[*].iban'] } };

async function call(h: Harness, id: string, body: unknown, headers: Record<string, string> = {}): Promise<string> {
  const r = await h.invoke(id, '/pay?q=7', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer caller-secret', cookie: 'sid=caller-cookie', 'x-card-token': 'tok_live_123', 'x-fnhost-trigger': 'forged', ...headers },
    body: JSON.stringify(body),
  });
  expect(r.status).to.equal(200);
  await r.arrayBuffer();
  const logs = await h.logs(id, '?limit=1');
  return logs.logs[0].id as string;
}

describe('request recording and replay (one machine, SQLite)', function () {
  this.timeout(120_000);
  let h: Harness;
  let id: string;
  before(async () => {
    h = await startHarness();
    id = (await h.createFunction('pay', ECHO)).function_id;
  });
  after(async () => {
    await h?.close();
  });

  it('is off by default: the function shows record_requests off, and a record has no request to replay (409 naming why)', async () => {
    const fn = await h.api('GET', '/api/v1/functions/pay');
    expect(fn.body.record_requests).to.deep.equal({ enabled: false, max_body_bytes: 65536, redact: { headers: [], json_paths: [] } });
    const logId = await call(h, id, { card: { number: '4111' } });
    for (const [method, path] of [['GET', `/api/v1/functions/pay/logs/${logId}/request`], ['POST', `/api/v1/functions/pay/logs/${logId}/replay`]] as const) {
      const r = await h.api(method, path);
      expect(r.status, path).to.equal(409);
      expect(r.body.error).to.equal('replay_not_recorded');
      expect(r.body.message).to.match(/does not record requests \(record_requests is off\)/);
    }
  });

  it('refuses a bad setting naming it', async () => {
    for (const [value, pattern] of [
      [{ enabled: 'yes' }, /enabled must be true or false/],
      [{ max_body_bytes: 70_000 }, /max_body_bytes must be an integer from 0 to 65536/],
      [{ redact: { json_paths: ['card.number'] } }, /JSON path "card.number" is invalid: it must start with \$/],
      [{ redact: { json_paths: ['$.a[?(@.x)]'] } }, /bracket at character 4/],
      [{ redact: { headers: ['bad header'] } }, /"bad header" is not a header name/],
      [{ other: 1 }, /unknown field "other"/],
    ] as const) {
      const r = await h.api('PATCH', '/api/v1/functions/pay', { record_requests: value });
      expect(r.status, JSON.stringify(value)).to.equal(400);
      expect(r.body.message).to.match(pattern);
    }
  });

  it('keeps an opted-in call\'s request and response without credentials or platform headers, masked by the policy, out of listings', async () => {
    const before = await call(h, id, { n: 0 });
    const set = await h.api('PATCH', '/api/v1/functions/pay', { record_requests: RECORDING });
    expect(set.status).to.equal(200);
    expect(set.body.record_requests).to.deep.equal({ enabled: true, max_body_bytes: 65536, redact: { headers: ['x-card-token'], json_paths: ['$..card.number', '$.items[*].iban'] } });
    const logId = await call(h, id, { card: { number: '4111111111111111', holder: 'Ada' }, items: [{ iban: 'DE89' }, { iban: 'FR76', n: 2 }] });
    const got = await h.api('GET', `/api/v1/functions/pay/logs/${logId}/request`);
    expect(got.status).to.equal(200);
    const { request, response } = got.body;
    expect(request.method).to.equal('POST');
    expect(request.path).to.equal('/pay');
    expect(request.query).to.equal('q=7');
    expect(request.headers).to.not.have.any.keys('authorization', 'cookie', 'x-fnhost-trigger');
    expect(request.headers['x-card-token']).to.equal('[redacted]');
    expect(request.headers['content-type']).to.equal('application/json');
    expect(JSON.parse(request.body.data)).to.deep.equal({ card: { number: '[redacted]', holder: 'Ada' }, items: [{ iban: '[redacted]' }, { iban: '[redacted]', n: 2 }] });
    expect(response.status).to.equal(200);
    // The response's JSON is masked too: the handler echoed the card (under $.got, which $..card.number reaches).
    expect(JSON.parse(response.body.data)).to.deep.include({ v: 1, q: '7' });
    expect(JSON.parse(response.body.data).got.card).to.deep.equal({ number: '[redacted]', holder: 'Ada' });
    expect(response.body.data).to.not.include('4111111111111111');
    expect(JSON.stringify(got.body)).to.not.include('caller-secret').and.not.include('caller-cookie').and.not.include('tok_live_123');
    // Listings carry no request.
    const list = await h.logs('pay');
    expect(JSON.stringify(list)).to.not.include('request').and.not.include('Ada');
    // A record from before the opt-in: 409, naming that recording was turned on later.
    const old = await h.api('POST', `/api/v1/functions/pay/logs/${before}/replay`);
    expect(old.status).to.equal(409);
    expect(old.body.message).to.match(/was not recording requests when it ran \(record_requests was turned on later\)/);
  });

  it('replays a record against the current code: a new record with trigger replay and the structural difference', async () => {
    const logId = await call(h, id, { card: { number: '4111' }, k: 'v' });
    const same = await h.api('POST', `/api/v1/functions/pay/logs/${logId}/replay`);
    expect(same.status).to.equal(200);
    expect(same.body.code).to.equal('current');
    expect(same.body.changes).to.deep.equal([]);
    expect((await h.api('PATCH', '/api/v1/functions/pay', { code: ECHO_V2 })).status).to.equal(200);
    const changed = await h.api('POST', `/api/v1/functions/pay/logs/${logId}/replay`);
    expect(changed.status).to.equal(200);
    expect(changed.body.replayed.status).to.equal(200);
    // The handler got the request as recorded (masked value included), and the new code answers differently.
    expect(changed.body.changes).to.deep.equal([
      { kind: 'json', path: '$.extra', recorded: undefined, replayed: true },
      { kind: 'json', path: '$.v', recorded: 1, replayed: 2 },
    ].map((c) => JSON.parse(JSON.stringify(c))));
    const logs = await h.logs('pay', '?limit=1');
    expect(logs.logs[0].id).to.equal(changed.body.log_id);
    expect(logs.logs[0].trigger).to.equal('replay');
  });

  it('replays once against a throwaway version (--code): never stored, the serving runtime untouched', async () => {
    const logId = await call(h, id, { k: 1 });
    const pid = h.platform.executor.pid(id);
    expect(pid).to.be.a("number");
    const code = `export default (req, res) => res.status(201).json({ v: 3, got: req.body })`;
    const r = await h.api('POST', `/api/v1/functions/pay/logs/${logId}/replay`, { code });
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    expect(r.body.code).to.equal('throwaway');
    expect(r.body.changes, JSON.stringify(r.body.changes)).to.deep.include({ kind: 'status', recorded: 200, replayed: 201 });
    expect(r.body.changes).to.deep.include({ kind: 'json', path: '$.v', recorded: 2, replayed: 3 });
    const fn = await h.api('GET', '/api/v1/functions/pay');
    expect(fn.body.code).to.equal(ECHO_V2);
    const after = await h.invoke(id, '/', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect((await after.json()).v).to.equal(2);
    expect(h.platform.executor.pid(id)).to.equal(pid);
    const bad = await h.api('POST', `/api/v1/functions/pay/logs/${logId}/replay`, { code: 'export default (req, res) => {' });
    expect(bad.status).to.equal(400);
    expect(bad.body.error).to.equal('invalid_code');
  });

  it('clear errors: an unknown log id (404), a body over the bound (422), an inactive function (403)', async () => {
    const unknown = await h.api('POST', '/api/v1/functions/pay/logs/log_doesnotexist00000000/replay');
    expect(unknown.status).to.equal(404);
    expect(unknown.body.message).to.match(/log "log_doesnotexist00000000" not found for function pay/);
    expect((await h.api('PATCH', '/api/v1/functions/pay', { record_requests: { max_body_bytes: 16 } })).status).to.equal(200);
    const logId = await call(h, id, { long: 'x'.repeat(100) });
    const stored = await h.api('GET', `/api/v1/functions/pay/logs/${logId}/request`);
    expect(stored.body.request.body).to.deep.include({ truncated: true, data: '' });
    expect(stored.body.request.body.omitted).to.match(/over the 16-byte bound cannot be masked/);
    const over = await h.api('POST', `/api/v1/functions/pay/logs/${logId}/replay`);
    expect(over.status).to.equal(422);
    expect(over.body.error).to.equal('replay_body_incomplete');
    expect(over.body.message).to.match(/its request body was not kept/);
    // Without a JSON policy the body is kept cut, and marked so.
    expect((await h.api('PATCH', '/api/v1/functions/pay', { record_requests: { redact: { headers: [], json_paths: [] } } })).status).to.equal(200);
    const cutId = await call(h, id, { long: 'y'.repeat(100) });
    const cut = await h.api('POST', `/api/v1/functions/pay/logs/${cutId}/replay`);
    expect(cut.status).to.equal(422);
    expect(cut.body.message).to.match(/its request body was \d+ bytes, over the pay's record_requests.max_body_bytes bound, so only its first 16 were kept/);
    expect((await h.api('POST', '/api/v1/functions/pay/deactivate')).status).to.equal(200);
    const inactive = await h.api('POST', `/api/v1/functions/pay/logs/${logId}/replay`);
    expect(inactive.status).to.equal(403);
    expect((await h.api('POST', '/api/v1/functions/pay/activate')).status).to.equal(200);
    expect((await h.api('PATCH', '/api/v1/functions/pay', { record_requests: { max_body_bytes: 65536 } })).status).to.equal(200);
  });

  it('a record is reached only through its own function: another function\'s log id is 404, its request never shown', async () => {
    const logId = await call(h, id, { card: { number: '4111' } });
    const other = await h.createFunction('other', ECHO, { record_requests: true });
    for (const [method, path] of [['GET', `/api/v1/functions/other/logs/${logId}/request`], ['POST', `/api/v1/functions/other/logs/${logId}/replay`]] as const) {
      const r = await h.api(method, path);
      expect(r.status, path).to.equal(404);
      expect(r.body.error).to.equal('log_not_found');
    }
    expect((await h.logs(other.function_id)).pagination.totalCount).to.equal(0);
  });

  it('records a streamed answer (over the buffering size): its first bytes, cut and marked with the whole size', async () => {
    const big = await h.createFunction('big', `export default (req, res) => { res.type('text/plain'); res.write('a'.repeat(50000)); res.end('b'.repeat(50000)); }`, { record_requests: { enabled: true, max_body_bytes: 1000 } });
    const r = await h.invoke(big.function_id, '/');
    expect((await r.text()).length).to.equal(100_000);
    const logId = (await h.logs('big', '?limit=1')).logs[0].id;
    const got = await h.api('GET', `/api/v1/functions/big/logs/${logId}/request`);
    expect(got.body.response.body).to.deep.include({ encoding: 'utf8', size: 100_000, truncated: true });
    expect(got.body.response.body.data).to.equal('a'.repeat(1000));
  });

  it('a throwaway version runs once and stops: no runtime is left behind', async () => {
    const logId = await call(h, id, { k: 2 });
    // The runtimes (and their sandboxes) are this process's children: the gateway runs in it.
    const children = () => readdirSync('/proc').filter((d) => /^\d+$/.test(d)).filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ')[1] === String(process.pid);
      } catch {
        return false;
      }
    }).length;
    // Settled first: the warm pool refills after each take.
    const before = await waitFor(async () => {
      const a = children();
      await new Promise((r) => setTimeout(r, 300));
      return a === children() ? a : undefined;
    }, 'a settled process count');
    const r = await h.api('POST', `/api/v1/functions/pay/logs/${logId}/replay`, { code: `export default (req, res) => res.json({ v: 9 })` });
    expect(r.status).to.equal(200);
    expect(JSON.parse(r.body.replayed.body.data).v).to.equal(9);
    // The throwaway took a runtime from the pool (which refills) and stopped: back to as many processes as before.
    await waitFor(() => children() === before, `${before} child processes again (${children()} now)`);
  });

  it('an exchange goes with its record: count retention hides it at once and the sweep deletes its row', async () => {
    const first = await call(h, id, { n: 1 });
    await call(h, id, { n: 2 });
    expect((await h.api('PUT', '/api/v1/functions/pay/retention', { type: 'count', count: 1 })).status).to.equal(200);
    const gone = await h.api('GET', `/api/v1/functions/pay/logs/${first}/request`);
    expect(gone.status).to.equal(404);
    const db = new DatabaseSync(join(h.dataDir, 'fnhost.db'), { readOnly: true });
    try {
      // The record is deleted, and no exchange row is left without its record (exchanges are keyed by the record's seq).
      expect((db.prepare('SELECT count(*) AS n FROM logs WHERE id = ?').get(first) as { n: number }).n).to.equal(0);
      expect((db.prepare('SELECT count(*) AS n FROM log_exchanges e LEFT JOIN logs l ON l.seq = e.seq WHERE l.seq IS NULL').get() as { n: number }).n).to.equal(0);
      const left = db.prepare('SELECT count(*) AS n FROM log_exchanges e JOIN logs l ON l.seq = e.seq JOIN log_functions f ON f.fn = l.fn WHERE f.function_id = ?').get(id) as { n: number };
      expect(left.n).to.equal(1);
    } finally {
      db.close();
    }
    // Deleting the function deletes the rest.
    expect((await h.api('DELETE', '/api/v1/functions/pay')).status).to.equal(204);
    const after = new DatabaseSync(join(h.dataDir, 'fnhost.db'), { readOnly: true });
    try {
      const orphans = after.prepare('SELECT count(*) AS n FROM log_exchanges e LEFT JOIN logs l ON l.seq = e.seq WHERE l.seq IS NULL').get() as { n: number };
      expect(orphans.n).to.equal(0);
      expect((after.prepare("SELECT count(*) AS n FROM log_exchanges WHERE exchange LIKE '%/pay%'").get() as { n: number }).n).to.equal(0);
    } finally {
      after.close();
    }
  });
});

describe('request recording and replay on MongoDB (gateway process, wire-protocol server)', function () {
  this.timeout(180_000);
  let mongo: MongoTestServer;
  let url: string;
  const TOKEN = 'a-long-enough-admin-token-for-replay';
  before(async () => {
    mongo = await startMongoServer();
    const parsed = new URL(mongo.url);
    parsed.pathname = `/fnhost_replay_${process.pid}_${Date.now()}`;
    url = parsed.toString();
  });
  after(async () => {
    await mongo?.stop();
  });

  it('stores the exchange apart from the log, replays it, and deletes it with its record', async () => {
    const gw = await startGateway({ token: TOKEN, env: { MONGODB_URL: url } });
    const api = async (method: string, path: string, body?: unknown) => {
      const r = await fetch(gw.url + path, { method, headers: { authorization: `Bearer ${TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, body: body === undefined ? undefined : JSON.stringify(body) });
      const text = await r.text();
      return { status: r.status, body: text === '' ? undefined : JSON.parse(text) };
    };
    try {
      const fn = (await api('POST', '/api/v1/functions', { name: 'mpay', code: ECHO, record_requests: { enabled: true, redact: { json_paths: ['$..card.number'] } }, retention: { type: 'time', days: 7 } })).body;
      const invoke = async (n: number) => {
        const r = await fetch(`${gw.url}/invoke/${fn.function_id}/pay`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer x' }, body: JSON.stringify({ card: { number: '4111', n } }) });
        expect(r.status).to.equal(200);
        await r.arrayBuffer();
      };
      await invoke(1);
      const logs = (await api('GET', '/api/v1/functions/mpay/logs')).body;
      expect(JSON.stringify(logs)).to.not.include('card');
      const logId = logs.logs[0].id;
      const got = await api('GET', `/api/v1/functions/mpay/logs/${logId}/request`);
      expect(got.status).to.equal(200);
      expect(JSON.parse(got.body.request.body.data)).to.deep.equal({ card: { number: '[redacted]', n: 1 } });
      expect(got.body.request.headers).to.not.have.property('authorization');
      const { MongoClient } = await import('mongodb');
      const client = new MongoClient(url);
      try {
        const doc = await client.db().collection('log_exchanges').findOne({ _id: logId as never });
        expect(doc?.function_id).to.equal(fn.function_id);
        // The record's time retention, as a TTL field of its own.
        expect(doc?.expireAt).to.be.instanceOf(Date);
        const indexes = await client.db().collection('log_exchanges').listIndexes().toArray();
        expect(indexes.find((i) => i.name === 'ttl_expireAt')).to.deep.include({ expireAfterSeconds: 0 });
        expect((await api('PATCH', '/api/v1/functions/mpay', { code: ECHO_V2 })).status).to.equal(200);
        const replay = await api('POST', `/api/v1/functions/mpay/logs/${logId}/replay`);
        expect(replay.status).to.equal(200);
        expect(replay.body.changes.map((c: { path: string }) => c.path)).to.deep.equal(['$.extra', '$.v']);
        expect((await api('GET', '/api/v1/functions/mpay/logs?limit=1')).body.logs[0].trigger).to.equal('replay');
        expect((await api('POST', `/api/v1/functions/mpay/logs/log_nosuchlog000000000000/replay`)).status).to.equal(404);
        // Count retention: the sweep deletes the old records and their exchanges.
        await invoke(2);
        // Listing flushes the writer, so the policy below applies to every record.
        expect((await api('GET', '/api/v1/functions/mpay/logs')).body.pagination.totalCount).to.equal(3);
        expect((await api('PUT', '/api/v1/functions/mpay/retention', { type: 'count', count: 1 })).status).to.equal(200);
        expect((await api('GET', `/api/v1/functions/mpay/logs/${logId}/request`)).status).to.equal(404);
        expect(await client.db().collection('log_exchanges').countDocuments({ function_id: fn.function_id })).to.equal(1);
        expect((await api('DELETE', '/api/v1/functions/mpay')).status).to.equal(204);
        expect(await client.db().collection('log_exchanges').countDocuments({ function_id: fn.function_id })).to.equal(0);
      } finally {
        await client.close();
      }
    } finally {
      await gw.stop();
    }
  });
});
