import { connect, type Socket } from 'node:net';
import { expect } from 'chai';
import { startGateway, type RunningGateway } from '../helpers/platform.ts';
import { pollUntil } from '../helpers/wait.ts';
import { counters } from './attack/gateway-target.ts';

// The body memory budget and the body idle timeout on a real gateway process
// (gateway/src/invoke/body-budget.ts): a body past the budget is refused at once with
// 503 body_memory and Retry-After, a body that stops arriving ends with 408, both
// counted, and the budget is whole again afterwards.

const MIB = 1024 * 1024;

/** Sends a head declaring `declared` bytes and `send` bytes of body; resolves with the first answer line (or how it ended). */
function partialBody(url: string, path: string, declared: number, send: number, sockets: Socket[]): Promise<{ line: string; raw: string }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const s = connect({ host: hostname, port: Number(port) });
    sockets.push(s);
    let raw = '';
    s.on('data', (d: Buffer) => (raw += d.toString('latin1')));
    s.on('error', () => undefined);
    s.on('close', () => resolve({ line: raw.split('\r\n')[0] || 'closed', raw }));
    s.on('connect', () => {
      s.write(`POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Length: ${declared}\r\n\r\n`);
      if (send > 0) s.write(Buffer.alloc(send, 0x62));
    });
  });
}

describe('gateway body budget and body idle timeout (issue 27, 3)', function () {
  this.timeout(120_000);
  let gw: RunningGateway;

  before(async () => {
    gw = await startGateway({ env: { FNHOST_BODY_MEMORY_BYTES: String(6 * MIB), FNHOST_BODY_IDLE_TIMEOUT_MS: '1500' } });
  });
  after(async () => {
    await gw?.stop();
  });

  it('refuses a body past the budget with 503 and Retry-After, ends a stalled one with 408, and gives the budget back', async () => {
    const r = await fetch(`${gw.url}/api/v1/functions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'echo-size', code: `export default (req, res) => res.send(String(req.body?.length ?? 0));` }),
    });
    const fn = (await r.json()) as { function_id: string };
    const path = `/invoke/${fn.function_id}/`;
    const sockets: Socket[] = [];
    // Holds 4 MiB of the 6 MiB budget, then stalls.
    const stalled = partialBody(gw.url, path, 4 * MIB, 1 * MIB, sockets);
    await new Promise((res) => setTimeout(res, 200));
    // 4 MiB more does not fit: refused at once, never read.
    const refused = await partialBody(gw.url, path, 4 * MIB, 0, sockets);
    expect(refused.line).to.equal('HTTP/1.1 503 Service Unavailable');
    expect(refused.raw).to.match(/retry-after: 1/i);
    expect(refused.raw).to.include('"error":"body_memory"');
    // The stalled body ends after the idle timeout, with 408.
    const ended = await stalled;
    expect(ended.line).to.equal('HTTP/1.1 408 Request Timeout');
    expect(ended.raw).to.include('"error":"request_timeout"');
    // The budget is whole again: a 5 MiB body is served.
    await pollUntil('a 5 MiB body to be served', async () => {
      const ok = await fetch(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body: Buffer.alloc(5 * MIB) });
      return ok.status === 200 && (await ok.text()) !== '';
    }, 20_000, 200);
    const seen = await counters(gw);
    expect(seen['fnhost_refused_total:body_memory']).to.equal(1);
    expect(seen['fnhost_refused_total:body_timeout']).to.equal(1);
    for (const s of sockets) s.destroy();
  });
});
