import { expect } from 'chai';
import { startGateway, type RunningGateway } from '../helpers/platform.ts';
import { startMongoServer, type MongoTestServer } from '../helpers/mongo-server.ts';
import { pollUntil } from '../helpers/wait.ts';
import { api, create, databaseUrl } from './async-helpers.ts';

// Issue 33: asynchronous invocation through a real gateway process and real
// runtimes, on SQLite (the data folder) and on MongoDB (the stand-in, or
// MONGODB_URL): accepted durably with 202, delivered through the run path
// (one record per attempt, trigger async), retried on a 5xx, a timeout and
// an out-of-memory and never on a 4xx, dead letters and their requeue,
// Idempotency-Key, an inactive function, a full queue, and the state reads
// (owner through the API; the caller through the 202's capability URL).

const TOKEN = 'a-long-enough-admin-token-for-async-invoke';
const ENV = {
  FNHOST_ASYNC_RETRY_BASE_MS: '50',
  FNHOST_ASYNC_POLL_MS: '50',
  FNHOST_ASYNC_QUEUE_FUNCTION_BYTES: '8192',
};

async function post(gw: RunningGateway, fnId: string, sub = '', init: RequestInit = {}) {
  const r = await fetch(`${gw.url}/async-invoke/${fnId}${sub}`, { method: 'POST', ...init });
  const text = await r.text();
  return { status: r.status, headers: r.headers, body: text === '' ? undefined : JSON.parse(text) };
}

async function waitState(gw: RunningGateway, name: string, id: string, states: string[]): Promise<any> {
  return pollUntil(`async call ${id} to be ${states.join(' or ')}`, async () => {
    const r = await api(gw, 'GET', `/api/v1/functions/${name}/async/${id}`);
    return states.includes(r.body?.state) ? r.body : undefined;
  }, 60_000, 50);
}

async function asyncRecords(gw: RunningGateway, name: string, id: string): Promise<any[]> {
  const r = await api(gw, 'GET', `/api/v1/functions/${name}/logs?limit=100`);
  return (r.body.logs as any[]).filter((l) => l.async_id === id).sort((a, b) => a.attempt - b.attempt);
}

function describeAsync(storeName: string, storeEnv: () => Record<string, string>, prepare?: () => Promise<void>, cleanup?: () => Promise<void>) {
  describe(`asynchronous invocation (${storeName})`, function () {
    this.timeout(180_000);
    let gw: RunningGateway;

    before(async () => {
      await prepare?.();
      gw = await startGateway({ token: TOKEN, env: { ...ENV, ...storeEnv() } });
    });
    after(async () => {
      await gw?.stop();
      await cleanup?.();
    });

    it('accepts with 202 and an id, runs the call once with every header, the query and the body, and shows it to the owner and to the holder of its URL', async () => {
      const fnId = await create(gw, 'echo', `export default (req, res) => res.status(201).json({ path: req.path, q: req.query, auth: req.headers.authorization, body: req.body, trigger: req.headers['x-fnhost-trigger'], id: req.headers['x-fnhost-async-id'], attempt: req.headers['x-fnhost-attempt'] })`);
      const r = await post(gw, fnId, '/orders/7?x=1', { headers: { authorization: 'Bearer caller-secret', 'content-type': 'application/json' }, body: JSON.stringify({ n: 1 }) });
      expect(r.status, JSON.stringify(r.body)).to.equal(202);
      expect(r.body.async_id).to.match(/^async_[A-Za-z0-9_-]{22}$/);
      expect(r.headers.get('location')).to.equal(`/async-calls/${fnId}/${r.body.async_id}`);
      const call = await waitState(gw, 'echo', r.body.async_id, ['succeeded']);
      expect(call.attempts).to.have.length(1);
      expect(call.attempts[0]).to.include({ attempt: 1, status_code: 201 });
      const answer = JSON.parse(Buffer.from(call.result.body, 'base64').toString());
      expect(answer).to.deep.equal({ path: '/orders/7', q: { x: '1' }, auth: 'Bearer caller-secret', body: { n: 1 }, trigger: 'async', id: r.body.async_id, attempt: '1' });
      // The owner's view keeps no header values (the caller's credentials are the handler's).
      expect(JSON.stringify(call)).to.not.include('caller-secret');
      const records = await pollUntil('the attempt record', async () => {
        const found = await asyncRecords(gw, 'echo', r.body.async_id);
        return found.length === 1 ? found : undefined;
      }, 20_000, 50);
      expect(records[0]).to.include({ id: call.attempts[0].log_id, trigger: 'async', attempt: 1, status_code: 201 });
      // The capability URL: state and answer, not the owner's record ids.
      const pub = await fetch(gw.url + r.headers.get('location')!);
      expect(pub.status).to.equal(200);
      const view = await pub.json() as any;
      expect(view).to.include({ async_id: r.body.async_id, state: 'succeeded' });
      expect(view.attempts[0]).to.not.have.property('log_id');
      expect(view.result.status_code).to.equal(201);
      // A guessed id is not found.
      expect((await fetch(`${gw.url}/async-calls/${fnId}/async_${'A'.repeat(22)}`)).status).to.equal(404);
    });

    it('retries a 5xx the function answered twice with backoff, then keeps the call as a dead letter; a requeue runs it again', async () => {
      await create(gw, 'flaky', `export default (req, res) => res.status(500).json({ error: 'down' })`);
      const fnId = (await api(gw, 'GET', '/api/v1/functions/flaky')).body.function_id;
      const r = await post(gw, fnId);
      expect(r.status).to.equal(202);
      const dead = await waitState(gw, 'flaky', r.body.async_id, ['dead']);
      expect(dead.dead_reason).to.equal('retries_exhausted');
      expect(dead.attempts.map((a: any) => [a.attempt, a.status_code])).to.deep.equal([[1, 500], [2, 500], [3, 500]]);
      const records = await pollUntil('three attempt records', async () => {
        const found = await asyncRecords(gw, 'flaky', r.body.async_id);
        return found.length === 3 ? found : undefined;
      }, 20_000, 50);
      expect(records.map((l) => [l.trigger, l.attempt, l.status_code])).to.deep.equal([['async', 1, 500], ['async', 2, 500], ['async', 3, 500]]);
      // The backoff waited between attempts (base 50 ms, equal jitter: at least 25 ms, then 50 ms).
      const t = dead.attempts.map((a: any) => [Date.parse(a.started_at), Date.parse(a.ended_at)]);
      expect(t[1][0] - t[0][1]).to.be.at.least(25);
      expect(t[2][0] - t[1][1]).to.be.at.least(50);
      const listed = await api(gw, 'GET', '/api/v1/functions/flaky/async?state=dead');
      expect(listed.body.calls.map((c: any) => c.async_id)).to.deep.equal([r.body.async_id]);

      // Fixed, and requeued: it runs again as a new call and succeeds.
      expect((await api(gw, 'PATCH', '/api/v1/functions/flaky', { code: `export default (req, res) => res.json({ ok: true })` })).status).to.equal(200);
      const retry = await api(gw, 'POST', '/api/v1/functions/flaky/dead-letters/retry', { all: true });
      expect(retry.body).to.deep.include({ requeued: 1 });
      const done = await waitState(gw, 'flaky', r.body.async_id, ['succeeded']);
      expect(done.attempts.at(-1)).to.include({ attempt: 1, status_code: 200 });
      expect((await api(gw, 'GET', '/api/v1/functions/flaky/async?state=dead')).body.calls).to.deep.equal([]);
    });

    it('never retries a 4xx: the call is failed after one attempt', async () => {
      const fnId = await create(gw, 'picky', `export default (req, res) => res.status(422).json({ error: 'bad order' })`);
      const r = await post(gw, fnId);
      const call = await waitState(gw, 'picky', r.body.async_id, ['failed', 'dead', 'succeeded']);
      expect(call.state).to.equal('failed');
      expect(call.attempts.map((a: any) => a.status_code)).to.deep.equal([422]);
    });

    it('retries a timeout and an out-of-memory (max_retries 1 of the function): two attempts each, then dead', async () => {
      const slowId = await create(gw, 'stuck', `export default () => {}`, { timeout_seconds: 1, async: { max_retries: 1 } });
      const hogId = await create(gw, 'hog', `export default (req, res) => { const keep = []; for (;;) keep.push(new Array(1e6).fill(Math.random())); }`, { memory_mib: 32, timeout_seconds: 30, async: { max_retries: 1 } });
      const a = await post(gw, slowId);
      const b = await post(gw, hogId);
      const slow = await waitState(gw, 'stuck', a.body.async_id, ['dead', 'failed', 'succeeded']);
      const hog = await waitState(gw, 'hog', b.body.async_id, ['dead', 'failed', 'succeeded']);
      expect(slow.state).to.equal('dead');
      expect(slow.attempts.map((x: any) => x.status_code)).to.deep.equal([504, 504]);
      expect(hog.state).to.equal('dead');
      expect(hog.attempts.map((x: any) => x.status_code)).to.deep.equal([502, 502]);
      expect(hog.attempts[0].error_message).to.match(/out of memory/);
    });

    it('gives the first call\'s id for a repeated Idempotency-Key and stores nothing more; a bad key is refused', async () => {
      const fnId = await create(gw, 'once', `export default (req, res) => res.json({ ok: true })`);
      const first = await post(gw, fnId, '', { headers: { 'idempotency-key': 'order-42' }, body: 'a' });
      const second = await post(gw, fnId, '', { headers: { 'idempotency-key': 'order-42' }, body: 'b' });
      expect(first.status).to.equal(202);
      expect(second.status).to.equal(202);
      expect(second.body).to.include({ async_id: first.body.async_id, duplicate: true });
      expect(second.headers.get('idempotent-replayed')).to.equal('true');
      await waitState(gw, 'once', first.body.async_id, ['succeeded']);
      const all = await api(gw, 'GET', '/api/v1/functions/once/async?state=queued,running,succeeded,failed,dead');
      expect(all.body.calls).to.have.length(1);
      expect((await post(gw, fnId, '', { headers: { 'idempotency-key': 'x'.repeat(300) } })).status).to.equal(400);
    });

    it('refuses an inactive function with 403 and an unknown one with 404, storing nothing', async () => {
      const fnId = await create(gw, 'off', `export default (req, res) => res.json({ ok: true })`, { active: false });
      const r = await post(gw, fnId);
      expect(r.status).to.equal(403);
      expect(r.body.error).to.equal('function_inactive');
      expect((await api(gw, 'GET', '/api/v1/functions/off/async?state=queued,running,succeeded,failed,dead')).body.calls).to.deep.equal([]);
      expect((await post(gw, '00000000-0000-4000-8000-000000000000')).status).to.equal(404);
    });

    it('refuses past the function\'s queue bytes with 429 and Retry-After, counted in fnhost_refused_total', async () => {
      // The handler holds each call 3 s and one runs at a time, so the queue holds what was accepted.
      const fnId = await create(gw, 'slow', `export default async (req, res) => { await new Promise((r) => setTimeout(r, 3000)); res.json({ ok: true }) }`);
      const body = 'x'.repeat(3000);
      const statuses: number[] = [];
      const refusedCount = async () => Number(/fnhost_refused_total\{reason="async_queue_function_bytes"\} (\d+)/.exec(await (await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text())?.[1] ?? 0);
      let refused: Awaited<ReturnType<typeof post>> | undefined;
      let keyed: Awaited<ReturnType<typeof post>> | undefined;
      for (let i = 0; i < 4; i++) {
        const r = await post(gw, fnId, '', { body, headers: i === 0 ? { 'idempotency-key': 'slow-first' } : {} });
        if (i === 0) keyed = r;
        statuses.push(r.status);
        if (r.status === 429) refused = r;
      }
      expect(statuses.slice(0, 2)).to.deep.equal([202, 202]);
      expect(refused, `statuses ${statuses}`).to.not.equal(undefined);
      expect(refused!.headers.get('retry-after')).to.equal('10');
      expect(refused!.body.error).to.equal('async_queue_full');
      const metrics = await (await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text();
      expect(metrics).to.match(/fnhost_refused_total\{reason="async_queue_function_bytes"\} [1-9]/);
      expect(metrics).to.match(/fnhost_async_queued \d+/);

      // Right after the store said full, the next call is refused before its body is read
      // (gateway/src/async/full-hint.ts): the same answer, counted the same way.
      const countBefore = await refusedCount();
      const again = await post(gw, fnId, '', { body });
      expect(again.status).to.equal(429);
      expect(again.headers.get('retry-after')).to.equal('10');
      expect(again.body).to.include({ error: 'async_queue_full' });
      expect(await refusedCount()).to.equal(countBefore + 1);
      // A call with an Idempotency-Key still reaches the store: a repeat of an accepted one is its duplicate, not a 429.
      const repeat = await post(gw, fnId, '', { body, headers: { 'idempotency-key': 'slow-first' } });
      expect(repeat.status).to.equal(202);
      expect(repeat.headers.get('idempotent-replayed')).to.equal('true');
      expect(repeat.body.async_id).to.equal(keyed!.body.async_id);
      // Once calls finish and free their bytes, the queue takes calls again (the hint lapses within a second).
      await pollUntil('the queue to take a call again', async () => ((await post(gw, fnId, '', { body })).status === 202 ? true : undefined), 60_000, 250);
    });
  });
}

describeAsync('SQLite', () => ({}));

let mongo: MongoTestServer | undefined;
describeAsync('MongoDB', () => ({ MONGODB_URL: databaseUrl(mongo!, 'fnhost_async') }), async () => {
  mongo = await startMongoServer();
}, async () => {
  await mongo?.stop();
});
