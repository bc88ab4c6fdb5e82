import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Pool } from 'undici';
import { requestUpstream } from '../../gateway/src/invoke/upstream-request.ts';

// The invocation path's call to a runtime (gateway/src/invoke/upstream-request.ts) against a real
// node:http server over a real undici Pool: a body read whole, streamed (with backpressure, every
// byte in order), discarded keeping the connection, cut, and a connection that fails before any
// answer. Each runs on a deadline-bounded server: no sleeps.

const BIG = 4 * 1024 * 1024;

describe('upstream calls through undici dispatch (real HTTP)', function () {
  this.timeout(60_000);
  let server: Server;
  let pool: Pool;
  let connections = 0;
  let aborted = 0;

  before(async () => {
    server = createServer((req, res) => {
      if (req.url === '/small') {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': '17' });
        res.end('{"hello":"world"}');
        return;
      }
      if (req.url === '/chunked') {
        // 4 MiB in 64 KiB chunks, chunked encoding, written as the socket drains.
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        let sent = 0;
        const write = (): void => {
          while (sent < BIG) {
            const chunk = Buffer.alloc(64 * 1024, sent / (64 * 1024));
            sent += chunk.length;
            if (!res.write(chunk)) {
              res.once('drain', write);
              return;
            }
          }
          res.end();
        };
        res.on('close', () => {
          if (!res.writableFinished) aborted++;
        });
        write();
        return;
      }
      if (req.url === '/endless') {
        // Written as the socket drains until the client goes: a cut is always an abort here, where
        // a finite body can sit whole in loopback's socket buffers before a loaded client cuts it.
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        let stopped = false;
        const write = (): void => {
          while (!stopped && res.write(Buffer.alloc(64 * 1024, 7)));
          if (!stopped) res.once('drain', write);
        };
        res.on('close', () => {
          stopped = true;
          aborted++;
        });
        write();
        return;
      }
      if (req.url === '/medium') {
        res.writeHead(200, { 'content-length': String(100 * 1024) });
        res.end(Buffer.alloc(100 * 1024, 1));
        return;
      }
      res.writeHead(404, { 'content-length': '0' });
      res.end();
    });
    server.on('connection', () => connections++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    pool = new Pool(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, { connections: 1, pipelining: 1 });
  });

  after(async () => {
    await pool.destroy();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('reads a small answer whole, with its status and headers', async () => {
    const r = await requestUpstream(pool, { path: '/small', method: 'GET', headers: {} });
    expect(r.statusCode).to.equal(200);
    expect(r.headers['content-type']).to.equal('application/json');
    expect((await r.body.whole()).toString()).to.equal('{"hello":"world"}');
  });

  it('streams a large chunked answer in order, every byte', async () => {
    const r = await requestUpstream(pool, { path: '/chunked', method: 'GET', headers: {} });
    let size = 0;
    let chunkIndexOk = true;
    for await (const chunk of r.body.stream() as AsyncIterable<Buffer>) {
      // Each 64 KiB block of the server is filled with its index: bytes arrive in order.
      if (chunk[0] !== Math.floor(size / (64 * 1024)) % 256) chunkIndexOk = false;
      size += chunk.length;
    }
    expect(size).to.equal(BIG);
    expect(chunkIndexOk).to.equal(true);
  });

  it('discards a body under the dump limit and keeps the connection for the next call', async () => {
    const before = connections;
    const r = await requestUpstream(pool, { path: '/medium', method: 'GET', headers: {} });
    await r.body.dump();
    const next = await requestUpstream(pool, { path: '/small', method: 'GET', headers: {} });
    expect((await next.body.whole()).toString()).to.equal('{"hello":"world"}');
    expect(connections).to.equal(before);
  });

  it('cuts the connection of a destroyed body, and of a streamed body whose reader stops', async () => {
    const r = await requestUpstream(pool, { path: '/endless', method: 'GET', headers: {} });
    r.body.destroy();
    const deadline = Date.now() + 20_000;
    while (aborted < 1 && Date.now() < deadline) await new Promise((resolve) => setImmediate(resolve));
    expect(aborted).to.equal(1);
    const s = await requestUpstream(pool, { path: '/endless', method: 'GET', headers: {} });
    for await (const chunk of s.body.stream() as AsyncIterable<Buffer>) {
      void chunk;
      break; // the reader stops: the stream is destroyed, the connection cut
    }
    while (aborted < 2 && Date.now() < deadline) await new Promise((resolve) => setImmediate(resolve));
    expect(aborted).to.equal(2);
    // The pool goes on with a new connection.
    const next = await requestUpstream(pool, { path: '/small', method: 'GET', headers: {} });
    expect((await next.body.whole()).toString()).to.equal('{"hello":"world"}');
  });

  it('rejects when nothing answers, and when undici refuses a header before sending', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const dead = new Pool(`http://127.0.0.1:${port}`);
    try {
      const err = await requestUpstream(dead, { path: '/', method: 'GET', headers: {} }).then(() => undefined, (e: unknown) => e as { code?: string });
      expect(err?.code).to.equal('ECONNREFUSED');
    } finally {
      await dead.destroy();
    }
    const refused = await requestUpstream(pool, { path: '/small', method: 'GET', headers: { 'transfer-encoding': 'chunked', expect: '100-continue' } }).then(() => undefined, (e: unknown) => e as Error);
    expect(refused).to.be.instanceOf(Error);
  });
});
