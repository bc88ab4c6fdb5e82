import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'node:http';
import { expect } from 'chai';
import * as limits from '../../core/src/limits.ts';
import { TestClock, TOKEN, startHarness, type Harness } from './harness.ts';
import { startGateway, type RunningGateway } from '../helpers/platform.ts';
import { bigHandler, chunked, putCode, sha256 } from '../helpers/code-upload.ts';
import { pollUntil } from '../helpers/wait.ts';

// The code store's API on one machine (docs/gateway.md "The code store"): uploads by digest,
// functions created with code_ref and called, the bounds, GC, and a restart.

/** Names in the code store's folder: blobs and (never, after an answer) temp files. */
function codeFiles(dataDir: string): string[] {
  try {
    return readdirSync(join(dataDir, 'code', 'sha256'));
  } catch {
    return [];
  }
}

const BIG = bigHandler(600 * 1024, 'big');
const BIG_DIGEST = sha256(BIG);

describe('code store API (one machine)', function () {
  this.timeout(180_000);
  let h: Harness;
  const clock = new TestClock();
  const idleBefore = process.env.FNHOST_BODY_IDLE_TIMEOUT_MS;
  before(async () => {
    // The platform reads its resource settings from the process environment.
    process.env.FNHOST_BODY_IDLE_TIMEOUT_MS = '1500';
    h = await startHarness({ clock });
  });
  after(async () => {
    if (idleBefore === undefined) delete process.env.FNHOST_BODY_IDLE_TIMEOUT_MS;
    else process.env.FNHOST_BODY_IDLE_TIMEOUT_MS = idleBefore;
    await h?.close();
  });

  it('uploads by digest: 201 created, 200 when there already, HEAD 200/404, and a function made with code_ref is served', async () => {
    expect((await h.api('HEAD', `/api/v1/code/${BIG_DIGEST}`)).status).to.equal(404);
    const first = await putCode(h.url, TOKEN, BIG_DIGEST, chunked(BIG), { length: BIG.length });
    expect(first.status, JSON.stringify(first.body)).to.equal(201);
    expect(first.body).to.deep.equal({ digest: BIG_DIGEST, size: BIG.length, created: true });
    const again = await putCode(h.url, TOKEN, BIG_DIGEST, chunked(BIG));
    expect(again.status).to.equal(200);
    expect(again.body.created).to.equal(false);
    const head = await h.api('HEAD', `/api/v1/code/${BIG_DIGEST}`);
    expect(head.status).to.equal(200);
    expect(head.headers.get('x-fnhost-code-size')).to.equal(String(BIG.length));

    const created = await h.api('POST', '/api/v1/functions', { name: 'by-ref', code_ref: { digest: BIG_DIGEST, size: BIG.length } });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    expect(created.body.code_ref).to.deep.equal({ digest: BIG_DIGEST, size: BIG.length });
    expect(created.body).not.to.have.property('code');
    const r = await h.invoke(created.body.function_id);
    expect(r.status).to.equal(200);
    const answer = (await r.json()) as { tag: string; filler: number };
    expect(answer.tag).to.equal('big');
    expect(answer.filler).to.be.within(BIG.length - 200, BIG.length);
    const got = await h.api('GET', '/api/v1/functions/by-ref');
    expect(got.body.code_ref).to.deep.equal({ digest: BIG_DIGEST, size: BIG.length });
    // Back to inline code, and to the reference again.
    const inline = await h.api('PATCH', '/api/v1/functions/by-ref', { code: 'export default (req, res) => res.json({ tag: "inline" })' });
    expect(inline.status, JSON.stringify(inline.body)).to.equal(200);
    expect(inline.body).not.to.have.property('code_ref');
    expect(await (await h.invoke(created.body.function_id)).json()).to.deep.equal({ tag: 'inline' });
    const back = await h.api('PATCH', '/api/v1/functions/by-ref', { code_ref: { digest: BIG_DIGEST, size: BIG.length } });
    expect(back.status).to.equal(200);
    expect(((await (await h.invoke(created.body.function_id)).json()) as { tag: string }).tag).to.equal('big');
  });

  it('GET /internal/v1/code/{digest} streams a runtime only its own function\'s code: 404 for other code and other tokens', async () => {
    const by = await h.api('GET', '/api/v1/functions/by-ref');
    const other = await h.createFunction('inline-one', 'export default (req, res) => res.json({})');
    const get = (digest: string, functionId: string) => fetch(`${h.url}/internal/v1/code/${digest}`, { headers: { authorization: `Bearer ${h.platform.runtimeToken(functionId)}` } });
    const own = await get(BIG_DIGEST, by.body.function_id);
    expect(own.status).to.equal(200);
    expect(own.headers.get('content-type')).to.equal('application/octet-stream');
    expect(Buffer.from(await own.arrayBuffer()).equals(BIG)).to.equal(true);
    // Stored, but not this function's code: the same 404 as a digest never stored.
    const stored = await get(BIG_DIGEST, other.function_id);
    const never = await get(sha256(Buffer.from('never')), other.function_id);
    expect([stored.status, never.status]).to.deep.equal([404, 404]);
    expect(((await stored.json()) as { error: string }).error).to.equal('not_found');
    expect((await fetch(`${h.url}/internal/v1/code/${BIG_DIGEST}`, { headers: { authorization: 'Bearer wrong' } })).status).to.equal(401);
    expect((await h.api('DELETE', '/api/v1/functions/inline-one')).status).to.equal(204);
  });

  it('refuses a code_ref that is missing, of the wrong size, malformed, or given with code', async () => {
    const missing = sha256(Buffer.from('never uploaded'));
    const r1 = await h.api('POST', '/api/v1/functions', { name: 'missing', code_ref: { digest: missing, size: 14 } });
    expect(r1.status).to.equal(400);
    expect(r1.body.error).to.equal('code_missing');
    expect(r1.body.message).to.include(missing);
    const r2 = await h.api('POST', '/api/v1/functions', { name: 'wrong-size', code_ref: { digest: BIG_DIGEST, size: 5 } });
    expect(r2.status).to.equal(400);
    expect(r2.body.message).to.equal(`code_ref.size is 5, but code ${BIG_DIGEST} is ${BIG.length} bytes`);
    const r3 = await h.api('POST', '/api/v1/functions', { name: 'bad', code_ref: { digest: 'sha256:XYZ', size: 5 } });
    expect(r3.body.message).to.equal('code_ref.digest "sha256:XYZ" is malformed: expected "sha256:" and 64 lowercase hex digits');
    const r4 = await h.api('POST', '/api/v1/functions', { name: 'both', code: 'export default () => 1', code_ref: { digest: BIG_DIGEST, size: BIG.length } });
    expect(r4.body.message).to.include('not both');
    for (const name of ['missing', 'wrong-size', 'bad', 'both']) expect((await h.api('GET', `/api/v1/functions/${name}`)).status).to.equal(404);
  });

  it('refuses bytes that are not the digest (400 naming both) and a malformed digest, leaving no temp file', async () => {
    const bytes = bigHandler(300 * 1024, 'x');
    const claimed = sha256(Buffer.from('something else'));
    const r = await putCode(h.url, TOKEN, claimed, chunked(bytes));
    expect(r.status).to.equal(400);
    expect(r.body.error).to.equal('digest_mismatch');
    expect(r.body.message).to.equal(`the uploaded bytes have digest ${sha256(bytes)}, not ${claimed} as the address says`);
    const bad = await putCode(h.url, TOKEN, 'sha256:abc', chunked(bytes));
    expect(bad.status).to.equal(400);
    expect(bad.body.message).to.include('"sha256:abc" is malformed');
    expect(codeFiles(h.dataDir).filter((n) => n.startsWith('.'))).to.deep.equal([]);
  });

  it('refuses past 50 MiB on the declared length before reading the body (413)', async () => {
    const started = Date.now();
    // Headers only: a body that is never sent. The answer comes without it.
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(`${h.url}/api/v1/code/${BIG_DIGEST}`, { method: 'PUT', headers: { authorization: `Bearer ${TOKEN}`, 'content-length': String(limits.MAX_CODE_REF_BYTES + 1) } }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode!, body }));
      });
      req.on('error', reject);
      req.flushHeaders();
    });
    expect(answer.status).to.equal(413);
    expect(JSON.parse(answer.body).message).to.equal(`code is ${limits.MAX_CODE_REF_BYTES + 1} bytes; the limit is ${limits.MAX_CODE_REF_BYTES} bytes`);
    expect(Date.now() - started).to.be.below(10_000);
  });

  it('ends an upload that stalls at the body-idle timeout (408) and removes its temp file', async () => {
    const bytes = bigHandler(512 * 1024, 'stall');
    const r = await putCode(h.url, TOKEN, sha256(bytes), chunked(bytes), { stallAfter: 3 });
    expect(r.status).to.equal(408);
    await pollUntil('the temp file removed', async () => codeFiles(h.dataDir).every((n) => !n.startsWith('.')), 10_000, 50);
    expect((await h.api('HEAD', `/api/v1/code/${sha256(bytes)}`)).status).to.equal(404);
  });

  it('takes concurrent uploads of one digest: one created, the others there already, one blob', async () => {
    const bytes = bigHandler(2 * 1024 * 1024, 'concurrent');
    const digest = sha256(bytes);
    const answers = await Promise.all([1, 2, 3].map(() => putCode(h.url, TOKEN, digest, chunked(bytes))));
    expect(answers.map((a) => a.status).sort()).to.deep.equal([200, 200, 201]);
    expect(codeFiles(h.dataDir).filter((n) => n === digest.slice(7))).to.have.length(1);
  });

  it('GC keeps referenced code and code within its grace, and collects the rest', async () => {
    const old = bigHandler(300 * 1024, 'old');
    expect((await putCode(h.url, TOKEN, sha256(old), chunked(old))).status).to.equal(201);
    clock.advance(limits.MAX_CODE_REF_BYTES > 0 ? 59 * 60_000 : 0);
    const recent = bigHandler(300 * 1024, 'recent');
    expect((await putCode(h.url, TOKEN, sha256(recent), chunked(recent))).status).to.equal(201);
    clock.advance(2 * 60_000);
    // 61 minutes after `old`, 2 after `recent`; BIG was uploaded earlier still and is referenced by by-ref.
    const deleted = await h.platform.codeCollector!.collect();
    expect(deleted).to.be.at.least(1);
    expect((await h.api('HEAD', `/api/v1/code/${sha256(old)}`)).status).to.equal(404);
    expect((await h.api('HEAD', `/api/v1/code/${sha256(recent)}`)).status).to.equal(200);
    expect((await h.api('HEAD', `/api/v1/code/${BIG_DIGEST}`)).status).to.equal(200);
    expect(codeFiles(h.dataDir)).to.include(BIG_DIGEST.slice(7)).and.not.include(sha256(old).slice(7));
    const by = await h.api('GET', '/api/v1/functions/by-ref');
    expect((await h.invoke(by.body.function_id)).status).to.equal(200);
  });
});

describe('code store on a gateway process: a 50 MiB upload in bounded memory, and a restart', function () {
  this.timeout(240_000);
  let gw: RunningGateway | undefined;
  after(async () => {
    await gw?.stop();
  });

  /** The gateway's peak resident memory so far (VmHWM), bytes. */
  function peakRss(pid: number): number {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return Number(m![1]) * 1024;
  }

  it('streams four 50 MiB uploads at once to disk without holding them (peak RSS grows by far less than the 200 MiB of bodies), and a referenced function survives a restart', async () => {
    gw = await startGateway({ keepDataDir: true });
    // A small upload first, so what one upload needs (code paths loaded, buffers) is in the baseline.
    const warm = bigHandler(300 * 1024, 'warm');
    expect((await putCode(gw.url, gw.token, sha256(warm), chunked(warm))).status).to.equal(201);
    const before = peakRss(gw.pid);
    const huge = bigHandler(limits.MAX_CODE_REF_BYTES, 'huge');
    const digest = sha256(huge);
    // Four at once (FNHOST_CODE_UPLOADS_MAX_CONCURRENT's default): held in memory they would be
    // 200 MiB. Streamed, what grows is the socket's chunks waiting for V8 to collect them (it
    // collects once external memory grew by its 64 MiB soft limit): well under 100 MiB.
    const answers = await Promise.all([1, 2, 3, 4].map(() => putCode(gw!.url, gw!.token, digest, chunked(huge), { length: huge.length })));
    expect(answers.map((a) => a.status).sort(), JSON.stringify(answers.map((a) => a.body))).to.deep.equal([200, 200, 200, 201]);
    expect(answers[0]!.body.size).to.equal(limits.MAX_CODE_REF_BYTES);
    const grew = peakRss(gw.pid) - before;
    console.log(`      peak RSS grew by ${(grew / 1048576).toFixed(1)} MiB for four ${huge.length}-byte uploads at once`);
    expect(grew, `peak RSS grew by ${grew} bytes for four ${huge.length}-byte uploads`).to.be.below(100 * 1024 * 1024);

    const five = bigHandler(5 * 1024 * 1024, 'five');
    expect((await putCode(gw.url, gw.token, sha256(five), chunked(five))).status).to.equal(201);
    const api = (method: string, path: string, body?: unknown) => fetch(`${gw!.url}${path}`, { method, headers: { authorization: `Bearer ${gw!.token}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    const created = await api('POST', '/api/v1/functions', { name: 'five', code_ref: { digest: sha256(five), size: five.length } });
    expect(created.status).to.equal(201);
    const id = ((await created.json()) as { function_id: string }).function_id;
    expect((await fetch(`${gw.url}/invoke/${id}`)).status).to.equal(200);

    const dataDir = gw.dataDir;
    expect(await gw.stop()).to.equal(0);
    gw = await startGateway({ dataDir });
    const again = await fetch(`${gw.url}/invoke/${id}`);
    expect(again.status).to.equal(200);
    expect(((await again.json()) as { tag: string }).tag).to.equal('five');
  });
});
