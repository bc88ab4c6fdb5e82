import { expect } from 'chai';
import { request } from 'node:http';
import { startGateway, type RunningGateway } from '../../helpers/platform.ts';
import { managementApi, targetOf, type ManagementApi } from './gateway-target.ts';
import { folderBytes, Neighbour, type Target } from './neighbour.ts';

// Attack (issue 27 point 4): a function writes 200 KiB values to KV 16 at a
// time, as fast as it can. Shown at 021272b: 700 MB into the data folder in
// 10 s, a neighbour's p50 from 3 to 40 ms. With the quota (here 5 MiB, set
// small to keep the test quick) and the write-rate bound, the writes past the
// quota are refused with an error naming it, the data folder grows by no
// more than the quota plus a margin, and the neighbour keeps being served.
//
// Bounded: 4 attack calls of at most ATTACK_MS each, at most
// MAX_WRITES_PER_CALL writes of 200 KiB each (so at most ~470 MiB even where
// nothing refuses), loopback only.

const QUOTA_BYTES = 5 * 1024 * 1024;
/**
 * The margin over the quota the data folder may grow by: SQLite's WAL holds a
 * copy of each written page until a checkpoint copies it into the database
 * file (so the quota's bytes can be on disk twice, briefly), plus b-tree pages
 * and the records of the calls.
 */
const MARGIN_BYTES = QUOTA_BYTES + 4 * 1024 * 1024;
const ATTACK_MS = 2_500;
const MAX_WRITES_PER_CALL = 600;

const FILLER = `export default async (req, res) => {
  const value = 'x'.repeat(200 * 1024);
  const until = Date.now() + ${ATTACK_MS};
  let n = 0, stored = 0, refused = 0;
  const messages = {};
  const one = async () => {
    while (Date.now() < until && n < ${MAX_WRITES_PER_CALL}) {
      const i = n++;
      try { await kv.set('fill-' + req.query.run + '-' + i, value); stored++; }
      catch (e) { refused++; messages[String(e.message).replace(/[0-9]+/g, 'N')] = String(e.message); }
    }
  };
  await Promise.all(Array.from({ length: 16 }, one));
  res.json({ stored, refused, messages: Object.values(messages) });
};`;

describe('attack: a function fills KV (issue 27 point 4)', function () {
  this.timeout(180_000);
  let gw: RunningGateway;
  let target: Target;

  const api: ManagementApi = (method, path, body) => managementApi(gw)(method, path, body);

  before(async () => {
    gw = await startGateway({
      prefix: ['prlimit', '--nofile=4096:4096', '--'],
      env: { FNHOST_KV_MAX_BYTES: String(QUOTA_BYTES) },
    });
    target = targetOf(gw);
  });
  after(async () => {
    await gw?.stop();
  });

  it('refuses writes past the quota naming it; the data folder grows by at most the quota plus the margin; the neighbour is served', async () => {
    const filler = await target.createFunction('kv-filler', FILLER);
    const n = await Neighbour.start(target);
    const before = await folderBytes(gw.dataDir);

    n.startProbing();
    const attack = (run: number) => new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(`${gw.url}/invoke/${filler.function_id}/?run=${run}`, { localAddress: '127.0.0.1', timeout: 60_000 }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode!, body }));
      });
      req.on('error', reject);
      req.end();
    });
    const results = [];
    for (let run = 0; run < 4; run += 2) results.push(...(await Promise.all([attack(run), attack(run + 1)])));
    const during = await n.stopProbing();

    const outcomes = results.map((r) => {
      expect(r.status, r.body).to.equal(200);
      return JSON.parse(r.body) as { stored: number; refused: number; messages: string[] };
    });
    const stored = outcomes.reduce((a, o) => a + o.stored, 0);
    const messages = outcomes.flatMap((o) => o.messages);
    // 200 KiB + key: at most 25 of them fit in 5 MiB.
    expect(stored, JSON.stringify(outcomes)).to.be.at.most(25);
    expect(messages.some((m) => /KV quota exceeded: function kv-filler stores \d+ of 5242880 bytes \(kv_bytes\)/.test(m)), JSON.stringify(messages)).to.equal(true);

    const grown = (await folderBytes(gw.dataDir)) - before;
    expect(grown, `the data folder grew by ${grown} bytes; the quota is ${QUOTA_BYTES} and the margin ${MARGIN_BYTES}`).to.be.at.most(QUOTA_BYTES + MARGIN_BYTES);

    const fn = await api('GET', `/api/v1/functions/${filler.function_id}`);
    expect(fn.body.kv.max_bytes).to.equal(QUOTA_BYTES);
    expect(fn.body.kv.bytes).to.be.at.most(QUOTA_BYTES).and.at.least(stored * 200 * 1024);
    expect(fn.body.kv.keys).to.equal(stored);

    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    expect(Number(/fnhost_refused_total\{reason="kv_bytes"\} (\d+)/.exec(metrics)?.[1])).to.be.greaterThan(0);

    if (process.env.FNHOST_TEST_VERBOSE) process.stderr.write(`kv-fill: stored ${stored}, folder +${grown} bytes, neighbour quiet p95 ${n.quiet!.p95Ms.toFixed(1)} ms, during p50 ${during.p50Ms.toFixed(1)} / p95 ${during.p95Ms.toFixed(1)} ms, ${during.ok}/${during.calls} ok\n`);
    n.expectServed(during, 'kv fill');
    await n.expectRecovered('kv fill');
    n.close();
  });
});
