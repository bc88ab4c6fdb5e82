import { expect } from 'chai';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import type { ExecutionLog, FunctionRecord, RecycleReason } from '@fnhost/core';
import { Invoker } from '../../gateway/src/invoke/proxy.ts';
import { Metrics } from '../../gateway/src/metrics.ts';
import { silentLogger } from '../../gateway/src/log.ts';
import { waitFor } from './harness.ts';

// The gateway's own defence behind the runtime's framing rules (gateway/src/invoke/upstream-answer.ts):
// a runtime that sends what no res.* method produces (its code changed, or raw bytes) stands here
// as a real TCP server answering raw HTTP. Each such answer is a 502 at once with a clear record,
// and the runtime is not recycled for it.

const RAW: Record<string, string> = {
  '/s101': 'HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n',
  '/s101-bare': 'HTTP/1.1 101 Switching Protocols\r\n\r\n',
  '/gzip': 'HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nnever ends',
  '/garbage': 'HTTP/1.1 200 OK\r\nContent-Length: nope\r\n\r\nx',
  '/ok': 'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok',
};

describe('answers a runtime sends that the gateway cannot pass on (raw upstream, real HTTP)', function () {
  this.timeout(60_000);
  let upstream: TcpServer;
  let front: Server;
  let invoker: Invoker;
  let url: string;
  const records: ExecutionLog[] = [];
  const recycled: RecycleReason[] = [];
  const fn: FunctionRecord = {
    function_id: '00000000-0000-4000-8000-000000000018', name: 'raw', namespace: 'default', code: '', env: {}, routes: [],
    timeout_seconds: 5, memory_mib: 128, active: true, retention: { type: 'none' }, schedule: null,
    created_at: '2026-01-01T00:00:00.000Z', updated_at: '2026-01-01T00:00:00.000Z',
  };

  before(async () => {
    upstream = createTcpServer((socket) => {
      let head = '';
      socket.on('data', (c: Buffer) => {
        head += c.toString('latin1');
        const end = head.indexOf('\r\n\r\n');
        if (end < 0) return;
        const path = /^[A-Z]+ (\S+)/.exec(head)![1]!;
        head = head.slice(end + 4);
        socket.write(RAW[path] ?? RAW['/ok']!);
      });
      socket.on('error', () => undefined);
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const origin = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
    invoker = new Invoker({
      functions: { byId: (id) => (id === fn.function_id ? fn : undefined) },
      executor: {
        acquire: async () => ({ origin }),
        recycle: (_id, reason) => void recycled.push(reason),
        sync: async () => undefined,
        close: async () => undefined,
      },
      recorder: { record: (log) => void records.push(log) },
      metrics: new Metrics(),
      logger: silentLogger,
      trustProxy: false,
    });
    front = createHttpServer((req, res) => invoker.handleHttp(req, res));
    await new Promise<void>((r) => front.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(front.address() as AddressInfo).port}/invoke/${fn.function_id}`;
  });
  after(async () => {
    await invoker?.close();
    front?.close();
    upstream?.close();
  });

  for (const [path, reason] of [
    ['/s101', /status 101 \(Switching Protocols\) to a call that asked for no upgrade/],
    ['/s101-bare', /status 101 \(Switching Protocols\) to a call that asked for no upgrade/],
    ['/gzip', /sent with Transfer-Encoding: gzip/],
    ['/garbage', /could not be parsed/],
  ] as const) {
    it(`${path}: a 502 with a generic body at once, the reason in the record, the runtime not recycled`, async () => {
      const before = records.length;
      const r = await fetch(url + path);
      expect(r.status).to.equal(502);
      expect(await r.json()).to.deep.equal({ error: 'invalid_response', message: 'internal error' });
      await waitFor(() => records.length > before, 'the record');
      const record = records[records.length - 1]!;
      expect(record.status_code).to.equal(502);
      expect(record.error_message).to.match(reason);
      expect(recycled).to.deep.equal([]);
      // The next call on the same upstream is served.
      const ok = await fetch(url + '/ok');
      expect(await ok.text()).to.equal('ok');
    });
  }

  it('a test or scheduled run of such an answer is refused the same way (the send path ./run.ts shares)', async () => {
    for (const [path, reason] of [['/gzip', /sent with Transfer-Encoding: gzip/], ['/s101-bare', /status 101/]] as const) {
      const result = await invoker.run(fn, 'test', { method: 'GET', path, headers: {}, body: null });
      expect(result.status_code, path).to.equal(502);
      expect(result.error_message, path).to.match(reason);
      expect(JSON.parse(result.body.toString())).to.deep.equal({ error: 'invalid_response', message: 'internal error' });
    }
    expect(recycled).to.deep.equal([]);
  });
});
