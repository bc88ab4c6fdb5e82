import { expect } from 'chai';
import { Agent, request } from 'node:http';
import { createServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import type { RunningGateway } from '../../helpers/platform.ts';
import { pollUntil } from '../../helpers/wait.ts';
import { attackedGateway, counters, managementApi } from './gateway-target.ts';
import { Neighbour, openDescriptors, type Target } from './neighbour.ts';

// Attack (issue 33, callbacks): a caller floods /async-invoke of a quick
// function whose owner allows callbacks, every call naming an X-Callback-Url
// on a tarpit: a receiver that takes the connection and never answers. Each
// callback then holds a connection (a descriptor) for its three tries of
// FNHOST_ASYNC_CALLBACK_TIMEOUT_MS. Without the bound on callbacks in flight
// they pile up with the calls the dispatcher ends, until the gateway's
// descriptors run out under the lowered limit; with it (here 16) the
// gateway holds at most 16, the rest are marked failed, counted in
// fnhost_refused_total{reason="async_callbacks_in_flight"} and logged, and
// the neighbour (synchronous calls from 127.0.0.2) keeps being served.
//
// Bounded: at most MAX_REQUESTS calls within ATTACK_MS, the tarpit holds at
// most MAX_REQUESTS × 3 connections, loopback only.

const NOFILE = 512;
const IN_FLIGHT = 16;
const ATTACK_MS = 8_000;
const MAX_REQUESTS = 1500;
const QUICK = `export default (req, res) => res.json({ ok: true })`;

describe('attack: async calls whose callbacks go to a tarpit (issue 33)', function () {
  this.timeout(240_000);
  let gw: RunningGateway;
  let target: Target;
  const held = new Set<Socket>();
  const tarpit = createServer((socket) => {
    held.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => held.delete(socket));
    socket.resume();
  });

  before(async () => {
    await new Promise<void>((resolve) => tarpit.listen(0, '127.0.0.1', resolve));
    ({ gw, target } = await attackedGateway(NOFILE, {
      FNHOST_ASYNC_CALLBACKS_IN_FLIGHT: String(IN_FLIGHT),
      FNHOST_ASYNC_CALLBACK_TIMEOUT_MS: '20000',
      FNHOST_ASYNC_POLL_MS: '50',
    }));
  });
  after(async () => {
    await gw?.stop();
    for (const s of held) s.destroy();
    await new Promise((r) => tarpit.close(r));
  });

  it('holds at most its bound of callbacks; the rest are refused, counted and logged; the neighbour is served', async () => {
    const port = (tarpit.address() as AddressInfo).port;
    const victim = await target.createFunction('cb-victim', QUICK, { async: { callback_hosts: [`127.0.0.1:${port}`] } });
    const api = managementApi(gw);
    expect((await api('PUT', '/api/v1/network-policy/functions/cb-victim', { default: 'allow', allow: [`127.0.0.1:${port}`], deny: [] })).status).to.equal(200);
    const n = await Neighbour.start(target);
    const agent = new Agent({ keepAlive: true, maxSockets: 8, localAddress: '127.0.0.1' });
    const statuses: Record<string, number> = {};
    let sent = 0;
    let mostHeld = 0;
    const until = Date.now() + ATTACK_MS;
    const one = () => new Promise<void>((resolve) => {
      const req = request(`${gw.url}/async-invoke/${victim.function_id}`, { method: 'POST', agent, headers: { 'x-callback-url': `http://127.0.0.1:${port}/tarpit` }, timeout: 30_000 }, (res) => {
        statuses[res.statusCode!] = (statuses[res.statusCode!] ?? 0) + 1;
        res.resume();
        res.on('end', () => resolve());
      });
      req.on('error', (err) => {
        statuses[err.message] = (statuses[err.message] ?? 0) + 1;
        resolve();
      });
      req.end();
    });

    n.startProbing();
    const watch = setInterval(() => (mostHeld = Math.max(mostHeld, held.size)), 50);
    await Promise.all(Array.from({ length: 8 }, async () => {
      while (Date.now() < until && sent < MAX_REQUESTS) {
        sent++;
        await one();
      }
    }));
    // The dispatcher ends the accepted calls after the flood: the callbacks keep coming until the queue is empty.
    await pollUntil('the queue drained', async () => {
      const r = await api('GET', '/api/v1/functions/cb-victim/async?state=queued,running&limit=1');
      return r.body.calls.length === 0 ? true : undefined;
    }, 120_000, 200);
    const during = await n.stopProbing();
    clearInterval(watch);
    agent.destroy();

    const c = await counters(gw);
    const refused = c['fnhost_refused_total:async_callbacks_in_flight'] ?? 0;
    if (process.env.FNHOST_TEST_VERBOSE) process.stderr.write(`callback-flood: sent ${sent}, ${JSON.stringify(statuses)}, refused ${refused}, most held by the tarpit ${mostHeld}, gateway descriptors ${await openDescriptors(gw.pid)}, neighbour quiet p95 ${n.quiet!.p95Ms.toFixed(1)} ms, during p95 ${during.p95Ms.toFixed(1)} ms, ${during.ok}/${during.calls} ok\n`);
    expect(statuses['202'] ?? 0, JSON.stringify(statuses)).to.be.greaterThan(IN_FLIGHT);
    expect(mostHeld, 'connections the tarpit held at once').to.be.at.most(IN_FLIGHT);
    expect(refused).to.be.greaterThan(0);
    expect(gw.output()).to.include('an async callback was not sent: the gateway had its bound of callbacks in flight');
    n.expectServed(during, 'callback flood');
    await n.expectRecovered('callback flood');
    n.close();
  });
});
