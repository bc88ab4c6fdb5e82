import { expect } from 'chai';
import { request, type IncomingHttpHeaders } from 'node:http';
import { connect } from 'node:net';
import { startHarness, type Harness } from './harness.ts';
import { SESSION_COOKIE } from '../../gateway/src/admin/session.ts';

// The invocation path as an anonymous caller would attack it: framing and
// headers the caller chooses must not recycle a runtime, break another
// caller's call, or reach the handler as facts the platform vouches for.

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  /** Did the gateway answer `100 Continue` before the body was sent? */
  continued: boolean;
}

/** A POST as curl sends a body over 1 MiB: `Expect: 100-continue`, the body only after the interim 100. */
function postExpectingContinue(url: string, body: Buffer): Promise<Answer> {
  return new Promise((resolve, reject) => {
    let continued = false;
    const req = request(url, { method: 'POST', headers: { expect: '100-continue', 'content-type': 'application/octet-stream', 'content-length': body.length } });
    req.on('continue', () => {
      continued = true;
      req.end(body);
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks).toString('utf8'), continued }));
      res.on('error', reject);
    });
    req.on('error', reject);
  });
}

/** One raw HTTP/1.1 exchange, for framing fetch would not send; the final response, after any interim 1xx. */
function rawExchange(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(text));
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => {
      chunks.push(c);
      const got = withoutInterim(Buffer.concat(chunks).toString('latin1'));
      const headEnd = got.indexOf('\r\n\r\n');
      const length = /\r\ncontent-length: (\d+)/i.exec(got);
      if (headEnd >= 0 && length && got.length >= headEnd + 4 + Number(length[1])) socket.end();
    });
    socket.on('end', () => resolve(withoutInterim(Buffer.concat(chunks).toString('latin1'))));
    socket.on('error', reject);
  });
}

function withoutInterim(text: string): string {
  return text.replace(/^(HTTP\/1\.1 1\d\d [^\r]*\r\n(?:[^\r]+\r\n)*\r\n)+/, '');
}

describe('hostile callers on the invocation path (in-process gateway, real runtimes)', function () {
  this.timeout(60_000);
  let h: Harness;
  before(async () => {
    h = await startHarness();
  });
  after(async () => {
    await h?.close();
  });

  it('serves a 2 MiB POST sent with Expect: 100-continue while a streaming call on the same runtime completes', async () => {
    // The stream holds until the POST reaches the handler: the POST must not recycle the runtime under it.
    const fn = await h.createFunction('expect-continue', `
      let release; const posted = new Promise((r) => { release = r; });
      export default async (req, res) => {
        if (req.method === 'GET') { res.write('first;'); await posted; res.end('last'); return; }
        const size = Buffer.isBuffer(req.body) ? req.body.length : -1;
        release(size);
        res.json({ size });
      };`);
    const streaming = await h.invoke(fn.function_id, '/stream');
    expect(streaming.status).to.equal(200);
    const reader = streaming.body!.getReader();
    const first = await reader.read();
    expect(Buffer.from(first.value!).toString()).to.equal('first;');
    const body = Buffer.alloc(2 * 1024 * 1024, 7);
    const answer = await postExpectingContinue(`${h.url}/invoke/${fn.function_id}/upload`, body);
    expect(answer.continued).to.equal(true);
    expect(answer.status, answer.body).to.equal(200);
    expect(JSON.parse(answer.body)).to.deep.equal({ size: body.length });
    let rest = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      rest += Buffer.from(value).toString();
    }
    expect(rest).to.equal('last');
    const logs = await h.logs('expect-continue');
    expect(logs.logs.map((l: { status_code: number }) => l.status_code)).to.deep.equal([200, 200]);
  });

  it('framing headers a caller sends (Expect with the body at once, Upgrade, Keep-Alive, TE, Connection naming Host) neither fail the call nor recycle the runtime', async () => {
    const fn = await h.createFunction('framing', `const started = Date.now() + Math.random();
      export default (req, res) => res.json({ started, host: req.hostname, auth: req.headers.authorization ?? null });`);
    const first = await (await h.invoke(fn.function_id)).json();
    const port = Number(new URL(h.url).port);
    for (const header of [
      'Expect: 100-continue',
      'Connection: upgrade\r\nUpgrade: websocket',
      'Keep-Alive: timeout=5, max=1000',
      'TE: trailers',
      'Connection: host, keep-alive',
    ]) {
      const reply = await rawExchange(port, `POST /invoke/${fn.function_id}/ HTTP/1.1\r\nHost: callers.example\r\n${header}\r\nAuthorization: Bearer t\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`);
      expect(reply, header).to.match(/^HTTP\/1\.1 200 /);
      // The same runtime answered (its module state is kept), seeing the Host the caller addressed.
      expect(JSON.parse(reply.slice(reply.indexOf('\r\n\r\n') + 4)), header).to.deep.equal({ started: first.started, host: 'callers.example', auth: 'Bearer t' });
    }
  });

  it('a header the HTTP client refuses to send on is a 400 for that call, not a crashed runtime', async () => {
    // A test run's headers come from JSON; a DEL character passes its check but undici refuses it.
    const fn = await h.createFunction('refused-header', `const started = Date.now() + Math.random();
      export default (req, res) => res.json({ started });`);
    const first = await (await h.invoke(fn.function_id)).json();
    const refused = await h.api('POST', '/api/v1/functions/refused-header/test', { headers: { 'x-odd': 'a\u007fb' } });
    expect(refused.status, JSON.stringify(refused.body)).to.equal(200);
    expect(refused.body.status_code).to.equal(400);
    expect(refused.body.error_message).to.match(/cannot be forwarded to the function: invalid x-odd header/);
    expect(await (await h.invoke(fn.function_id)).json()).to.deep.equal(first);
  });

  it('does not let a caller-sent X-Forwarded-Host or Forwarded become req.hostname', async () => {
    const fn = await h.createFunction('hostname-probe', `export default (req, res) => res.json({ hostname: req.hostname, xfh: req.headers['x-forwarded-host'] ?? null, forwarded: req.headers.forwarded ?? null });`);
    const port = new URL(h.url).port;
    const reply = await rawExchange(Number(port), `GET /invoke/${fn.function_id}/ HTTP/1.1\r\nHost: real.example:${port}\r\nX-Forwarded-Host: evil.example\r\nForwarded: host=evil.example;proto=https\r\n\r\n`);
    expect(reply).to.match(/^HTTP\/1\.1 200 /);
    expect(JSON.parse(reply.slice(reply.indexOf('\r\n\r\n') + 4))).to.deep.equal({ hostname: 'real.example', xfh: null, forwarded: null });
  });

  it('never gives a handler the panel cookie or an x-fnhost-* header, and drops its Set-Cookie for the panel cookie', async () => {
    const fn = await h.createFunction('cookie-thief', `export default (req, res) => {
      res.append('set-cookie', '${SESSION_COOKIE}=planted; Path=/; HttpOnly');
      res.append('set-cookie', '__Host-${SESSION_COOKIE}=planted; Path=/; Secure');
      res.append('set-cookie', '=${SESSION_COOKIE}=planted; Path=/');
      res.append('set-cookie', 'theme=dark; Path=/');
      const fnhost = Object.keys(req.headers).filter((n) => n.startsWith('x-fnhost-') && n !== 'x-fnhost-execution-id' && n !== 'x-fnhost-trigger');
      res.json({ cookie: req.headers.cookie ?? null, cookies: req.cookies, fnhost, trigger: req.headers['x-fnhost-trigger'], auth: req.headers.authorization });
    };`);
    const r = await h.invoke(fn.function_id, '/', {
      headers: {
        cookie: `theme=light; ${SESSION_COOKIE}=the-admins-session; __Secure-${SESSION_COOKIE}=also-secret; lang=en`,
        authorization: 'Bearer caller-token',
        'x-fnhost-csrf': 'stolen',
        'x-fnhost-trigger': 'schedule',
        'x-fnhost-execution-id': 'log_forged',
        'x-fnhost-anything': 'x',
      },
    });
    expect(r.status).to.equal(200);
    const seen = await r.json();
    expect(seen.cookie).to.equal('theme=light; lang=en');
    expect(seen.cookies).to.deep.equal({ theme: 'light', lang: 'en' });
    expect(seen.fnhost).to.deep.equal([]);
    expect(seen.trigger).to.equal('http');
    expect(seen.auth).to.equal('Bearer caller-token');
    expect(r.headers.getSetCookie()).to.deep.equal(['theme=dark; Path=/']);
    // Only the panel cookie was present: no Cookie header at all.
    const alone = await h.invoke(fn.function_id, '/', { headers: { cookie: `${SESSION_COOKIE}=the-admins-session` } });
    expect((await alone.json()).cookie).to.equal(null);
  });
});

describe('hostile callers behind a trusted proxy (FNHOST_TRUST_PROXY=1)', function () {
  this.timeout(60_000);
  let h: Harness;
  before(async () => {
    h = await startHarness({ env: { FNHOST_TRUST_PROXY: '1' } });
  });
  after(async () => {
    await h?.close();
  });

  it('passes the proxy-set X-Forwarded-Host to req.hostname', async () => {
    const fn = await h.createFunction('hostname-trusted', `export default (req, res) => res.json({ hostname: req.hostname, forwarded: req.headers.forwarded ?? null });`);
    const r = await h.invoke(fn.function_id, '/', { headers: { 'x-forwarded-host': 'public.example', forwarded: 'host=public.example' } });
    expect(await r.json()).to.deep.equal({ hostname: 'public.example', forwarded: 'host=public.example' });
  });
});
