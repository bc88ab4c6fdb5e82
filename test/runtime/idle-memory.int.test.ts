import { writeFileSync } from 'node:fs';
import { expect } from 'chai';
import { startGenericRuntime, startRuntime, type RunningRuntime } from './helpers/runtime.ts';

// What a process-isolated runtime does not load or keep while idle (lazy-source-map.ts, libraries.ts,
// memory.ts; docs/runtime.md "Where the memory goes").

const HANDLER = `
export default async (req, res) => {
  switch (req.path) {
    case '/loaded': return res.json({ crypto: process.moduleLoadList.includes('NativeModule crypto'), fsPromises: process.moduleLoadList.includes('NativeModule internal/fs/promises') });
    case '/big': return res.send('x'.repeat(Number(req.query.bytes)));
    case '/slow': await new Promise((r) => setTimeout(r, Number(req.query.ms))); return res.json({ slow: true });
    default: return res.json({ ok: true });
  }
};`;

describe('runtime: what an idle process-isolated runtime holds', function () {
  this.timeout(120_000);
  let rt: RunningRuntime | undefined;
  afterEach(async () => {
    await rt?.stop();
    rt = undefined;
  });

  it('answers without loading fs/promises (lazy-source-map reads with node:fs only), and with Express\'s weak ETag', async () => {
    rt = await startRuntime({ code: HANDLER, env: { FNHOST_ISOLATION: 'process' } });
    const hello = await fetch(`${rt.url}/`);
    expect(hello.headers.get('etag')).to.equal('W/"b-Ai2R8hgEarLmHKwesT1qcY913ys"');
    expect(((await (await fetch(`${rt.url}/loaded`)).json()) as { fsPromises: boolean }).fsPromises).to.equal(false);
    const big = await fetch(`${rt.url}/big?bytes=600`);
    expect(big.headers.get('etag')).to.equal('W/"258-saSvWBOG5ooauI7qDXEYBoB3LEo"');
  });

  it('a warm-pool runtime specialized into its function has not loaded fs/promises either', async () => {
    // With its spare handler host, as the one-machine gateway's pool starts them.
    const g = await startGenericRuntime({ env: { FNHOST_ISOLATION: 'process', FNHOST_WARM_WORKER_MEMORY_MIB: '128' } });
    rt = g;
    writeFileSync(`${g.dir}/fn.mjs`, HANDLER);
    expect((await g.specialize({ env: { FNHOST_FUNCTION_FILE: `${g.dir}/fn.mjs`, FNHOST_FUNCTION_NAME: 'spec', FNHOST_MEMORY_MIB: '128' } })).status).to.equal(200);
    expect((await fetch(`${rt.url}/`)).status).to.equal(200);
    expect(((await (await fetch(`${rt.url}/loaded`)).json()) as { fsPromises: boolean }).fsPromises).to.equal(false);
  });

  it('once idle (checks a second apart), a call still gets its 504 at its time limit, not up to a second late, and the runtime stays', async () => {
    rt = await startRuntime({ code: HANDLER, env: { FNHOST_ISOLATION: 'process' }, timeoutMs: 300 });
    expect((await fetch(`${rt.url}/`)).status).to.equal(200);
    // Idle past IDLE_AFTER_MS (5 s): nothing to wait on but the time itself.
    await new Promise((r) => setTimeout(r, 6_000));
    const started = Date.now();
    const slow = await fetch(`${rt.url}/slow?ms=10000`);
    expect(slow.status).to.equal(504);
    expect(Date.now() - started).to.be.lessThan(5_000);
    expect((await fetch(`${rt.url}/`)).status).to.equal(200);
    expect(rt.process.exitCode).to.equal(null);
  });
});
