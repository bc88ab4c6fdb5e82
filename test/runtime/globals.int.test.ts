import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import { startInternalService, type InternalService } from './helpers/internal-service.ts';
import { eventually, startRuntime, type RunningRuntime } from './helpers/runtime.ts';

// The handler's globals: kv and fetch over the internal API (a real in-memory stand-in here),
// console tagged per call, crypto.randomUUID and process.
const CODE = `
export default async function handler(req, res) {
  const b = req.body ?? {};
  switch (req.path) {
    case '/kv': {
      const out = {};
      await kv.set('user:1', { name: 'Ada', tags: ['x'] });
      await kv.set('user:2', 'two');
      await kv.set('other', 3);
      out.get = await kv.get('user:1');
      out.missing = typeof (await kv.get('nope'));
      out.has = await kv.has('user:2');
      out.hasNot = await kv.has('nope');
      out.list = await kv.list('user:');
      out.deleted = await kv.delete('user:2');
      out.deletedAgain = await kv.delete('user:2');
      out.after = await kv.list('user:');
      out.all = await kv.list();
      return res.json(out);
    }
    case '/kv-set': await kv.set(b.key, b.value, b.ttl); return res.json({ ok: true });
    case '/kv-get': return res.json({ value: await kv.get(req.query.key) ?? null, has: await kv.has(req.query.key) });
    case '/kv-bad': {
      const errors = [];
      for (const f of [() => kv.set('', 1), () => kv.set('k'.repeat(513), 1), () => kv.set('k', undefined), () => kv.set('k', 'v'.repeat(300000)), () => kv.set('k', 1, 0), () => kv.set('k', 1, 1.5), () => kv.get(42)]) {
        try { await f(); errors.push('no error'); } catch (e) { errors.push(e.message); }
      }
      return res.json(errors);
    }
    case '/fetch': {
      try {
        const r = await fetch(b.url);
        return res.json({ status: r.status, text: await r.text() });
      } catch (e) {
        return res.json({ error: e.message, name: e.name });
      }
    }
    case '/console': {
      console.log('plain', { a: 1, nested: { deep: [1, 2] } });
      console.info('info %s=%d', 'n', 5);
      console.warn('warned');
      console.error(new Error('logged error'));
      console.debug('two\\nlines');
      return res.end();
    }
    case '/console-concurrent': {
      await new Promise((r) => setTimeout(r, Number(req.query.wait)));
      console.log('concurrent', req.query.n);
      return res.end();
    }
    case '/process': return res.json({ env: process.env, version: process.version, platform: process.platform, arch: process.arch, cwd: process.cwd(), uuid: crypto.randomUUID() });
  }
}`;

describe('runtime: globals', function () {
  let rt: RunningRuntime;
  let svc: InternalService;
  let target: Server;
  let targetUrl: string;
  before(async () => {
    svc = await startInternalService();
    target = createServer((req, res) => {
      if (req.url === '/redirect-out') return res.writeHead(302, { location: 'http://blocked.example/x' }).end();
      if (req.url === '/redirect-in') return res.writeHead(302, { location: '/hello' }).end();
      res.end('hello from the target');
    });
    await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
    targetUrl = `http://127.0.0.1:${(target.address() as { port: number }).port}`;
    rt = await startRuntime({ code: CODE, gatewayUrl: svc.url, token: svc.token, name: 'globalsfn', env: { LOG_LEVEL: 'debug', GREETING: 'hi' } });
  });
  after(async () => {
    await rt?.stop();
    await svc?.close();
    await new Promise<void>((r) => target?.close(() => r()));
  });

  const post = async (path: string, body: unknown) => {
    const res = await fetch(rt.url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect(res.status, await res.clone().text()).to.equal(200);
    return (await res.json()) as Record<string, unknown>;
  };

  describe('kv', () => {
    it('set/get/has/delete/list over the internal API with the runtime token', async () => {
      const res = await fetch(rt.url + '/kv');
      expect(res.status).to.equal(200);
      expect(await res.json()).to.deep.equal({
        get: { name: 'Ada', tags: ['x'] },
        missing: 'undefined',
        has: true,
        hasNot: false,
        list: ['user:1', 'user:2'],
        deleted: true,
        deletedAgain: false,
        after: ['user:1'],
        all: ['other', 'user:1'],
      });
      expect(svc.requests).to.include('PUT /internal/v1/kv/user%3A1');
      expect(svc.requests).to.include('GET /internal/v1/kv?prefix=user%3A');
    });

    it('a key stored with a TTL disappears when it expires', async () => {
      // 3 s, not 1: the first kv call of a worker loads fetch (undici), and on a loaded machine the
      // set and the first read may take over a second between them.
      await post('/kv-set', { key: 'short', value: { v: 1 }, ttl: 3 });
      await post('/kv-set', { key: 'long', value: 'stays' });
      expect(await (await fetch(rt.url + '/kv-get?key=short')).json()).to.deep.equal({ value: { v: 1 }, has: true });
      await eventually(async () => {
        const r = (await (await fetch(rt.url + '/kv-get?key=short')).json()) as { value: unknown; has: boolean };
        // get and has are two calls: at the expiry instant the first may still see the key.
        return r.has || r.value !== null ? undefined : r;
      }, 'the TTL to expire', 15_000).then((r) => expect(r).to.deep.equal({ value: null, has: false }));
      expect(await (await fetch(rt.url + '/kv-get?key=long')).json()).to.deep.equal({ value: 'stays', has: true });
    });

    it('validates key, value and TTL locally with errors that name the problem', async () => {
      const before = svc.requests.length;
      const errors = (await (await fetch(rt.url + '/kv-bad')).json()) as string[];
      expect(errors).to.have.length(7);
      expect(errors[0]).to.equal('kv.set: the key must be a non-empty string, got ""');
      expect(errors[1]).to.match(/the key "k+…" is 513 bytes; the limit is 512 bytes/);
      expect(errors[2]).to.equal('kv.set("k"): the value must be JSON-serialisable, got undefined');
      expect(errors[3]).to.match(/the value is 300002 bytes as JSON; the limit is 262144 bytes/);
      expect(errors[4]).to.equal('kv.set("k"): ttlSeconds must be an integer from 1 to 31536000, got 0');
      expect(errors[5]).to.equal('kv.set("k"): ttlSeconds must be an integer from 1 to 31536000, got 1.5');
      expect(errors[6]).to.equal('kv.get: the key must be a non-empty string, got number');
      expect(svc.requests.length, 'nothing reached the service').to.equal(before);
    });
  });

  describe('fetch', () => {
    afterEach(() => svc.deny.clear());

    it('reaches an allowed host, after asking the policy check about the host and its address', async () => {
      const r = await post('/fetch', { url: targetUrl + '/hello' });
      expect(r).to.deep.equal({ status: 200, text: 'hello from the target' });
      const port = new URL(targetUrl).port;
      expect(svc.requests).to.include(`GET /internal/v1/policy/check?host=127.0.0.1&port=${port}`);
      const viaName = await post('/fetch', { url: `http://localhost:${port}/hello` });
      expect(viaName).to.deep.equal({ status: 200, text: 'hello from the target' });
      expect(svc.requests).to.include(`GET /internal/v1/policy/check?host=localhost&port=${port}`);
    });

    it('a denied host throws an Error naming the host and the rule', async () => {
      svc.deny.set('blocked.example', '*.example');
      expect(await post('/fetch', { url: 'http://blocked.example/data' })).to.deep.equal({ error: 'fetch to blocked.example blocked by network policy (global rule *.example)', name: 'PolicyBlockedError' });
    });

    it('a name that resolves to a denied address is refused too', async () => {
      svc.deny.set('127.0.0.1', '127.0.0.0/8');
      const port = new URL(targetUrl).port;
      const r = await post('/fetch', { url: `http://localhost:${port}/hello` });
      expect(r.error).to.equal('fetch to localhost blocked by network policy: it resolves to 127.0.0.1 (global rule 127.0.0.0/8)');
      const direct = await post('/fetch', { url: `${targetUrl}/hello` });
      expect(direct.error).to.equal('fetch to 127.0.0.1 blocked by network policy (global rule 127.0.0.0/8)');
    });

    it('each redirect hop is checked: a redirect to a denied host is refused, one to an allowed path followed', async () => {
      svc.deny.set('blocked.example', 'blocked.example');
      expect((await post('/fetch', { url: targetUrl + '/redirect-out' })).error).to.equal('fetch to blocked.example blocked by network policy (global rule blocked.example)');
      expect(await post('/fetch', { url: targetUrl + '/redirect-in' })).to.deep.equal({ status: 200, text: 'hello from the target' });
    });
  });

  describe('console', () => {
    it('tags every line with the function name and the execution id; formats like util.format', async () => {
      await fetch(rt.url + '/console', { headers: { 'x-fnhost-execution-id': 'log_console1' } });
      // stdout (log, info, debug) and stderr (warn, error) are two pipes: wait for each line.
      const esc = (t: string) => new RegExp('^' + t.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') + '$');
      for (const line of [
        '[globalsfn log_console1] plain { a: 1, nested: { deep: [ 1, 2 ] } }',
        '[globalsfn log_console1] info n=5',
        '[globalsfn log_console1] warned',
        '[globalsfn log_console1] Error: logged error',
        '[globalsfn log_console1] two',
        '[globalsfn log_console1] lines',
      ]) {
        await rt.waitForLine(esc(line));
      }
      const mine = rt.lines.filter((l) => l.startsWith('[globalsfn log_console1] '));
      expect(mine.some((l) => /^\[globalsfn log_console1\]\s+at /.test(l)), 'the stack lines are tagged too').to.equal(true);
    });

    it('keeps the tags apart for calls that run at the same time', async () => {
      await Promise.all([
        fetch(rt.url + '/console-concurrent?n=A&wait=60', { headers: { 'x-fnhost-execution-id': 'log_A' } }),
        fetch(rt.url + '/console-concurrent?n=B&wait=10', { headers: { 'x-fnhost-execution-id': 'log_B' } }),
      ]);
      await rt.waitForLine(/concurrent A/);
      await rt.waitForLine(/concurrent B/);
      expect(rt.lines).to.include('[globalsfn log_A] concurrent A');
      expect(rt.lines).to.include('[globalsfn log_B] concurrent B');
    });
  });

  it('process.env is the function env without FNHOST_* or the runtime PORT/HOST; version, platform, arch, cwd(); crypto.randomUUID()', async () => {
    const r = (await (await fetch(rt.url + '/process')).json()) as { env: Record<string, string>; version: string; platform: string; arch: string; cwd: string; uuid: string };
    expect(r.env).to.include({ LOG_LEVEL: 'debug', GREETING: 'hi' });
    expect(Object.keys(r.env).filter((k) => k.startsWith('FNHOST_') || k === 'PORT' || k === 'HOST')).to.deep.equal([]);
    expect(r.version).to.equal(process.version);
    expect(r).to.include({ platform: process.platform, arch: process.arch });
    expect(r.cwd).to.be.a('string').and.not.equal('');
    expect(r.uuid).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});
