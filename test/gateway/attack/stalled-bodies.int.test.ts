import { connect, type Socket } from 'node:net';
import { expect } from 'chai';
import type { RunningGateway } from '../../helpers/platform.ts';
import { pollUntil } from '../../helpers/wait.ts';
import { Neighbour } from './neighbour.ts';
import { attackedGateway, counters, rssBytes } from './gateway-target.ts';

// Attack 3 of issue 27: CONNECTIONS connections each declare a 6 MiB body, send all of
// it but the last byte, and stall. At 021272b each such body was buffered whole: 150 of
// them added 0.75-0.8 GB to the gateway's RSS, and nothing bounded the total. Now every
// byte held is taken from the body memory budget first (FNHOST_BODY_MEMORY_BYTES,
// default 256 MiB; 503 with Retry-After past it), and a stalled body ends after the
// body idle timeout. The gateway's RSS may grow by at most the budget plus RSS_SLACK.

const CONNECTIONS = 150;
const BODY = 6 * 1024 * 1024;
const ATTACK_MS = 12_000;
const BUDGET = 256 * 1024 * 1024;
/**
 * What the gateway may hold besides the budget's bodies: socket buffers in flight, the refused
 * bodies' discarded chunks, allocator slack. Growth measured 254-294 MiB on a quiet run and once
 * 417 MiB with a full test suite beside it (more bytes in flight in kernel and user buffers while
 * the gateway waits for CPU); the bound, 480 MiB, stays far below the 750-800 MB the code before
 * the budget held, so the test still tells the two apart.
 */
const RSS_SLACK = 224 * 1024 * 1024;

async function stalledBodies(url: string, path: string, until: number): Promise<{ sent: number; answered: Record<string, number> }> {
  const { hostname, port } = new URL(url);
  const chunk = Buffer.alloc(BODY - 1, 0x61);
  const sockets: Socket[] = [];
  const answered: Record<string, number> = {};
  let sent = 0;
  for (let i = 0; i < CONNECTIONS; i++) {
    const socket = connect({ host: hostname, port: Number(port), localAddress: '127.0.0.1' });
    sockets.push(socket);
    socket.on('error', () => undefined);
    let head = '';
    socket.on('data', (d: Buffer) => {
      if (head === '') {
        head = d.toString('latin1').split('\r\n')[0] ?? '?';
        const status = head.split(' ')[1] ?? '?';
        answered[status] = (answered[status] ?? 0) + 1;
      }
    });
    socket.on('connect', () => {
      socket.write(`POST ${path} HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: application/octet-stream\r\nContent-Length: ${BODY}\r\n\r\n`);
      // All of the body but its last byte, then nothing.
      socket.write(chunk, () => {
        sent++;
      });
    });
  }
  await new Promise((r) => setTimeout(r, Math.max(0, until - Date.now())));
  for (const s of sockets) s.destroy();
  return { sent, answered };
}

describe('attack: stalled request bodies (issue 27, 3)', function () {
  this.timeout(240_000);
  let gw: RunningGateway | undefined;

  after(async () => {
    await gw?.stop();
  });

  it('holds at most the body budget, keeps the neighbour served, and reuses that memory for the next attack', async () => {
    const started = await attackedGateway(4096, { FNHOST_BODY_MEMORY_BYTES: String(BUDGET) });
    gw = started.gw;
    const n = await Neighbour.start(started.target);
    const before = await rssBytes(gw.pid);
    const mib = (b: number) => `${(b / 1048576).toFixed(0)} MiB`;
    const peaks: number[] = [];
    // Twice: the second round shows whether the memory the first one held is reused or lost (a leak
    // would add another budget's worth); each round's peak must stay within the budget plus slack.
    for (let round = 1; round <= 2; round++) {
      let peak = await rssBytes(gw.pid);
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          peak = Math.max(peak, await rssBytes(gw!.pid));
          await new Promise((r) => setTimeout(r, 100));
        }
      })();
      n.startProbing();
      const attack = await stalledBodies(gw.url, `/invoke/${n.functionId}/`, Date.now() + ATTACK_MS);
      const during = await n.stopProbing();
      sampling = false;
      await sampler;
      peaks.push(peak);
      const seen = await counters(gw);
      process.stdout.write(`      round ${round}: ${JSON.stringify(attack)}; RSS before ${mib(before)}, peak ${mib(peak)} (+${mib(peak - before)}); neighbour quiet p95 ${n.quiet!.p95Ms.toFixed(1)} ms, during ${JSON.stringify(during)}; body_memory refusals ${seen['fnhost_refused_total:body_memory']}\n`);
      n.expectServed(during, `stalled bodies, round ${round}`);
      expect(peak - before, `RSS growth ${mib(peak - before)} within the budget ${mib(BUDGET)} + ${mib(RSS_SLACK)}`).to.be.at.most(BUDGET + RSS_SLACK);
      expect(seen['fnhost_refused_total:body_memory'] ?? 0, 'bodies past the budget are refused and counted').to.be.at.least(round);
      // The budget is whole again once the connections closed: a body is accepted.
      await pollUntil('the body budget to be given back', async () => {
        const r = await fetch(`${gw!.url}/invoke/${n.functionId}/`, { method: 'POST', body: Buffer.alloc(1024 * 1024) });
        await r.arrayBuffer();
        return r.status === 200;
      }, 30_000, 250);
    }
    // Round 1's bodies, freed, are given back to the allocator at V8's next major GC, so round 2 may
    // meet some of them still held (measured +34 to +100 MiB); what must not happen is round 1's budget
    // staying taken (another 256 MiB): the refusals above show the budget whole, this the memory.
    expect(peaks[1]! - peaks[0]!, `the second round's peak (${mib(peaks[1]!)}) over the first's (${mib(peaks[0]!)})`).to.be.below(BUDGET * 0.75);
    await n.expectRecovered('stalled bodies');
    n.close();
  });
});
