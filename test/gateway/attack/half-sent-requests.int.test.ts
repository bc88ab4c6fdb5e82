import { connect, type Socket } from 'node:net';
import { expect } from 'chai';
import type { RunningGateway } from '../../helpers/platform.ts';
import { Neighbour, NEIGHBOUR_ADDRESS, callFrom, openDescriptors, type CallResult } from './neighbour.ts';
import { attackedGateway, counters } from './gateway-target.ts';
import { Agent } from 'node:http';

// Attack 1 of issue 27: one anonymous client opens many connections, each sending
// half a request head and then nothing, to use up the gateway's descriptors; a cold
// start meanwhile made the warm pool's refill throw EMFILE in a timer, and the
// gateway exited. Here under RLIMIT_NOFILE 1024 (prlimit), from 127.0.0.1, at most
// ATTACK_CONNECTIONS held at once (each one closed by the gateway is opened again)
// for ATTACK_MS. The gateway must bound the client (per-client and global bounds,
// the header timeout) and keep its reserve: the neighbour is served, the cold start
// succeeds, the gateway is the same process after.

const NOFILE = 1024;
const ATTACK_CONNECTIONS = 1500;
const ATTACK_MS = 15_000;
const MAX_ATTEMPTS = 20_000;

/** Holds up to `count` half-sent requests from 127.0.0.1 until `until`; resolves with what it did. */
async function halfSentRequests(url: string, path: string, count: number, until: number): Promise<{ opened: number; peak: number; refused: number }> {
  const { hostname, port } = new URL(url);
  const open = new Set<Socket>();
  let opened = 0;
  let peak = 0;
  let refused = 0;
  let attempts = 0;
  await new Promise<void>((resolve) => {
    const openOne = (): void => {
      if (Date.now() >= until || attempts >= MAX_ATTEMPTS) {
        if (open.size === 0) resolve();
        return;
      }
      attempts++;
      const socket = connect({ host: hostname, port: Number(port), localAddress: '127.0.0.1' });
      socket.setNoDelay(true);
      socket.on('connect', () => {
        opened++;
        open.add(socket);
        peak = Math.max(peak, open.size);
        // Half a request head, and then nothing.
        socket.write(`POST ${path} HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: text/plain\r\n`);
      });
      socket.on('data', () => {
        refused++;
      });
      socket.on('error', () => undefined);
      socket.on('close', () => {
        open.delete(socket);
        // Pressure kept: a closed one is opened again, until the attack's end.
        setImmediate(openOne);
        if (Date.now() >= until && open.size === 0) resolve();
      });
    };
    for (let i = 0; i < count; i++) openOne();
    // At the end, what is still open is closed by the attacker.
    setTimeout(() => {
      for (const s of open) s.destroy();
    }, Math.max(0, until - Date.now())).unref();
  });
  return { opened, peak, refused };
}

describe('attack: half-sent requests from one client (issue 27, 1)', function () {
  this.timeout(240_000);
  let gw: RunningGateway | undefined;

  after(async () => {
    await gw?.stop();
  });

  it('keeps the neighbour served and survives a cold start under RLIMIT_NOFILE 1024', async () => {
    const started = await attackedGateway(NOFILE);
    gw = started.gw;
    const n = await Neighbour.start(started.target);
    const cold = await started.target.createFunction('cold-start', `export default (req, res) => res.send('cold ok');`);
    // A function whose runtime has idled out... here: a second function created now starts on its first call.
    n.startProbing();
    // The neighbour's keep-alive connections were opened before the attack; a new caller needs a new
    // descriptor: one more prober from the neighbour's address opens a connection per call.
    const fresh = new Agent({ keepAlive: false });
    let freshStop = false;
    const freshResults: CallResult[] = [];
    const freshProbe = (async () => {
      while (!freshStop) freshResults.push(await callFrom(n.url, NEIGHBOUR_ADDRESS, fresh, 10_000));
    })();
    const attack = halfSentRequests(gw.url, `/invoke/${n.functionId}/`, ATTACK_CONNECTIONS, Date.now() + ATTACK_MS);
    // Mid-attack: a cold start takes the warm pool's runtime, and the pool refills.
    await new Promise((r) => setTimeout(r, 4_000));
    const fdsDuring = await openDescriptors(gw.pid);
    const coldAgent = new Agent();
    const coldCall = await callFrom(`${gw.url}/invoke/${cold.function_id}/`, NEIGHBOUR_ADDRESS, coldAgent, 30_000);
    coldAgent.destroy();
    const done = await attack;
    const during = await n.stopProbing();
    freshStop = true;
    await freshProbe;
    fresh.destroy();
    const freshOk = freshResults.filter((r) => r.status === 200).length;
    const seen = await counters(gw);
    process.stdout.write(`      attack: ${JSON.stringify(done)}; gateway fds mid-attack ${fdsDuring}/${NOFILE}; neighbour quiet p95 ${n.quiet!.p95Ms.toFixed(1)} ms, during ${JSON.stringify(during)}; new-connection calls ${freshOk}/${freshResults.length} ok; cold call ${JSON.stringify(coldCall)}; counters ${JSON.stringify(seen)}\n`);
    n.expectServed(during, 'half-sent requests');
    expect(freshOk / freshResults.length, 'calls on new connections from another client during the attack').to.be.at.least(0.95);
    expect(coldCall.status, 'the cold start during the attack').to.equal(200);
    expect(fdsDuring, 'the gateway keeps its descriptor reserve').to.be.below(NOFILE - 64);
    expect(seen['fnhost_refused_total:connections_per_client'] ?? 0, 'refusals are counted').to.be.greaterThan(0);
    await n.expectRecovered('half-sent requests');
    n.close();
  });
});
