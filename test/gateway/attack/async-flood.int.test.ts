import { expect } from 'chai';
import { Agent, request } from 'node:http';
import type { RunningGateway } from '../../helpers/platform.ts';
import { attackedGateway, counters } from './gateway-target.ts';
import { folderBytes, Neighbour, type Target } from './neighbour.ts';

// Attack (issue 33): a client floods /async-invoke of a slow function with
// 64 KiB bodies, 8 at a time, as fast as the gateway takes them. Without the
// queue's bounds every one of them is stored: the data folder grows by all
// the client sends. With them (here 2 MiB per function and 4 MiB in all, set
// small to keep the test quick), the calls past the bound get 429 with
// Retry-After, the data folder grows by no more than the bound plus a margin,
// and the neighbour (synchronous calls from 127.0.0.2) keeps being served.
//
// Bounded: at most MAX_REQUESTS requests of 64 KiB (64 MiB) within ATTACK_MS,
// loopback only.

const FUNCTION_BYTES = 2 * 1024 * 1024;
const TOTAL_BYTES = 4 * 1024 * 1024;
/** SQLite's WAL may hold a copy of each page until a checkpoint, and the calls' rows and records take pages too. */
const MARGIN_BYTES = TOTAL_BYTES + 4 * 1024 * 1024;
const ATTACK_MS = 4_000;
const MAX_REQUESTS = 1000;
const BODY = Buffer.alloc(64 * 1024, 'x');
const SLOW = `export default async (req, res) => { await new Promise((r) => setTimeout(r, 2000)); res.json({ ok: true }) }`;

describe('attack: a client floods /async-invoke (issue 33)', function () {
  this.timeout(180_000);
  let gw: RunningGateway;
  let target: Target;

  before(async () => {
    ({ gw, target } = await attackedGateway(4096, {
      FNHOST_ASYNC_QUEUE_FUNCTION_BYTES: String(FUNCTION_BYTES),
      FNHOST_ASYNC_QUEUE_TOTAL_BYTES: String(TOTAL_BYTES),
    }));
  });
  after(async () => {
    await gw?.stop();
  });

  it('refuses past the queue bounds with 429 and Retry-After; the data folder grows by at most the bound plus the margin; the neighbour is served', async () => {
    const victim = await target.createFunction('async-victim', SLOW);
    const n = await Neighbour.start(target);
    const before = await folderBytes(gw.dataDir);
    const agent = new Agent({ keepAlive: true, maxSockets: 8, localAddress: '127.0.0.1' });
    const statuses: Record<string, number> = {};
    let retryAfter: string | undefined;
    let sent = 0;
    const until = Date.now() + ATTACK_MS;
    const one = () => new Promise<void>((resolve) => {
      const req = request(`${gw.url}/async-invoke/${victim.function_id}`, { method: 'POST', agent, headers: { 'content-type': 'application/octet-stream', 'content-length': BODY.length }, timeout: 30_000 }, (res) => {
        statuses[res.statusCode!] = (statuses[res.statusCode!] ?? 0) + 1;
        if (res.statusCode === 429) retryAfter = res.headers['retry-after'];
        res.resume();
        res.on('end', () => resolve());
      });
      req.on('error', (err) => {
        statuses[err.message] = (statuses[err.message] ?? 0) + 1;
        resolve();
      });
      req.end(BODY);
    });

    n.startProbing();
    await Promise.all(Array.from({ length: 8 }, async () => {
      while (Date.now() < until && sent < MAX_REQUESTS) {
        sent++;
        await one();
      }
    }));
    const during = await n.stopProbing();
    agent.destroy();

    const accepted = statuses['202'] ?? 0;
    // 64 KiB and its headers: at most 31 fit in 2 MiB (a few more as calls finish and free their bytes).
    expect(statuses['429'] ?? 0, JSON.stringify(statuses)).to.be.greaterThan(0);
    expect(accepted, JSON.stringify(statuses)).to.be.at.most(31 + 8);
    expect(retryAfter).to.equal('10');
    const grown = (await folderBytes(gw.dataDir)) - before;
    expect(grown, `the data folder grew by ${grown} bytes; the bound is ${FUNCTION_BYTES} and the margin ${MARGIN_BYTES}`).to.be.at.most(FUNCTION_BYTES + MARGIN_BYTES);
    const c = await counters(gw);
    expect(c['fnhost_refused_total:async_queue_function_bytes'] ?? 0).to.be.greaterThan(0);
    if (process.env.FNHOST_TEST_VERBOSE) process.stderr.write(`async-flood: sent ${sent}, ${JSON.stringify(statuses)}, folder +${grown} bytes, neighbour quiet p95 ${n.quiet!.p95Ms.toFixed(1)} ms, during p95 ${during.p95Ms.toFixed(1)} ms, ${during.ok}/${during.calls} ok\n`);
    n.expectServed(during, 'async flood');
    await n.expectRecovered('async flood');
    n.close();
  });
});
