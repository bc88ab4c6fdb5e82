import { expect } from 'chai';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import { rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { startGateway, type RunningGateway } from '../helpers/platform.ts';
import { startMongoServer, type MongoTestServer } from '../helpers/mongo-server.ts';
import { pollUntil } from '../helpers/wait.ts';
import { api, create, databaseUrl } from './async-helpers.ts';

// Issue 33, callbacks (docs/async.md "Callbacks"): X-Callback-Url through a
// real gateway process and real runtimes, on SQLite and on MongoDB (the
// stand-in): refused at acceptance (400) unless the function lists the host;
// the POST carries the final answer (body as is, the function's content-type,
// X-Fnhost-* facts); a receiver that fails first is tried again, a redirect is
// not followed; the callback's state is on the call for the owner and the
// caller. The receivers listen on 127.0.0.1, which the egress policy protects
// as the machine: as the egress tests do, a function's network policy names
// the receiver's address and port to open it. The attack: a callback to a
// protected address (a loopback service no rule names, 169.254.169.254, the
// gateway's own admin listener) is never sent.

const TOKEN = 'a-long-enough-admin-token-for-async-callbacks';
const ENV = {
  FNHOST_ASYNC_RETRY_BASE_MS: '50',
  FNHOST_ASYNC_POLL_MS: '50',
  FNHOST_ASYNC_CALLBACK_RETRY_BASE_MS: '50',
  // The default: a loaded machine's receiver may take seconds, and a second try would change the counts the tests expect.
  FNHOST_ASYNC_CALLBACK_TIMEOUT_MS: '10000',
  FNHOST_ASYNC_CALLBACKS_IN_FLIGHT: '2',
};

interface Received {
  path: string;
  method: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** A receiver on 127.0.0.1: records every request; `answer` decides each status (default 200). */
class Receiver {
  readonly received: Received[] = [];
  answer: (n: number, path: string) => number | 'hold' = () => 200;
  readonly #held: ServerResponse[] = [];
  readonly #server: Server;
  port = 0;

  constructor() {
    this.#server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        this.received.push({ path: req.url!, method: req.method!, headers: req.headers, body: Buffer.concat(chunks).toString() });
        const status = this.answer(this.received.length, req.url!);
        if (status === 'hold') {
          this.#held.push(res);
          return;
        }
        res.writeHead(status, status >= 300 && status < 400 ? { location: `http://127.0.0.1:${this.port}/redirected` } : {});
        res.end('receiver says hello');
      });
    });
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    this.port = (this.#server.address() as AddressInfo).port;
    return this;
  }

  at(path: string): Received[] {
    return this.received.filter((r) => r.path === path);
  }

  releaseHeld(): void {
    for (const res of this.#held.splice(0)) if (!res.destroyed) res.writeHead(200).end();
  }

  async stop(): Promise<void> {
    this.releaseHeld();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

/** Opens one address:port to the function's own connections (and so to its callbacks), as the egress tests open loopback. */
async function openTo(gw: RunningGateway, name: string, ...patterns: string[]): Promise<void> {
  const r = await api(gw, 'PUT', `/api/v1/network-policy/functions/${name}`, { default: 'allow', allow: patterns, deny: [] });
  expect(r.status, JSON.stringify(r.body)).to.equal(200);
}

async function post(gw: RunningGateway, fnId: string, callback: string | undefined, body = '{"n":1}') {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (callback !== undefined) headers['x-callback-url'] = callback;
  const r = await fetch(`${gw.url}/async-invoke/${fnId}`, { method: 'POST', headers, body });
  const text = await r.text();
  return { status: r.status, body: text === '' ? undefined : JSON.parse(text) };
}

/** The owner's view of the call once its callback is no longer pending. */
async function settledCallback(gw: RunningGateway, name: string, id: string): Promise<any> {
  return pollUntil(`the callback of ${id} to be delivered or failed`, async () => {
    const r = await api(gw, 'GET', `/api/v1/functions/${name}/async/${id}`);
    const state = r.body?.callback?.state;
    return state === 'delivered' || state === 'failed' ? r.body : undefined;
  }, 60_000, 50);
}

function describeCallbacks(storeName: string, storeEnv: () => Record<string, string>, prepare?: () => Promise<void>, cleanup?: () => Promise<void>) {
  describe(`async callbacks (${storeName})`, function () {
    this.timeout(180_000);
    let gw: RunningGateway;
    let hooks: Receiver;
    let internal: Receiver;
    let env: Record<string, string>;
    /** The data folder a restarted gateway took over (startGateway removes only the folders it made). */
    let adopted: string | undefined;

    before(async () => {
      await prepare?.();
      [hooks, internal] = await Promise.all([new Receiver().start(), new Receiver().start()]);
      env = { ...ENV, ...storeEnv() };
      gw = await startGateway({ token: TOKEN, env });
    });
    after(async () => {
      await gw?.stop();
      if (adopted !== undefined) await rm(adopted, { recursive: true, force: true });
      await hooks?.stop();
      await internal?.stop();
      await cleanup?.();
    });
    beforeEach(() => {
      hooks.received.length = 0;
      internal.received.length = 0;
      hooks.answer = () => 200;
    });

    it('refuses at acceptance (400, nothing stored) a callback the function does not allow: none listed, another host, not http(s), credentials', async () => {
      const none = await create(gw, 'cb-none', `export default (req, res) => res.json({ ran: true })`);
      const r0 = await post(gw, none, `http://127.0.0.1:${hooks.port}/hook`);
      expect(r0.status, JSON.stringify(r0.body)).to.equal(400);
      expect(r0.body.error).to.equal('callback_not_allowed');
      const fnId = await create(gw, 'cb-refuse', `export default (req, res) => res.json({ ran: true })`, { async: { callback_hosts: ['hooks.example.com', '*.example.org'] } });
      const cases: Array<[string, string, string]> = [
        ['http://evil.example.net/hook', 'callback_host_not_allowed', '"evil.example.net"'],
        ['http://example.org/hook', 'callback_host_not_allowed', '"example.org"'],
        ['http://hooks.example.com.evil.net/hook', 'callback_host_not_allowed', 'hooks.example.com.evil.net'],
        ['ftp://hooks.example.com/hook', 'callback_url_invalid', '"ftp:"'],
        ['http://user:secret@hooks.example.com/hook', 'callback_url_invalid', 'credentials'],
        ['hooks.example.com/hook', 'callback_url_invalid', 'not an absolute URL'],
      ];
      for (const [url, code, named] of cases) {
        const r = await post(gw, fnId, url);
        expect(r.status, `${url}: ${JSON.stringify(r.body)}`).to.equal(400);
        expect(r.body.error, url).to.equal(code);
        expect(r.body.message, url).to.include(named);
        expect(r.body.message, url).to.not.include('secret');
      }
      const listed = await api(gw, 'GET', '/api/v1/functions/cb-refuse/async?state=queued,running,succeeded,failed,dead');
      expect(listed.body.calls).to.deep.equal([]);
      const logs = await api(gw, 'GET', '/api/v1/functions/cb-refuse/logs?limit=10');
      expect(logs.body.logs).to.deep.equal([]);
      // A listed host is accepted.
      expect((await post(gw, fnId, 'https://a.example.org/hook?token=t')).status).to.equal(202);
    });

    it('an allowed host gets the final answer by POST: the body as is, the content-type, the async id, attempt, status and state', async () => {
      const fnId = await create(gw, 'cb-ok', `export default (req, res) => res.status(201).type('text/csv').set('x-custom', 'kept').send('a,b\\n' + req.body.n)`, { async: { callback_hosts: [`127.0.0.1:${hooks.port}`] } });
      await openTo(gw, 'cb-ok', `127.0.0.1:${hooks.port}`);
      const r = await post(gw, fnId, `http://127.0.0.1:${hooks.port}/hook?token=receiver-secret`, '{"n":7}');
      expect(r.status, JSON.stringify(r.body)).to.equal(202);
      const call = await settledCallback(gw, 'cb-ok', r.body.async_id);
      expect(call.state).to.equal('succeeded');
      expect(call.callback).to.deep.include({ state: 'delivered', attempts: 1, last_status: 200, last_error: null, url: `http://127.0.0.1:${hooks.port}/hook?…` });
      expect(JSON.stringify(call)).to.not.include('receiver-secret');
      expect(hooks.received).to.have.length(1);
      const got = hooks.received[0]!;
      expect(got.method).to.equal('POST');
      expect(got.path).to.equal('/hook?token=receiver-secret');
      expect(got.body).to.equal('a,b\n7');
      expect(got.headers['content-type']).to.match(/^text\/csv/);
      expect(got.headers).to.include({
        'x-custom': 'kept', 'x-fnhost-async-id': r.body.async_id, 'x-fnhost-attempt': '1', 'x-fnhost-status': '201', 'x-fnhost-state': 'succeeded', 'x-fnhost-function-id': fnId,
        host: `127.0.0.1:${hooks.port}`,
      });
      // The caller's capability URL shows how the callback went, without the owner's error text.
      const pub = await (await fetch(gw.url + r.body.status_url)).json() as any;
      expect(pub.callback).to.deep.include({ state: 'delivered', attempts: 1, last_status: 200 });
      expect(pub.callback).to.not.have.property('last_error');
    });

    it('a receiver that fails first is tried again; a redirect is not followed; one that never takes it leaves the callback failed with the reason', async () => {
      const fnId = await create(gw, 'cb-retry', `export default (req, res) => res.status(req.body.fail ? 500 : 200).json({ n: req.body.n })`, { async: { callback_hosts: [`127.0.0.1:${hooks.port}`], max_retries: 0 } });
      await openTo(gw, 'cb-retry', `127.0.0.1:${hooks.port}`);
      hooks.answer = (n, path) => (path === '/later' ? [500, 302, 200][n - 1] ?? 200 : path === '/never' ? 503 : 200);
      const first = await post(gw, fnId, `http://127.0.0.1:${hooks.port}/later`, '{"n":1}');
      const call = await settledCallback(gw, 'cb-retry', first.body.async_id);
      expect(call.callback).to.deep.include({ state: 'delivered', attempts: 3, last_status: 200 });
      expect(hooks.at('/later')).to.have.length(3);
      expect(hooks.at('/redirected')).to.have.length(0);
      expect(hooks.at('/later').map((r) => r.headers['x-fnhost-async-id'])).to.deep.equal([first.body.async_id, first.body.async_id, first.body.async_id]);

      hooks.received.length = 0;
      // A dead call's answer goes too (x-fnhost-state dead), and a receiver answering 503 three times leaves it failed.
      const second = await post(gw, fnId, `http://127.0.0.1:${hooks.port}/never`, '{"n":2,"fail":true}');
      const dead = await settledCallback(gw, 'cb-retry', second.body.async_id);
      expect(dead.state).to.equal('dead');
      expect(dead.callback).to.deep.include({ state: 'failed', attempts: 3, last_status: 503, last_error: 'answered 503' });
      expect(hooks.at('/never')).to.have.length(3);
      expect(hooks.at('/never')[0]!.headers).to.include({ 'x-fnhost-state': 'dead', 'x-fnhost-status': '500', 'x-fnhost-dead-reason': 'retries_exhausted' });
      expect(JSON.parse(hooks.at('/never')[0]!.body)).to.deep.equal({ n: 2 });
      // function:async lists it with the callback's state.
      const listed = await api(gw, 'GET', '/api/v1/functions/cb-retry/async?state=dead');
      expect(listed.body.calls.map((c: any) => c.callback?.state)).to.deep.equal(['failed']);
      // Requeued, the call ends (dead) again, and its callback is tried afresh: the receiver now takes it.
      hooks.answer = () => 200;
      hooks.received.length = 0;
      expect((await api(gw, 'POST', '/api/v1/functions/cb-retry/dead-letters/retry', { ids: [second.body.async_id] })).body.requeued).to.equal(1);
      const again = await pollUntil('the requeued call\'s callback delivered', async () => {
        const r = await api(gw, 'GET', `/api/v1/functions/cb-retry/async/${second.body.async_id}`);
        return r.body.state === 'dead' && r.body.callback?.state === 'delivered' ? r.body : undefined;
      }, 60_000, 50);
      expect(again.callback).to.deep.include({ attempts: 1, last_status: 200, last_error: null });
      expect(hooks.at('/never')).to.have.length(1);
    });

    it('a callback whose gateway was killed while delivering it is taken over by the next gateway, from the answer stored on the call', async () => {
      const fnId = await create(gw, 'cb-orphan', `export default (req, res) => res.status(202).send('kept ' + req.body.n)`, { async: { callback_hosts: [`127.0.0.1:${hooks.port}`] } });
      await openTo(gw, 'cb-orphan', `127.0.0.1:${hooks.port}`);
      hooks.answer = (_n, path) => (path === '/orphan' ? 'hold' : 200);
      const r = await post(gw, fnId, `http://127.0.0.1:${hooks.port}/orphan`, '{"n":5}');
      await pollUntil('the first POST at the receiver', async () => (hooks.at('/orphan').length > 0 ? true : undefined), 60_000, 20);
      const exited = new Promise((resolve) => gw.process.once('exit', resolve));
      gw.process.kill('SIGKILL');
      await exited;
      const dataDir = gw.dataDir;
      adopted = dataDir;
      hooks.answer = () => 200;
      hooks.releaseHeld();
      gw = await startGateway({ token: TOKEN, env, dataDir, startTimeoutMs: 90_000 });
      // Its lease (two tries' time and two backoffs: about 20 s here) passes, then the new gateway's sender takes it.
      const call = await settledCallback(gw, 'cb-orphan', r.body.async_id);
      expect(call.callback).to.deep.include({ state: 'delivered', attempts: 1, last_status: 200 });
      const posts = hooks.at('/orphan');
      expect(posts.length).to.be.at.least(2);
      const last = posts.at(-1)!;
      expect(last.body).to.equal('kept 5');
      expect(last.headers).to.include({ 'x-fnhost-async-id': r.body.async_id, 'x-fnhost-state': 'succeeded', 'x-fnhost-status': '202', 'x-fnhost-attempt': '1' });
    });

    it('attack: a callback to a protected address (a loopback service no rule names, 169.254.169.254, the gateway\'s admin listener) is never sent', async () => {
      const adminPort = Number(new URL(gw.adminUrl).port);
      const fnId = await create(gw, 'cb-attack', `export default (req, res) => res.json({ ok: true })`, {
        async: { callback_hosts: [`127.0.0.1:${internal.port}`, `localhost:${internal.port}`, '169.254.169.254', `127.0.0.1:${adminPort}`] },
      });
      // The function may reach the admin port by its policy: the platform's own listeners stay closed all the same.
      await openTo(gw, 'cb-attack', `127.0.0.1:${adminPort}`);
      const targets: Array<[string, string]> = [
        [`http://127.0.0.1:${internal.port}/steal`, '(global rule host)'],
        [`http://localhost:${internal.port}/steal`, 'it resolves to'],
        ['http://169.254.169.254/latest/meta-data/', '(global rule protected)'],
        [`http://127.0.0.1:${adminPort}/admin/api/v1/session`, "the platform's own listener"],
      ];
      for (const [url, why] of targets) {
        const r = await post(gw, fnId, url);
        expect(r.status, JSON.stringify(r.body)).to.equal(202);
        const call = await settledCallback(gw, 'cb-attack', r.body.async_id);
        expect(call.callback.state, url).to.equal('failed');
        // Refused by the policy: final at the first try, nothing sent.
        expect(call.callback.attempts, url).to.equal(1);
        expect(call.callback.last_status, url).to.equal(null);
        expect(call.callback.last_error, url).to.include('not sent').and.include('blocked by network policy').and.include(why);
      }
      expect(internal.received, 'requests that reached the loopback service').to.deep.equal([]);
    });

    it('bounds the callbacks in flight: past the bound one is not sent, marked failed, counted and logged', async () => {
      const fnId = await create(gw, 'cb-bound', `export default (req, res) => res.json({ n: req.body.n })`, { async: { callback_hosts: [`127.0.0.1:${hooks.port}`] } });
      await openTo(gw, 'cb-bound', `127.0.0.1:${hooks.port}`);
      // The receiver holds every POST open (each try ends at the 10 s time limit): two callbacks fill the bound.
      hooks.answer = () => 'hold';
      const ids: string[] = [];
      for (let n = 0; n < 5; n++) ids.push((await post(gw, fnId, `http://127.0.0.1:${hooks.port}/slow`, `{"n":${n}}`)).body.async_id);
      const refused = await pollUntil('a callback refused at the bound', async () => {
        for (const id of ids) {
          const r = await api(gw, 'GET', `/api/v1/functions/cb-bound/async/${id}`);
          if (r.body.callback?.state === 'failed') return r.body;
        }
        return undefined;
      }, 60_000, 50);
      expect(refused.callback.last_error).to.include('not sent: 2 callbacks were in flight on this gateway');
      expect(refused.callback.attempts).to.equal(0);
      expect(hooks.at('/slow').length).to.be.at.most(2 * 3);
      const metrics = await (await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text();
      expect(metrics).to.match(/fnhost_refused_total\{reason="async_callbacks_in_flight"\} [1-9]/);
      expect(metrics).to.match(/fnhost_async_callbacks_in_flight [0-2]\n/);
      expect(gw.output()).to.include('an async callback was not sent: the gateway had its bound of callbacks in flight');
      hooks.answer = () => 200;
      hooks.releaseHeld();
      // Those in flight are then delivered.
      const delivered = await pollUntil('the callbacks in flight to be delivered', async () => {
        let n = 0;
        for (const id of ids) if ((await api(gw, 'GET', `/api/v1/functions/cb-bound/async/${id}`)).body.callback?.state === 'delivered') n++;
        return n >= 1 ? n : undefined;
      }, 60_000, 100);
      expect(delivered).to.be.at.least(1);
    });
  });
}

describeCallbacks('SQLite', () => ({}));

let mongo: MongoTestServer | undefined;
describeCallbacks('MongoDB', () => ({ MONGODB_URL: databaseUrl(mongo!, 'fnhost_async_cb') }), async () => {
  mongo = await startMongoServer();
}, async () => {
  await mongo?.stop();
});
