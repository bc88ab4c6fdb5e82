import { expect } from 'chai';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { startInternalService, type InternalService } from './helpers/internal-service.ts';
import { eventually, startRuntime, type RunningRuntime } from './helpers/runtime.ts';

// Every `res` method, streaming chunk by chunk, and an early answer whose deferred work finishes.
const CODE = `
export default async function handler(req, res) {
  switch (req.path) {
    case '/json': return res.status(201).json({ ok: true, list: [1, 2] });
    case '/json-null': return res.json(null);
    case '/set': return res.set('X-One', '1').set({ 'X-Two': 'two', 'X-Many': ['a', 'b'] }).header('X-Three', 3).type('text').end('typed');
    case '/type-json': return res.type('json').end('{"raw":true}');
    case '/type-mime': return res.type('image/svg+xml').end('<svg/>');
    case '/get-headers': res.set('X-A', 'a').type('html'); return res.json({ headers: res.getHeaders(), getA: res.get('x-a'), sent: res.headersSent, code: res.statusCode });
    case '/send-string': return res.send('<b>hi</b>');
    case '/send-buffer': return res.send(Buffer.from([1, 2, 3]));
    case '/send-object': return res.status(418).send({ teapot: true });
    case '/send-status': return res.sendStatus(404);
    case '/redirect': return res.redirect('/elsewhere');
    case '/redirect-301': return res.redirect(301, 'https://example.com/');
    case '/status-property': res.statusCode = 409; return res.end();
    case '/write-end': res.status(200); res.write('a'); res.write(Buffer.from('b')); return res.end('c');
    case '/headers-sent': { res.write('x'); let err; try { res.set('X-Late', '1'); } catch (e) { err = e.message; } return res.end(JSON.stringify({ sent: res.headersSent, err })); }
    case '/cookie': return res.cookie('sid', 'a b', { httpOnly: true, maxAge: 60000 }).cookie('t', '1').end();
    case '/no-content': return res.status(204).end();
    case '/handler-500': return res.status(500).json({ message: 'my own failure' });
    case '/handler-422': return res.status(422).json({ error: 'bad_input' });
    case '/stream': {
      res.set('Content-Type', 'text/plain');
      res.write('first;');
      while (!(await kv.get('go'))) await new Promise((r) => setTimeout(r, 10));
      res.write('second;');
      return res.end('third');
    }
    case '/early': {
      res.status(202).json({ accepted: true });
      await new Promise((r) => setTimeout(r, 300));
      await kv.set('deferred', { finishedAt: Date.now(), answeredFirst: res.headersSent });
      return;
    }
    default: return res.status(404).json({ error: 'no such case', path: req.path });
  }
}`;

describe('runtime: res', function () {
  let rt: RunningRuntime;
  let svc: InternalService;
  before(async () => {
    svc = await startInternalService();
    rt = await startRuntime({ code: CODE, gatewayUrl: svc.url, token: svc.token });
  });
  after(async () => {
    await rt?.stop();
    await svc?.close();
  });

  const get = (path: string) => fetch(rt.url + path, { redirect: 'manual' });

  it('json(value) with status(code) chained', async () => {
    const res = await get('/json');
    expect(res.status).to.equal(201);
    expect(res.headers.get('content-type')).to.equal('application/json; charset=utf-8');
    expect(await res.json()).to.deep.equal({ ok: true, list: [1, 2] });
    expect(await (await get('/json-null')).text()).to.equal('null');
  });

  it('set(name, value), set(object), header(), type(): all reach the client', async () => {
    const res = await get('/set');
    expect(res.headers.get('x-one')).to.equal('1');
    expect(res.headers.get('x-two')).to.equal('two');
    expect(res.headers.get('x-many')).to.equal('a, b');
    expect(res.headers.get('x-three')).to.equal('3');
    expect(res.headers.get('content-type')).to.equal('text/plain; charset=utf-8');
    expect(await res.text()).to.equal('typed');
    expect((await get('/type-json')).headers.get('content-type')).to.equal('application/json; charset=utf-8');
    expect((await get('/type-mime')).headers.get('content-type')).to.equal('image/svg+xml');
  });

  it('getHeaders(), get(), headersSent and statusCode', async () => {
    const body = (await (await get('/get-headers')).json()) as Record<string, unknown>;
    expect(body).to.deep.equal({ headers: { 'x-a': 'a', 'content-type': 'text/html; charset=utf-8' }, getA: 'a', sent: false, code: 200 });
    expect((await get('/status-property')).status).to.equal(409);
    expect(await (await get('/headers-sent')).text()).to.equal('x' + JSON.stringify({ sent: true, err: 'res.setHeader("X-Late"): cannot set headers after they are sent to the client' }));
  });

  it('send(): string as HTML, Buffer as octet-stream, object as JSON; sendStatus()', async () => {
    const s = await get('/send-string');
    expect(s.headers.get('content-type')).to.equal('text/html; charset=utf-8');
    expect(await s.text()).to.equal('<b>hi</b>');
    const b = await get('/send-buffer');
    expect(b.headers.get('content-type')).to.equal('application/octet-stream');
    expect([...new Uint8Array(await b.arrayBuffer())]).to.deep.equal([1, 2, 3]);
    const o = await get('/send-object');
    expect(o.status).to.equal(418);
    expect(await o.json()).to.deep.equal({ teapot: true });
    const st = await get('/send-status');
    expect(st.status).to.equal(404);
    expect(await st.text()).to.equal('Not Found');
  });

  it('redirect() with the default 302 and an explicit status', async () => {
    const r = await get('/redirect');
    expect(r.status).to.equal(302);
    expect(r.headers.get('location')).to.equal('/elsewhere');
    const p = await get('/redirect-301');
    expect(p.status).to.equal(301);
    expect(p.headers.get('location')).to.equal('https://example.com/');
  });

  it('write() then end() concatenates; cookie() sets Set-Cookie; 204 has no body', async () => {
    expect(await (await get('/write-end')).text()).to.equal('abc');
    const c = await get('/cookie');
    expect(c.headers.getSetCookie()).to.have.length(2);
    expect(c.headers.getSetCookie()[0]).to.match(/^sid=a%20b; Max-Age=60; Path=\/; Expires=.+; HttpOnly$/);
    const n = await get('/no-content');
    expect(n.status).to.equal(204);
    expect(await n.text()).to.equal('');
  });

  it("passes the handler's own 4xx and 5xx through unchanged, without runtime error headers", async () => {
    const five = await get('/handler-500');
    expect(five.status).to.equal(500);
    expect(five.headers.get('x-fnhost-error-kind')).to.equal(null);
    expect(await five.json()).to.deep.equal({ message: 'my own failure' });
    const four = await get('/handler-422');
    expect(four.status).to.equal(422);
    expect(await four.json()).to.deep.equal({ error: 'bad_input' });
  });

  it('streams write() chunks to the client as they are written, not buffered until end()', async () => {
    svc.kv.delete('go');
    const res = await new Promise<IncomingMessage>((resolve, reject) => httpRequest(rt.url + '/stream', resolve).on('error', reject).end());
    expect(res.statusCode).to.equal(200);
    expect(res.headers['transfer-encoding']).to.equal('chunked');
    res.setEncoding('utf8');
    const iterator = res[Symbol.asyncIterator]();
    // The handler is waiting for "go" now: what arrives first was sent before the end.
    const first = (await iterator.next()).value as string;
    expect(first).to.equal('first;');
    svc.kv.set('go', { json: 'true', expiresAt: null });
    let rest = '';
    for (let r = await iterator.next(); !r.done; r = await iterator.next()) rest += r.value as string;
    expect(rest).to.equal('second;third');
  });

  it('an early 202 reaches the caller at once and the deferred work still runs to completion', async () => {
    svc.kv.delete('deferred');
    const res = await get('/early');
    expect(res.status).to.equal(202);
    expect(await res.json()).to.deep.equal({ accepted: true });
    expect(svc.kv.has('deferred'), 'answered before the deferred work finished').to.equal(false);
    const entry = await eventually(() => svc.kv.get('deferred'), 'the deferred kv.set');
    expect(JSON.parse(entry.json)).to.have.property('answeredFirst', true);
  });
});
