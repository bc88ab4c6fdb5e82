import { expect } from 'chai';
import { putCode, sha256 } from '../../helpers/code-upload.ts';
import { attackedGateway, counters } from './gateway-target.ts';
import { TOKEN_IN_MEMORY, attackCall } from './attacker.ts';
import { folderBytes, Neighbour, type Target } from './neighbour.ts';
import type { RunningGateway } from '../../helpers/platform.ts';

// Attack: a function fetches its own code, by digest, from the internal API flat out
// (GET /internal/v1/code/{digest}, up to 50 MiB a stream) with its runtime token, many streams at
// once. Nothing bounded it: every fetch 200, the gateway streaming from its disk for as long as the
// function liked. With the per-function bound (docs/security.md "Resources: code fetches":
// FNHOST_CODE_FETCHES_PER_FUNCTION streams at once, a bucket of bytes a second) fetches past it get
// 429 with Retry-After, counted in fnhost_refused_total and logged once; the neighbour is served.
//
// The token: found in the attacker's own process memory (./attacker.ts TOKEN_IN_MEMORY).
//
// Bounded: one attack call of ATTACK_MS, 8 fetches in flight, at most MAX_FETCHES fetches of a
// CODE_BYTES blob; the bucket lowered to 8 MiB and 2 MiB/s so that the rate bound is reached within
// the attack's seconds on a shared machine (the defaults are 256 MiB and 32 MiB/s: the same code,
// scaled); Unix socket and loopback only. Needs root and bubblewrap (the sandbox).

const ATTACK_MS = 4_000;
const MAX_FETCHES = 400;
const CODE_BYTES = 2 * 1024 * 1024;
const CONCURRENT = 4;
const RATE_BYTES = 2 * 1024 * 1024;
const BURST_BYTES = 8 * 1024 * 1024;

const FETCHER = `
import { request } from 'node:http';
${TOKEN_IN_MEMORY}
export default async (req, res) => {
  const token = runtimeToken(req.query.fn);
  if (token === undefined) return res.status(500).json({ error: 'no token found in the process memory' });
  let streaming = 0, maxStreaming = 0;
  const fetchOnce = () => new Promise((resolve) => {
    const r = request({ socketPath: '/run/fnhost-gateway/gateway.sock', path: '/internal/v1/code/' + req.query.digest, method: 'GET',
      headers: { authorization: 'Bearer ' + token } }, (answer) => {
      // Counted from its head to its last byte: the gateway admitted it before the one and releases
      // it after the other, so this count is never above the gateway's own.
      let bytes = 0, counted = answer.statusCode === 200;
      const length = Number(answer.headers['content-length']);
      if (counted) maxStreaming = Math.max(maxStreaming, ++streaming);
      const uncount = () => {
        if (counted) streaming--;
        counted = false;
      };
      answer.on('data', (c) => {
        bytes += c.length;
        if (bytes >= length) uncount();
      });
      const done = () => {
        uncount();
        resolve({ status: answer.statusCode, bytes, retryAfter: answer.headers['retry-after'] });
      };
      answer.on('end', done);
      answer.on('error', done);
    });
    r.on('error', (e) => resolve({ status: e.code, bytes: 0 }));
    r.end();
  });
  const until = Date.now() + ${ATTACK_MS};
  const started = Date.now();
  let sent = 0, servedBytes = 0;
  const statuses = {};
  let retryAfter;
  const one = async () => {
    while (Date.now() < until && sent < ${MAX_FETCHES}) {
      sent++;
      const r = await fetchOnce();
      statuses[r.status] = (statuses[r.status] || 0) + 1;
      if (r.status === 200) servedBytes += r.bytes;
      if (r.status === 429) retryAfter ??= r.retryAfter;
    }
  };
  await Promise.all(Array.from({ length: 8 }, one));
  res.json({ sent, statuses, servedBytes, maxStreaming, retryAfter, seconds: (Date.now() - started) / 1000 });
};
// `;

/** The handler padded to CODE_BYTES with a comment: a blob worth streaming. */
function paddedCode(): Buffer {
  const head = Buffer.from(FETCHER);
  return Buffer.concat([head, Buffer.alloc(CODE_BYTES - head.length, 'x')]);
}

interface FetchResult { sent: number; statuses: Record<string, number>; servedBytes: number; maxStreaming: number; retryAfter?: string; seconds: number }

describe('attack: a function floods the internal code route with fetches of its code', function () {
  this.timeout(180_000);
  let gw: RunningGateway;
  let target: Target;

  before(async function () {
    if (process.getuid?.() !== 0) throw new Error('this attack test needs root (sandboxed runtimes under uids of their own)');
    ({ gw, target } = await attackedGateway(1024, {
      FNHOST_WARM_POOL: '0',
      FNHOST_CODE_FETCHES_PER_FUNCTION: String(CONCURRENT),
      FNHOST_CODE_FETCH_BYTES_PER_SECOND: String(RATE_BYTES),
      FNHOST_CODE_FETCH_BURST_BYTES: String(BURST_BYTES),
    }));
  });
  after(async () => {
    await gw?.stop();
  });

  it('fetches past the bound get 429 with Retry-After, at most the bound streams at once and the bucket\'s bytes; counted, logged once; the neighbour is served', async () => {
    const code = paddedCode();
    const digest = sha256(code);
    const uploaded = await putCode(gw.url, gw.token, digest, [code], { length: code.length });
    expect(uploaded.status, JSON.stringify(uploaded.body)).to.be.oneOf([200, 201]);
    const created = await fetch(`${gw.url}/api/v1/functions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'fetcher', code_ref: { digest, size: code.length }, timeout_seconds: 60 }),
    });
    const fetcher = (await created.json()) as { function_id: string };
    expect(created.status, JSON.stringify(fetcher)).to.equal(201);

    const n = await Neighbour.start(target);
    const before = await counters(gw);
    const dataBefore = await folderBytes(gw.dataDir);
    n.startProbing();
    const result = await attackCall(gw.url, fetcher.function_id, `/?fn=${fetcher.function_id}&digest=${digest}`);
    const during = await n.stopProbing();
    expect(result.status, result.body.slice(0, 500)).to.equal(200);
    const r = JSON.parse(result.body) as FetchResult;
    console.log(`      ${JSON.stringify(r)}; neighbour quiet p95 ${n.quiet!.p95Ms.toFixed(1)} ms, during ${JSON.stringify(during)}`);
    n.expectServed(during, 'code fetch flood');

    expect(Object.keys(r.statuses).every((s) => ['200', '429'].includes(s)), `only 200 and 429: ${JSON.stringify(r.statuses)}`).to.equal(true);
    expect(r.statuses['429'] ?? 0, `refused fetches: ${JSON.stringify(r.statuses)}`).to.be.greaterThan(0);
    expect(Number(r.retryAfter), 'Retry-After on a 429').to.be.at.least(1);
    expect(r.maxStreaming, 'streams at once').to.be.at.most(CONCURRENT);
    // What was served: the bucket (its size at start), the rate over the attack's seconds, and one blob of slack.
    expect(r.servedBytes, 'bytes served').to.be.at.most(BURST_BYTES + RATE_BYTES * (r.seconds + 1) + CODE_BYTES);

    const after = await counters(gw);
    const refusals = (after['fnhost_refused_total:code_fetches'] ?? 0) - (before['fnhost_refused_total:code_fetches'] ?? 0) + (after['fnhost_refused_total:code_fetch_rate'] ?? 0) - (before['fnhost_refused_total:code_fetch_rate'] ?? 0);
    expect(refusals, 'refusals counted').to.equal(r.statuses['429']);
    // Both bounds were reached: streams at once (8 fetchers, 4 admitted) and the bucket of bytes.
    for (const reason of ['code_fetches', 'code_fetch_rate']) {
      expect((after[`fnhost_refused_total:${reason}`] ?? 0) - (before[`fnhost_refused_total:${reason}`] ?? 0), `${reason} refusals`).to.be.greaterThan(0);
    }
    // Logged once per reason in the interval, not once per refusal.
    const lines = gw.output().split('\n').filter((l) => l.includes('code fetch refused'));
    expect(lines.length, 'log lines of refused fetches (one per reason in the interval)').to.be.within(1, 4);
    expect(lines.join('\n')).to.include(fetcher.function_id);
    // Nothing is written by a fetch: the data folder holds the uploaded blob (counted before) and the records.
    expect((await folderBytes(gw.dataDir)) - dataBefore, 'the data folder\'s growth').to.be.at.most(8 * 1024 * 1024);

    await n.expectRecovered('code fetch flood');
    n.close();
  });
});
