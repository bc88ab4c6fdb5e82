import { expect } from 'chai';
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { EgressProxy } from '../../gateway/src/egress/proxy.ts';
import { ConnectionCounts, ConnectionGuard, RefusalLog } from '../../gateway/src/internal/connection-bound.ts';
import { silentLogger } from '../../gateway/src/log.ts';
import { Metrics } from '../../gateway/src/metrics.ts';
import { pollUntil } from '../helpers/wait.ts';
import { startHarness, type Harness } from './harness.ts';

// The bound on open connections per function on shared listeners (cluster mode's TCP listeners,
// the unsandboxed machine), for real: connections from pods are admitted per source address at
// accept, and counted for the function their runtime token names from the first request. One
// machine's sandboxed case (a socket per sandbox) is the attack test
// test/gateway/attack/runtime-connections.int.test.ts. Loopback addresses stand in for pods.

const FUNCTION_ID = '00000000-0000-4000-8000-00000000000a';
const TOKEN = `${FUNCTION_ID}.runtime-secret-0123456789abcdef`;
const LIMIT = 8;

/** Opens a connection from localAddress and waits for it (or for its refusal: a 429 read and the close). */
function open(host: string, port: number, localAddress: string): Promise<{ socket: Socket; refused: Promise<boolean> }> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port, localAddress });
    let text = '';
    socket.on('data', (d) => (text += d));
    const refused = new Promise<boolean>((r) => socket.once('close', () => r(text.startsWith('HTTP/1.1 429'))));
    socket.once('connect', () => resolve({ socket, refused }));
    socket.once('error', reject);
  });
}

const closedWithin = (p: Promise<boolean>, ms: number) => Promise.race([p, new Promise<'open'>((r) => setTimeout(() => r('open'), ms))]);

describe('bounds on runtimes\' connections to shared listeners', function () {
  this.timeout(60_000);

  describe('the egress proxy\'s TCP listener (cluster mode)', () => {
    let proxy: EgressProxy;
    let metrics: Metrics;
    let host: string;
    let port: number;
    const sockets: Socket[] = [];

    before(async () => {
      metrics = new Metrics();
      const guard = new ConnectionGuard({ counts: new ConnectionCounts(LIMIT), reason: 'egress_connections_per_function', what: 'egress proxy', metrics, log: new RefusalLog(silentLogger), firstRequestTimeoutMs: 1_500 });
      proxy = new EgressProxy({
        tokens: { verify: (t) => (t === TOKEN ? FUNCTION_ID : undefined) },
        knows: () => true,
        policies: { get: async () => undefined } as never,
        logger: silentLogger,
        guard,
      });
      const address = await proxy.listenTcp('127.0.0.1', 0);
      [host, port] = [address.split(':')[0]!, Number(address.split(':')[1])];
    });
    after(async () => {
      for (const s of sockets) s.destroy();
      await proxy.close();
    });

    it('admits LIMIT connections per source address before a byte is sent, refuses the next at once with a 429, and ends idle ones at the first-request timeout', async () => {
      const fromA = await Promise.all(Array.from({ length: LIMIT }, () => open(host, port, '127.0.0.1')));
      sockets.push(...fromA.map((c) => c.socket));
      const over = await open(host, port, '127.0.0.1');
      expect(await closedWithin(over.refused, 5_000), 'the connection past the bound').to.equal(true);
      // Another address (another pod) has its own bound.
      const fromB = await open(host, port, '127.0.0.3');
      sockets.push(fromB.socket);
      expect(await closedWithin(fromB.refused, 300)).to.equal('open');
      expect(metrics.refusedCount('egress_connections_per_function')).to.equal(1);
      // None sent a request: all are ended after the first-request timeout (a plain close, no 429).
      expect(await closedWithin(fromA[0]!.refused, 5_000)).to.equal(false);
      expect(await closedWithin(fromB.refused, 5_000)).to.equal(false);
    });

    it('counts a connection for the function its credential names from the first request: past the bound across addresses, 429 and closed', async () => {
      const statuses: number[] = [];
      const agents: Socket[] = [];
      for (let i = 0; i < LIMIT + 2; i++) {
        // Each from its own address (its own pod), so the per-address bound is not what refuses.
        const c = await open(host, port, `127.0.1.${i + 1}`);
        agents.push(c.socket);
        sockets.push(c.socket);
        const status = await new Promise<number>((resolve) => {
          const req = request({ createConnection: () => c.socket, path: '/dns?name=localhost', headers: { 'proxy-authorization': `Bearer ${TOKEN}`, connection: 'keep-alive' } }, (res) => {
            res.resume();
            resolve(res.statusCode!);
          });
          req.on('error', () => resolve(0));
          req.end();
        });
        statuses.push(status);
      }
      expect(statuses.slice(0, LIMIT).every((s) => s !== 429), JSON.stringify(statuses)).to.equal(true);
      expect(statuses.slice(LIMIT), JSON.stringify(statuses)).to.deep.equal([429, 429]);
      await pollUntil('the refused connections closed', async () => agents.slice(LIMIT).every((s) => s.destroyed || s.readyState === 'closed' || s.readableEnded), 5_000, 50);
      // Closing one gives its place back.
      agents[0]!.destroy();
      await pollUntil('a place back', async () => {
        const c = await open(host, port, '127.0.2.1');
        sockets.push(c.socket);
        const s = await new Promise<number>((resolve) => {
          const req = request({ createConnection: () => c.socket, path: '/dns?name=localhost', headers: { 'proxy-authorization': `Bearer ${TOKEN}` } }, (res) => {
            res.resume();
            resolve(res.statusCode!);
          });
          req.on('error', () => resolve(0));
          req.end();
        });
        return s !== 429 && s !== 0;
      }, 5_000, 100);
    });
  });

  describe('a busy handler stays within the bound', () => {
    let h: Harness;
    before(async () => {
      h = await startHarness();
    });
    after(async () => {
      await h?.close();
    });

    it('200 kv calls at once from one handler all succeed: the runtime queues past 32 in flight rather than meet the bound of 64 connections', async () => {
      const fn = await h.createFunction('busy-kv', `export default async (req, res) => {
        const got = await Promise.allSettled(Array.from({ length: 200 }, (_, i) => kv.get('key-' + i)));
        res.json({ ok: got.filter((g) => g.status === 'fulfilled').length, errors: [...new Set(got.filter((g) => g.status === 'rejected').map((g) => String(g.reason?.message)))] });
      };`);
      const r = await h.invoke(fn.function_id, '/');
      expect(r.status).to.equal(200);
      expect(await r.json()).to.deep.equal({ ok: 200, errors: [] });
      expect(h.platform.metrics.refusedCount('internal_connections_per_function')).to.equal(0);
    });
  });

  describe('the internal API on the main listener (cluster mode, unsandboxed)', () => {
    let h: Harness;
    before(async () => {
      h = await startHarness({ env: { FNHOST_INTERNAL_CONNECTIONS_PER_FUNCTION: String(LIMIT) } });
    });
    after(async () => {
      await h?.close();
    });

    it('counts connections per runtime token: past the bound a request gets 429 with Retry-After and its connection is closed; other functions are not affected', async () => {
      const fn = await h.createFunction('holder', 'export default (req, res) => res.send("ok")');
      const other = await h.createFunction('other', 'export default (req, res) => res.send("ok")');
      const url = new URL(h.url);
      const kvGet = (token: string) => new Promise<{ status: number; retryAfter?: string; connection?: string; socket: Socket }>((resolve, reject) => {
        const socket = connect(Number(url.port), url.hostname);
        const req = request({ createConnection: () => socket, path: '/internal/v1/kv/k', headers: { authorization: `Bearer ${token}`, connection: 'keep-alive' } }, (res) => {
          res.resume();
          resolve({ status: res.statusCode!, retryAfter: res.headers['retry-after'], connection: res.headers.connection, socket });
        });
        req.on('error', reject);
        req.end();
      });
      const held: Socket[] = [];
      try {
        const token = h.platform.runtimeToken(fn.function_id);
        for (let i = 0; i < LIMIT; i++) {
          const r = await kvGet(token);
          held.push(r.socket);
          expect(r.status).to.equal(404);
        }
        const over = await kvGet(token);
        held.push(over.socket);
        expect(over.status).to.equal(429);
        expect(over.retryAfter).to.equal('1');
        expect(over.connection).to.equal('close');
        const neighbour = await kvGet(h.platform.runtimeToken(other.function_id));
        held.push(neighbour.socket);
        expect(neighbour.status).to.equal(404);
        expect(h.platform.metrics.refusedCount('internal_connections_per_function')).to.equal(1);
        // A place comes back when a connection closes.
        held[0]!.destroy();
        await pollUntil('a place back', async () => {
          const r = await kvGet(token);
          held.push(r.socket);
          return r.status === 404;
        }, 5_000, 100);
      } finally {
        for (const s of held) s.destroy();
      }
    });
  });
});
