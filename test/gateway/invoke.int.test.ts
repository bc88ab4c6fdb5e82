import { expect } from 'chai';
import { request } from 'node:http';
import { startHarness, waitFor, type Harness } from './harness.ts';

describe('gateway invocation (in-process gateway, real SQLite, real runtimes)', function () {
  this.timeout(60_000);
  let h: Harness;
  before(async () => {
    h = await startHarness();
  });
  after(async () => {
    await h?.close();
  });

  it('passes every method, headers (Authorization too), query and sub-path to the handler, and strips x-fnhost-*', async () => {
    const fn = await h.createFunction('echo', `export default (req, res) => { res.set('x-custom', 'yes'); res.json({ method: req.method, path: req.path, query: req.query, auth: req.headers.authorization, custom: req.headers['x-custom-header'], body: req.body, xff: req.headers['x-forwarded-for'], spoof: req.headers['x-fnhost-trigger'] }); }`);
    for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']) {
      const hasBody = method !== 'GET' && method !== 'OPTIONS';
      const r = await h.invoke(fn.function_id, '/users/42?a=1&b=two', {
        method,
        headers: { authorization: 'Bearer user-token', 'x-custom-header': 'c', 'x-forwarded-for': '6.6.6.6', ...(hasBody ? { 'content-type': 'application/json' } : {}) },
        body: hasBody ? JSON.stringify([1, { two: 2 }]) : undefined,
      });
      expect(r.status, method).to.equal(200);
      expect(r.headers.get('x-custom')).to.equal('yes');
      r.headers.forEach((_value, name) => expect(name.startsWith('x-fnhost-'), name).to.equal(false));
      const body = await r.json();
      expect(body.method).to.equal(method);
      expect(body.path).to.equal('/users/42');
      expect(body.query).to.deep.equal({ a: '1', b: 'two' });
      expect(body.auth).to.equal('Bearer user-token');
      expect(body.custom).to.equal('c');
      if (hasBody) expect(body.body).to.deep.equal([1, { two: 2 }]);
      // A client-sent X-Forwarded-For is not trusted by default.
      expect(body.xff).to.equal('127.0.0.1');
    }
    const bare = await h.invoke(fn.function_id, '?only=query');
    expect((await bare.json()).path).to.equal('/');
    const logs = await h.logs('echo');
    expect(logs.pagination.totalCount).to.equal(7);
    expect(logs.logs[0]).to.include({ function_id: fn.function_id, status_code: 200, error_message: null, trigger: 'http' });
    expect(logs.logs[0].id).to.match(/^log_/);
    expect(logs.logs[0].executed_at).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(Number.isInteger(logs.logs[0].execution_time_ms)).to.equal(true);
  });

  it('JSON bodies of every shape reach req.body parsed, unchanged by the gateway', async () => {
    const fn = await h.createFunction('shapes', 'export default (req, res) => res.json({ body: req.body, type: req.body === null ? "null" : typeof req.body })');
    for (const value of [{ a: [1, { b: null }] }, [1, 'two'], 'text', 42, true, null]) {
      const r = await h.invoke(fn.function_id, '', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(value) });
      expect(await r.json(), JSON.stringify(value)).to.deep.equal({ body: value, type: value === null ? 'null' : typeof value });
    }
  });

  it('answers 404 JSON for an unknown function and 403 function_inactive for an inactive one', async () => {
    const r = await h.invoke('00000000-0000-4000-8000-000000000000');
    expect(r.status).to.equal(404);
    expect(await r.json()).to.deep.include({ error: 'not_found' });
    const fn = await h.createFunction('sleepy', 'export default (req, res) => res.json({ ok: true })', { active: false });
    const inactive = await h.invoke(fn.function_id);
    expect(inactive.status).to.equal(403);
    expect((await inactive.json()).error).to.equal('function_inactive');
    // function:test is refused the same way, and neither attempt is an execution.
    const test = await h.api('POST', '/api/v1/functions/sleepy/test');
    expect(test.status).to.equal(403);
    expect(test.body).to.deep.equal({ error: 'function_inactive', message: 'function sleepy is inactive; activate it to invoke it' });
    expect((await h.logs('sleepy')).logs).to.deep.equal([]);
    expect((await h.api('GET', '/api/v1/functions/sleepy')).body.total_executions).to.equal(0);
    const on = await h.api('POST', '/api/v1/functions/sleepy/activate');
    expect(on.body.active).to.equal(true);
    expect((await h.invoke(fn.function_id)).status).to.equal(200);
  });

  it('refuses bodies over the limit with 413, counting bytes even without Content-Length', async () => {
    const fn = await h.createFunction('sink', 'export default (req, res) => res.json({ n: JSON.stringify(req.body ?? null).length })');
    const send = (headers: Record<string, string>, chunks: number) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = request(`${h.url}/invoke/${fn.function_id}`, { method: 'POST', headers }, (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (body += c));
          res.on('end', () => resolve({ status: res.statusCode!, body }));
        });
        req.on('error', reject);
        const chunk = Buffer.alloc(1024 * 1024, 97);
        let sent = 0;
        const pump = () => {
          while (sent < chunks) {
            sent++;
            if (!req.write(chunk)) return void req.once('drain', pump);
          }
          req.end();
        };
        pump();
      });
    // Content-Length above the limit: refused before anything is read.
    const declared = await new Promise<number>((resolve, reject) => {
      const req = request(`${h.url}/invoke/${fn.function_id}`, { method: 'POST', headers: { 'content-length': String(7 * 1024 * 1024) } }, (res) => {
        res.resume();
        resolve(res.statusCode!);
        req.destroy();
      });
      req.on('error', (err) => (err.message.includes('socket hang up') ? undefined : reject(err)));
      req.flushHeaders();
    });
    expect(declared).to.equal(413);
    // Chunked, no Content-Length: counted as it streams.
    const chunked = await send({ 'content-type': 'application/octet-stream', 'transfer-encoding': 'chunked' }, 8);
    expect(chunked.status).to.equal(413);
    expect(JSON.parse(chunked.body).error).to.equal('payload_too_large');
    const ok = await h.invoke(fn.function_id, '', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ a: 'b' }) });
    expect(ok.status).to.equal(200);
  });

  it('records error_message for a throw, and for a 500 answered without throwing (message member, else its text)', async () => {
    const thrower = await h.createFunction('thrower', 'export default () => { null.x; }');
    const r1 = await h.invoke(thrower.function_id);
    expect(r1.status).to.equal(500);
    const quiet = await h.createFunction('quiet500', `export default (req, res) => { if (req.query.kind === 'json') res.status(500).json({ error: 'db', message: 'database down' }); else if (req.query.kind === 'err') res.status(500).json({ error: 'only error' }); else { res.status(500); res.end('plain'); } }`);
    expect((await h.invoke(quiet.function_id, '?kind=json')).status).to.equal(500);
    expect((await h.invoke(quiet.function_id, '?kind=err')).status).to.equal(500);
    expect((await h.invoke(quiet.function_id, '?kind=text')).status).to.equal(500);
    const t = await h.logs('thrower');
    expect(t.logs[0].status_code).to.equal(500);
    expect(t.logs[0].error_message).to.match(/null|reading 'x'/);
    const q = await h.logs('quiet500');
    expect(q.logs.map((l: { error_message: string }) => l.error_message)).to.deep.equal(['plain', 'only error', 'database down']);
  });

  it('streams large responses, survives a client disconnecting mid-stream, and still logs it', async () => {
    const fn = await h.createFunction('streamer', `export default async (req, res) => { res.type('text/plain'); for (let i = 0; i < 200; i++) { res.write('x'.repeat(64 * 1024)); await new Promise((r) => setTimeout(r, 5)); } res.end(); }`);
    // Full read first.
    const full = await h.invoke(fn.function_id);
    expect((await full.arrayBuffer()).byteLength).to.equal(200 * 64 * 1024);
    // Now read a little and hang up.
    await new Promise<void>((resolve, reject) => {
      const req = request(`${h.url}/invoke/${fn.function_id}`, (res) => {
        res.once('data', () => {
          req.destroy();
          resolve();
        });
      });
      req.on('error', () => undefined);
      req.end();
      setTimeout(() => reject(new Error('no data')), 20_000);
    });
    const logs = await waitFor(async () => {
      const l = await h.logs('streamer');
      return l.pagination.totalCount === 2 ? l : undefined;
    }, 'the aborted call to be logged');
    expect(logs.logs[0].error_message).to.match(/client disconnected/);
    // The gateway is still serving.
    expect((await h.invoke(fn.function_id)).status).to.equal(200);
  });

  it('logs an execution whose caller left before the answer came', async () => {
    const fn = await h.createFunction('slowpoke', `export default async (req, res) => { await new Promise((r) => setTimeout(r, 300)); res.status(201).json({ done: true }); }`);
    // The caller leaves once its call reached the function (the gateway counts it in flight), not
    // after a fixed 50 ms: on a loaded machine the request had not reached the gateway by then, and
    // nothing ran or was logged (two busy loops per core, load average 26).
    const before = h.platform.invoker.inflight;
    await new Promise<void>((resolve, reject) => {
      const req = request(`${h.url}/invoke/${fn.function_id}`);
      req.on('error', () => resolve());
      req.end();
      waitFor(() => h.platform.invoker.inflight > before, 'the call to reach the function').then(() => req.destroy(), reject);
    });
    const logs = await waitFor(async () => {
      const l = await h.logs('slowpoke');
      return l.pagination.totalCount === 1 ? l : undefined;
    }, 'the abandoned call to be logged');
    expect(logs.logs[0].status_code).to.equal(201);
  });

  it('trusts nothing, and measures execution_time_ms until the response ended for a handler that answers early', async () => {
    // The deferred work lasts 8 s; the answer and its record must not wait for
    // it. The margin is wide so that a loaded machine cannot blur the two.
    const fn = await h.createFunction('early', `export default async (req, res) => { res.status(202).json({ accepted: true }); if (!req.query.warm) await new Promise((r) => setTimeout(r, 8000)); }`);
    expect((await h.invoke(fn.function_id, '?warm=1')).status).to.equal(202); // the runtime is started
    const started = Date.now();
    const r = await h.invoke(fn.function_id, '', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(r.status).to.equal(202);
    await r.json();
    expect(Date.now() - started).to.be.below(6000);
    const logs = await waitFor(async () => {
      const l = await h.logs('early');
      return l.pagination.totalCount === 2 ? l : undefined;
    }, 'both calls to be logged');
    expect(logs.logs[0].status_code).to.equal(202);
    expect(logs.logs[0].execution_time_ms).to.be.below(6000);
  });
});
