import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startHarness, type Harness } from './harness.ts';

// A function author trying every spelling of the loopback address past a
// global deny of 127.0.0.0/8, through fetch in a real runtime. The denied
// server is a real TCP server on 127.0.0.1 that counts connections: a form
// that got through would show as a connection, one that was stopped shows as
// PolicyBlockedError before any connection.

const FORMS = [
  '0.0.0.0',
  '0',
  '[::ffff:127.0.0.1]',
  '[::ffff:7f00:1]',
  '[0:0:0:0:0:ffff:7f00:1]',
  '[::127.0.0.1]',
  '[::ffff:0:7f00:1]',
  '[64:ff9b::7f00:1]',
  '[::]',
  '[::1]',
  // The URL parser already turns these into 127.0.0.1, and a name is checked
  // by the addresses it resolves to; kept so that a runtime passing the raw
  // host text on, or skipping the resolution, is caught.
  '127.1',
  '0x7f.1',
  '0177.0.0.1',
  '2130706433',
  'localhost',
];

describe('network policy: every spelling of loopback is denied with 127.0.0.0/8 (real runtime, real fetch)', function () {
  this.timeout(60_000);
  let h: Harness;
  let target: Server;
  let port: number;
  let connections = 0;
  let requests = 0;
  let functionId: string;

  const tryFetch = async (host: string): Promise<{ reached: boolean; name?: string; message?: string }> => {
    const r = await h.invoke(functionId, '', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ url: `http://${host}:${port}/` }) });
    expect(r.status).to.equal(200);
    return (await r.json()) as { reached: boolean; name?: string; message?: string };
  };

  before(async () => {
    h = await startHarness();
    target = createServer((_req, res) => {
      requests++;
      res.end('denied server answered');
    });
    target.on('connection', () => connections++);
    await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
    port = (target.address() as AddressInfo).port;
    const fn = await h.createFunction('loopback-prober', `export default async (req, res) => {
      try { const r = await fetch(req.body.url); res.json({ reached: true, text: await r.text() }); }
      catch (err) { res.json({ reached: false, name: err.name, message: err.message }); }
    };`);
    functionId = fn.function_id;
  });
  after(async () => {
    await h?.close();
    target?.close();
  });

  it('with no policy at all every spelling is refused: the machine is protected by default (rule host, issue 29)', async () => {
    for (const host of FORMS) {
      const before = { connections, requests };
      const result = await tryFetch(host);
      expect(result, host).to.deep.include({ reached: false, name: 'PolicyBlockedError' });
      expect(result.message, host).to.match(/blocked by network policy.*global rule host/);
      expect({ connections, requests }, host).to.deep.equal(before);
    }
  });

  it('with the loopback named by an allow, the IPv4 and IPv4-mapped spellings reach the server (so the denials below are real)', async () => {
    expect((await h.api('PUT', '/api/v1/network-policy/global', { default: 'allow', allow: ['127.0.0.0/8', '0.0.0.0'] })).status).to.equal(200);
    for (const host of ['0.0.0.0', '127.1', '0x7f.1', '2130706433', '[::ffff:127.0.0.1]', '[::ffff:7f00:1]']) {
      const before = requests;
      expect(await tryFetch(host), host).to.deep.include({ reached: true });
      // Counted by request: fetch keeps the connection of an earlier spelling of the same address alive.
      expect(requests, host).to.equal(before + 1);
    }
  });

  describe('with 127.0.0.0/8 denied globally', () => {
    before(async () => {
      const put = await h.api('PUT', '/api/v1/network-policy/global', { default: 'allow', deny: ['127.0.0.0/8'] });
      expect(put.status).to.equal(200);
    });

    for (const host of FORMS) {
      it(`fetch('http://${host}:PORT/') is denied and the server sees no connection`, async () => {
        const before = { connections, requests };
        const result = await tryFetch(host);
        expect(result, host).to.deep.include({ reached: false, name: 'PolicyBlockedError' });
        expect(result.message).to.match(/blocked by network policy.*global rule 127\.0\.0\.0\/8/);
        expect({ connections, requests }).to.deep.equal(before);
      });
    }
  });
});
