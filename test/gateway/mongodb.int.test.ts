import { expect } from 'chai';
import { startGateway } from '../helpers/platform.ts';
import { startMongoServer, type MongoTestServer } from '../helpers/mongo-server.ts';
import { pollUntil, type Check } from '../helpers/wait.ts';

// The gateway process with MONGODB_URL: functions, logs, counters and KV live
// in MongoDB (the stand-in of test/README.md, or a real server from
// MONGODB_URL), so a second gateway with an empty data directory sees them.

const TOKEN = 'a-long-enough-admin-token-for-mongo';

async function api(url: string, method: string, path: string, body?: unknown) {
  const r = await fetch(url + path, { method, headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await r.text();
  return { status: r.status, body: text === '' ? undefined : JSON.parse(text) };
}

const waitFor = <T>(what: string, check: Check<T>, timeoutMs = 30_000): Promise<T> => pollUntil(what, check, timeoutMs, 100);

describe('gateway process on MongoDB (MONGODB_URL)', function () {
  this.timeout(180_000);
  let mongo: MongoTestServer;
  // Each run gets a database of its own, so a real server given by MONGODB_URL is left as it was.
  let url: string;

  before(async () => {
    mongo = await startMongoServer();
    const database = `fnhost_gw_${process.pid}_${Date.now()}`;
    const parsed = new URL(mongo.url);
    parsed.pathname = `/${database}`;
    url = parsed.toString();
  });
  after(async () => {
    await mongo?.stop();
  });

  it('keeps functions, execution logs and counters in MongoDB: a second gateway with an empty data directory sees them', async () => {
    const first = await startGateway({ token: TOKEN, env: { MONGODB_URL: url } });
    let invocationUrl: string;
    try {
      expect(first.output()).to.match(/"store":"mongodb mongodb:\/\//);
      const created = await api(first.url, 'POST', '/api/v1/functions', { name: 'in-mongo', code: 'export default (req, res) => req.query.fail ? res.status(500).send("no") : res.json({ n: Number(req.query.n) })' });
      expect(created.status, JSON.stringify(created.body)).to.equal(201);
      invocationUrl = created.body.invocation_url;
      for (let i = 0; i < 4; i++) {
        const r = await fetch(`${invocationUrl}?n=${i}`);
        expect(r.status).to.equal(200);
        expect(await r.json()).to.deep.equal({ n: i });
      }
      const failed = await fetch(`${invocationUrl}?fail=1`);
      expect(failed.status).to.equal(500);
      await failed.arrayBuffer();
      await waitFor('5 records', async () => {
        const logs = await api(first.url, 'GET', '/api/v1/functions/in-mongo/logs');
        return logs.body.pagination.totalCount === 5 ? logs : undefined;
      });
    } finally {
      expect(await first.stop()).to.equal(0);
    }

    // A new data directory: nothing of the first gateway but the database.
    const second = await startGateway({ token: TOKEN, env: { MONGODB_URL: url } });
    try {
      const fn = await api(second.url, 'GET', '/api/v1/functions/in-mongo');
      expect(fn.status).to.equal(200);
      expect(fn.body.function_id).to.match(/^[0-9a-f-]{36}$/);
      expect(fn.body.total_executions).to.equal(5);
      const all = await api(second.url, 'GET', '/api/v1/functions/in-mongo/logs');
      expect(all.body.pagination.totalCount).to.equal(5);
      expect(all.body.logs[0].status_code).to.equal(500);
      const errors = await api(second.url, 'GET', '/api/v1/functions/in-mongo/logs?status=error');
      expect(errors.body.pagination.totalCount).to.equal(1);
      // The function's runtime is started on demand by this gateway and answers.
      const r = await fetch(`${second.url}/invoke/${fn.body.function_id}?n=7`);
      expect(r.status).to.equal(200);
      expect(await r.json()).to.deep.equal({ n: 7 });
    } finally {
      expect(await second.stop()).to.equal(0);
    }
  });

  it('keeps serving invocations while MongoDB is unreachable, logs the retries, and writes the waiting records once it is back', async () => {
    // A stand-in of its own (even when MONGODB_URL is set), so it can be stopped and restarted on the same port.
    let own = await startMongoServer({ useEnv: false });
    const port = own.port!;
    const gw = await startGateway({ token: TOKEN, env: { MONGODB_URL: own.url } });
    const metric = async (name: string) => {
      const text = await (await fetch(`${gw.url}/metrics`)).text();
      const line = text.split('\n').find((l) => l.startsWith(name + ' '));
      return Number(line?.split(' ')[1]);
    };
    try {
      const created = await api(gw.url, 'POST', '/api/v1/functions', { name: 'outage', code: 'export default (req, res) => res.json({ ok: true })' });
      expect(created.status).to.equal(201);
      expect((await fetch(created.body.invocation_url)).status).to.equal(200);
      await waitFor('the first record written', async () => ((await metric('fnhost_log_records_written_total')) === 1 ? true : undefined));
      await own.stop();
      for (let i = 0; i < 3; i++) {
        const r = await fetch(created.body.invocation_url);
        expect(r.status, 'served from the in-memory function cache while the database is away').to.equal(200);
        expect(await r.json()).to.deep.equal({ ok: true });
      }
      // One JSON record per retry, through the gateway's logger (no plain-text line).
      await waitFor('the writer to report the unreachable server', async () => (/"level":"warn","msg":"MongoDB unreachable; retrying"/.test(gw.output()) ? true : undefined), 60_000);
      for (const line of gw.output().split('\n').filter((l) => l.trim() !== '')) expect(() => JSON.parse(line), line).not.to.throw();
      expect(await metric('fnhost_log_records_written_total')).to.equal(1);
      own = await startMongoServer({ useEnv: false, port });
      await waitFor('the waiting records written', async () => ((await metric('fnhost_log_records_written_total')) === 4 ? true : undefined), 90_000);
      expect(await metric('fnhost_log_records_dropped_total')).to.equal(0);
      expect(gw.output()).to.not.include(TOKEN);
    } finally {
      expect(await gw.stop()).to.equal(0);
      await own.stop();
    }
  });

  it('two gateways on one MongoDB hold a function to its KV quota together: the handler gets an error naming it, usage shows it', async () => {
    const env = { MONGODB_URL: url, FNHOST_KV_WRITES_PER_SECOND: '0', FNHOST_KV_WRITE_BYTES_PER_SECOND: '0' };
    const first = await startGateway({ token: TOKEN, env });
    let second: Awaited<ReturnType<typeof startGateway>> | undefined;
    try {
      // 40 writes of 1,000 + ~6 bytes from each gateway, 8 at a time, into a 20,000-byte quota.
      const code = `export default async (req, res) => {
        let stored = 0; const errors = new Set();
        const one = async (w) => { for (let i = w; i < 40; i += 8) {
          try { await kv.set(req.query.p + i, 'v'.repeat(998)); stored++; } catch (e) { errors.add(e.message.replace(/[0-9]+ of/, 'N of')); }
        } };
        await Promise.all([0, 1, 2, 3, 4, 5, 6, 7].map(one));
        res.json({ stored, errors: [...errors] });
      }`;
      const created = await api(first.url, 'POST', '/api/v1/functions', { name: 'kv-quota', code, kv_quota: { max_bytes: 20_000 } });
      expect(created.status, JSON.stringify(created.body)).to.equal(201);
      const id = created.body.function_id;
      second = await startGateway({ token: TOKEN, env });
      const [a, b] = await Promise.all([first, second].map(async (gw, i) => (await fetch(`${gw.url}/invoke/${id}/?p=g${i}-`)).json() as Promise<{ stored: number; errors: string[] }>));
      const stored = a!.stored + b!.stored;
      // Each key is 1,004-1,005 bytes: 19 fit in 20,000, 20 do not.
      expect(stored, JSON.stringify([a, b])).to.equal(19);
      expect(a!.errors.length + b!.errors.length, JSON.stringify([a, b])).to.be.greaterThan(0);
      expect([...a!.errors, ...b!.errors].every((m) => /^kv\.set\("g[01]-\d+"\) failed: KV quota exceeded: function kv-quota stores N of 20000 bytes \(kv_bytes\)$/.test(m)), JSON.stringify([a, b])).to.equal(true);
      const fn = await api(second.url, 'GET', `/api/v1/functions/${id}`);
      expect(fn.body.kv).to.deep.include({ keys: 19, max_bytes: 20_000 });
      expect(fn.body.kv.bytes).to.be.within(19 * 1004, 19 * 1005);
    } finally {
      await second?.stop();
      expect(await first.stop()).to.equal(0);
    }
  });

  it('refuses a MONGODB_URL that is not a mongodb:// URL, naming the variable and never printing the rest of it', async () => {
    let message = '';
    try {
      const gw = await startGateway({ token: TOKEN, env: { MONGODB_URL: 'postgres://user:s3cret-pass@db.example/fn' } });
      await gw.stop();
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).to.include('MONGODB_URL must start with mongodb://');
    expect(message).to.not.include('s3cret-pass');
  });
});
