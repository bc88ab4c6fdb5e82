import { expect } from 'chai';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pendingCallback, type AsyncCall, type AsyncCallback } from '@fnhost/core';
import { AsyncCallbackSender } from '../../gateway/src/async/callback-sender.ts';
import { callbackHeaders, type CallbackPayload } from '../../gateway/src/async/callback.ts';
import { MachineProtection } from '../../gateway/src/policy/machine.ts';
import { pollUntil } from '../helpers/wait.ts';

// The callback sender in one process (gateway/src/async/callback-sender.ts),
// with real sockets to a receiver on 127.0.0.1 and the name resolution
// injected: it dials the very address it checked (a second DNS answer, a
// rebind, is never asked for), a resolver that never answers ends the try at
// its time limit, and a receiver's endless answer is read up to its bound and
// the connection closed.

const payload: CallbackPayload = {
  functionId: 'f1', asyncId: 'async_AAAAAAAAAAAAAAAAAAAAAA', state: 'succeeded', attempt: 1, status: 200,
  headers: { 'content-type': 'application/json', connection: 'close', 'x-fnhost-execution-id': 'x', 'set-cookie': 'a=b' }, body: Buffer.from('{"ok":true}'), truncated: false, deadReason: null,
};

function listen(server: Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

describe('async callbacks: the sender', function () {
  this.timeout(30_000);
  const servers: Server[] = [];
  afterEach(async () => {
    for (const s of servers.splice(0)) {
      s.closeAllConnections();
      await new Promise((r) => s.close(r));
    }
  });

  function sender(port: number, lookup: (name: string) => Promise<string[]>, writes: AsyncCallback[] = [], timeoutMs = 10_000, hosts: string[] = ['*.test', '127.0.0.1']) {
    return new AsyncCallbackSender({
      callbackHosts: () => hosts,
      // Every write but the lease taken before the first try (attempts 0).
      store: { setCallback: async (_f, _id, cb) => { if (cb.attempts > 0) writes.push(cb); return true; }, claimCallbacks: async () => [] },
      settings: { maxInFlight: 4, timeoutMs, retryBaseMs: 10 },
      // As a function whose policy names the receiver's address and port.
      policies: async () => ({ global: null, fn: { default: 'allow', allow: [`127.0.0.1:${port}`], deny: [] }, platform: new MachineProtection([]) }),
      listener: () => ({ isMachine: () => false, ports: [] }),
      lookup,
      background: { failed: (task, err) => { throw err; } },
      now: () => 0,
    });
  }

  it('passes the function\'s headers but connection-scoped ones, cookies and x-fnhost-*, then the call\'s facts', () => {
    expect(callbackHeaders(payload)).to.deep.equal({
      'content-type': 'application/json', 'content-length': '11', 'user-agent': 'fnhost-callback/1', 'x-fnhost-function-id': 'f1',
      'x-fnhost-async-id': 'async_AAAAAAAAAAAAAAAAAAAAAA', 'x-fnhost-attempt': '1', 'x-fnhost-state': 'succeeded', 'x-fnhost-status': '200',
    });
  });

  it('dials the address it checked: the name is resolved once per try, the Host header keeps the name', async () => {
    const seen: IncomingHttpHeaders[] = [];
    const server = createServer((req, res) => {
      seen.push(req.headers);
      req.resume();
      req.on('end', () => res.end());
    });
    servers.push(server);
    const port = await listen(server);
    let lookups = 0;
    // The first answer is the checked one; any later answer would point at the metadata service.
    const s = sender(port, async () => (lookups++ === 0 ? ['127.0.0.1'] : ['169.254.169.254']));
    // rebind.test exists in no DNS: a second resolution by the HTTP client would fail with ENOTFOUND.
    const out = await s.tryOnce('f1', `http://rebind.test:${port}/hook`, payload);
    expect(out).to.deep.equal({ delivered: true, status: 200 });
    expect(lookups).to.equal(1);
    expect(seen).to.have.length(1);
    expect(seen[0]!.host).to.equal(`rebind.test:${port}`);
    expect(seen[0]!['x-fnhost-async-id']).to.equal(payload.asyncId);
  });

  it('a name that resolves to an address no rule names is refused at the first try, final, nothing sent', async () => {
    const writes: AsyncCallback[] = [];
    const s = sender(9, async () => ['127.0.0.1'], writes);
    s.deliver({ id: payload.asyncId, function_id: 'f1', callback: pendingCallback('http://evil.test:1234/') } as AsyncCall, payload);
    await pollUntil('the refusal written', async () => (writes.length > 0 ? true : undefined), 10_000, 10);
    expect(writes).to.have.length(1);
    expect(writes[0]).to.deep.include({ state: 'failed', attempts: 1, last_status: null });
    expect(writes[0]!.last_error).to.include('not sent: connection to evil.test:1234 blocked by network policy: it resolves to 127.0.0.1');
  });

  it('a host the function no longer lists is not sent to (the owner took it off after the call was accepted)', async () => {
    let lookups = 0;
    const out = await sender(9, async () => {
      lookups++;
      return ['127.0.0.1'];
    }, [], 10_000, ['other.example.com']).tryOnce('f1', 'http://rebind.test:9/hook', payload);
    expect(out).to.deep.include({ delivered: false, final: true });
    expect((out as { error: string }).error).to.include('not sent: X-Callback-Url host "rebind.test:9" is not one of this function\'s callback hosts').and.include('any more');
    expect(lookups).to.equal(0);
  });

  it('a resolver that never answers ends the try at its time limit, and the callback fails after its three tries', async () => {
    const writes: AsyncCallback[] = [];
    const s = sender(9, () => new Promise<string[]>(() => undefined), writes, 200);
    const started = performance.now();
    s.deliver({ id: payload.asyncId, function_id: 'f1', callback: pendingCallback('http://slow.test/') } as AsyncCall, payload);
    await pollUntil('three tries', async () => (writes.length === 3 ? true : undefined), 20_000, 10);
    expect(writes.map((w) => w.state)).to.deep.equal(['pending', 'pending', 'failed']);
    expect(writes[2]!.last_error).to.equal('resolving slow.test: ETIMEOUT');
    expect(performance.now() - started).to.be.below(15_000);
    expect(s.inFlight).to.equal(0);
  });

  it('reads a receiver\'s endless answer up to its bound, then closes the connection', async () => {
    let written = 0;
    let closed = false;
    const server = createServer((req, res) => {
      req.resume();
      res.writeHead(200);
      const chunk = Buffer.alloc(16 * 1024, 120);
      const pump = () => {
        // At most 16 MiB, so that the test itself is bounded.
        while (!res.destroyed && written < 16 * 1024 * 1024) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
      };
      res.on('close', () => (closed = true));
      pump();
    });
    servers.push(server);
    const port = await listen(server);
    const out = await sender(port, async () => ['127.0.0.1']).tryOnce('f1', `http://127.0.0.1:${port}/`, payload);
    expect(out).to.deep.equal({ delivered: true, status: 200 });
    await pollUntil('the receiver\'s connection closed', async () => (closed ? true : undefined), 10_000, 10);
    expect(written).to.be.below(16 * 1024 * 1024);
  });
});
