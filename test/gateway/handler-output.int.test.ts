import { expect } from 'chai';
import { startHarness, waitFor, type Harness } from './harness.ts';

// What a handler sets on its response must not crash the gateway, hang a call or recycle its
// runtime (issue 18): each odd output is answered at once with a clear execution record, while a
// streaming call on the same runtime goes on, and the runtime (its pid and module state) stays.

// The runtime's own channel to its supervisor: a worker thread's parentPort, or with
// FNHOST_ISOLATION=process (what the gateway starts) the in-thread channel, which the handler can
// import as any module of the runtime's folder (docs/runtime.md "Isolation: a thread or the process").
const IN_THREAD = new URL('../../runtime-image/src/in-thread.ts', import.meta.url).href;

const HANDLER = `
import { parentPort as threadPort } from 'node:worker_threads';
const parentPort = threadPort ?? (await import(${JSON.stringify(IN_THREAD)})).inThreadSide().port;
const started = Date.now() + Math.random();
let release;
let held = new Promise((r) => { release = r; });
export default async (req, res) => {
  const q = req.query;
  switch (req.path) {
    case '/pid': return res.json({ pid: process.pid, started });
    case '/stream': res.write('first;'); await held; return res.end('last');
    case '/release': release(); held = new Promise((r) => { release = r; }); return res.end('released');
    case '/status': return res.status(Number(q.code)).end();
    case '/writehead': res.writeHead(Number(q.code)); return res.end();
    case '/status-assigned': res.statusCode = Number(q.code); return res.end('assigned');
    case '/te': return res.set('Transfer-Encoding', q.v).send('coded');
    case '/te-setheader': res.setHeader('transfer-encoding', q.v); return res.end('coded');
    case '/hop': return res.set({ Connection: 'close, x-private', 'X-Private': 'hop', 'Keep-Alive': 'timeout=1', Upgrade: 'websocket', Trailer: 'x-sum', TE: 'trailers', 'Transfer-Encoding': 'chunked', 'X-Kept': 'yes' }).send('hop body');
    case '/length-short': return res.set('Content-Length', '100').end('short');
    case '/length-long': return res.set('Content-Length', '2').end('longer body');
    case '/length-stream': res.set('Content-Length', '3'); res.write('abcdef'); return res.end('gh');
    case '/bad-header': return res.set('X-Odd', 'a\u0007b').send('never sent');
    case '/platform-headers': return res.set({ 'X-Fnhost-Error': 'forged', 'X-Fnhost-Error-Kind': 'timeout' }).send('ok');
    case '/raw': {
      // A hostile handler skips res.* and posts the runtime's own messages (protocol.ts).
      const frames = {
        te: { t: 12, i: res.id, s: 200, h: ['Transfer-Encoding', 'gzip'], b: 'raw' },
        s101: { t: 12, i: res.id, s: 101, h: [], b: undefined },
        head101: { t: 13, i: res.id, s: 101, h: [] },
        chunk: { t: 14, i: res.id, b: { not: 'a body' } },
        status: { t: 12, i: res.id, s: 'ok', h: [], b: 'x' },
      };
      parentPort.postMessage(frames[q.frame]);
      return;
    }
    case '/text500': return res.status(500).send(q.long ? 'd'.repeat(5000) : 'database down');
    case '/throw-long': throw new Error('y'.repeat(100000));
  }
  res.status(404).end();
};`;

interface LogRecord {
  status_code: number;
  error_message: string | null;
}

describe('odd outputs of a handler (in-process gateway, real runtimes)', function () {
  this.timeout(120_000);
  let h: Harness;
  let id: string;
  let runtime: { pid: number; started: number };
  let seen = 0;

  before(async () => {
    h = await startHarness();
    // A short limit: without the fixes, a hung call fails in seconds rather than half a minute.
    id = (await h.createFunction('odd-output', HANDLER, { timeout_seconds: 5 })).function_id;
    runtime = await (await h.invoke(id, '/pid')).json();
    seen = 1;
  });
  after(async () => {
    await h?.close();
  });

  /** One call through /invoke and its execution record, read back through the API. */
  async function call(path: string): Promise<{ status: number; headers: Headers; body: string; record: LogRecord }> {
    const r = await h.invoke(id, path);
    const body = await r.text();
    seen++;
    // The held stream's record comes last (it started first), so the newest is this call's.
    const logs = await waitFor(async () => {
      const l = (await h.logs('odd-output', '?limit=100')).logs as LogRecord[];
      return l.length >= seen ? l : undefined;
    }, `the record of ${path}`);
    return { status: r.status, headers: r.headers, body, record: logs![0]! };
  }

  /** Opens the streaming call the odd outputs run beside; the returned function releases it and reads it to its end. */
  async function openStream(): Promise<() => Promise<string>> {
    const streaming = await h.invoke(id, '/stream');
    expect(streaming.status).to.equal(200);
    const reader = streaming.body!.getReader();
    const first = await reader.read();
    expect(Buffer.from(first.value!).toString()).to.equal('first;');
    return async () => {
      expect((await call('/release')).body).to.equal('released');
      seen++;
      let rest = '';
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        rest += Buffer.from(value).toString();
      }
      return rest;
    };
  }

  async function expectSameRuntime(): Promise<void> {
    expect((await call('/pid')).body).to.equal(JSON.stringify(runtime));
  }

  it('refuses an informational status (100-103) the handler sets, at res.status/res.writeHead, with the status in the record', async () => {
    const finish = await openStream();
    for (const code of [101, 100, 102, 103]) {
      for (const path of [`/status?code=${code}`, `/writehead?code=${code}`]) {
        const got = await call(path);
        expect(got.status, path).to.equal(500);
        expect(JSON.parse(got.body).error).to.equal('function_error');
        expect(got.record.status_code, path).to.equal(500);
        expect(got.record.error_message, path).to.match(new RegExp(`ResponseFramingError: res\\.status\\(${code}\\): status ${code} is informational`));
      }
    }
    expect(await finish()).to.equal('last');
    await expectSameRuntime();
  });

  it('answers 502 at once for a 1xx status assigned to res.statusCode, naming it in the record', async () => {
    const finish = await openStream();
    for (const code of [101, 100, 103]) {
      const got = await call(`/status-assigned?code=${code}`);
      expect(got.status).to.equal(502);
      expect(JSON.parse(got.body)).to.deep.equal({ error: 'invalid_response', message: "the function's response was refused; the reason is in the execution log" });
      expect(got.record).to.deep.include({ status_code: 502 });
      expect(got.record.error_message).to.match(new RegExp(`status ${code} is informational`));
    }
    expect(await finish()).to.equal('last');
    await expectSameRuntime();
  });

  it('refuses Transfer-Encoding gzip, deflate and compress at res.set/res.setHeader, naming the header in the record', async () => {
    const finish = await openStream();
    for (const coding of ['gzip', 'deflate', 'compress', 'gzip, chunked']) {
      for (const path of ['/te', '/te-setheader']) {
        const got = await call(`${path}?v=${encodeURIComponent(coding)}`);
        expect(got.status, `${path} ${coding}`).to.equal(500);
        expect(got.record.error_message).to.include(`Transfer-Encoding "${coding}" cannot be set`);
      }
    }
    expect(await finish()).to.equal('last');
    await expectSameRuntime();
  });

  it('drops hop-by-hop headers the handler sets (Connection and what it names, Keep-Alive, Upgrade, Trailer, TE, Transfer-Encoding: chunked)', async () => {
    const finish = await openStream();
    const got = await call('/hop');
    expect(got.status).to.equal(200);
    expect(got.body).to.equal('hop body');
    expect(got.record).to.deep.equal({ ...got.record, status_code: 200, error_message: null });
    expect(got.headers.get('x-kept')).to.equal('yes');
    for (const name of ['x-private', 'upgrade', 'trailer', 'te']) expect(got.headers.get(name), name).to.equal(null);
    // The gateway's own connection headers, not the handler's.
    expect(got.headers.get('keep-alive')).to.not.equal('timeout=1');
    expect(await finish()).to.equal('last');
    await expectSameRuntime();
  });

  it('sends the body the handler gave whatever Content-Length it set (shorter, longer, streamed)', async () => {
    const finish = await openStream();
    for (const [path, body] of [['/length-short', 'short'], ['/length-long', 'longer body'], ['/length-stream', 'abcdefgh']] as const) {
      const got = await call(path);
      expect(got.status, path).to.equal(200);
      expect(got.body, path).to.equal(body);
      expect(got.record.error_message, path).to.equal(null);
    }
    expect(await finish()).to.equal('last');
    await expectSameRuntime();
  });

  it('refuses a header value node:http will not send (a control character) with a 502 naming it, not a 500 blamed on the handler', async () => {
    const got = await call('/bad-header');
    expect(got.status).to.equal(502);
    expect(JSON.parse(got.body).error).to.equal('invalid_response');
    expect(got.record.error_message).to.match(/the function's response is invalid: .*"X-Odd"/);
    await expectSameRuntime();
  });

  it('does not let a handler forge the platform headers the gateway reads (x-fnhost-error, x-fnhost-error-kind)', async () => {
    const got = await call('/platform-headers');
    expect(got.status).to.equal(200);
    expect(got.body).to.equal('ok');
    expect(got.record).to.deep.include({ status_code: 200, error_message: null });
  });

  it('refuses raw runtime messages a hostile handler posts (gzip framing, 101, a non-body chunk, a non-number status) with a 502, the runtime kept', async () => {
    const finish = await openStream();
    for (const [frame, reason] of [
      ['te', /Transfer-Encoding "gzip" cannot be set/],
      ['s101', /status 101 is informational/],
      ['head101', /status 101 is informational/],
      ['chunk', /the function's response is invalid/],
      ['status', /status ok, which is not an integer/],
    ] as const) {
      const got = await call(`/raw?frame=${frame}`);
      expect(got.status, frame).to.equal(502);
      expect(JSON.parse(got.body).error, frame).to.equal('invalid_response');
      expect(got.record.error_message, frame).to.match(reason);
    }
    expect(await finish()).to.equal('last');
    await expectSameRuntime();
  });

  it("records a handler's own 500 text body as error_message, bounded; a long thrown message is bounded the same way", async () => {
    const text = await call('/text500');
    expect(text.status).to.equal(500);
    expect(text.body).to.equal('database down');
    expect(text.record.error_message).to.equal('database down');
    const long = await call('/text500?long=1');
    expect(long.record.error_message).to.equal('d'.repeat(1024) + '…');
    const thrown = await call('/throw-long');
    expect(thrown.status).to.equal(500);
    expect(thrown.record.error_message).to.equal(`Error: ${'y'.repeat(1017)}…`);
    await expectSameRuntime();
  });
});
