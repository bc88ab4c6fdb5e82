import { readFileSync, writeFileSync } from 'node:fs';
import { expect } from 'chai';
import { startGenericRuntime, startRuntime, type RunningRuntime } from './helpers/runtime.ts';

// What an idle process-isolated runtime gives back (runtime-image/src/memory.ts; docs/runtime.md
// "Where the memory goes"): one memory-reducing collection once it has idled IDLE_GC_MS after its
// calls, with no call to prompt it, and no `gc` for the handler to see.

const HANDLER = `
let held;
export default async (req, res) => {
  switch (req.path) {
    // Old-generation memory the handler keeps, then lets go of: only a full collection frees it.
    case '/hold': held = Array.from({ length: Number(req.query.mib) * 16 }, () => new Array(8192).fill(1.5)); return res.json({ held: held.length });
    case '/release': held = undefined; return res.json({ released: true });
    case '/gc': return res.json({ gc: typeof globalThis.gc });
    case '/loaded': return res.json({ crypto: process.moduleLoadList.includes('NativeModule crypto'), fsPromises: process.moduleLoadList.includes('NativeModule internal/fs/promises') });
    case '/big': return res.send('x'.repeat(Number(req.query.bytes)));
    case '/slow': await new Promise((r) => setTimeout(r, Number(req.query.ms))); return res.json({ slow: true });
    default: return res.json({ ok: true });
  }
};`;

/** Anonymous resident memory of a process, MiB (RssAnon of /proc/<pid>/status). */
function anonMiB(pid: number): number {
  return Number(/RssAnon:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
}

async function until(what: string, deadlineMs: number, test: () => boolean): Promise<void> {
  const end = Date.now() + deadlineMs;
  while (!test()) {
    if (Date.now() > end) throw new Error(`not within ${deadlineMs} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('runtime: an idle process-isolated runtime gives memory back', function () {
  this.timeout(120_000);
  let rt: RunningRuntime | undefined;
  afterEach(async () => {
    await rt?.stop();
    rt = undefined;
  });

  it('answers small bodies without loading node:crypto (its own SHA-1 for the ETag) or fs/promises; a larger body loads crypto, with the same ETag', async () => {
    rt = await startRuntime({ code: HANDLER, env: { FNHOST_ISOLATION: 'process' } });
    const hello = await fetch(`${rt.url}/`);
    expect(hello.headers.get('etag')).to.equal('W/"b-Ai2R8hgEarLmHKwesT1qcY913ys"');
    expect(await (await fetch(`${rt.url}/loaded`)).json()).to.deep.equal({ crypto: false, fsPromises: false });
    const big = await fetch(`${rt.url}/big?bytes=600`);
    expect(big.headers.get('etag')).to.equal('W/"258-saSvWBOG5ooauI7qDXEYBoB3LEo"');
    expect(await (await fetch(`${rt.url}/loaded`)).json()).to.deep.equal({ crypto: true, fsPromises: false });
  });

  it('a warm-pool runtime specialized into its function has not loaded node:crypto either (the token is compared in JavaScript)', async () => {
    // With its spare handler host, as the one-machine gateway's pool starts them.
    const g = await startGenericRuntime({ env: { FNHOST_ISOLATION: 'process', FNHOST_WARM_WORKER_MEMORY_MIB: '128' } });
    rt = g;
    writeFileSync(`${g.dir}/fn.mjs`, HANDLER);
    expect((await g.specialize({ env: { FNHOST_FUNCTION_FILE: `${g.dir}/fn.mjs`, FNHOST_FUNCTION_NAME: 'spec', FNHOST_MEMORY_MIB: '128' } })).status).to.equal(200);
    expect((await fetch(`${rt.url}/`)).status).to.equal(200);
    expect(await (await fetch(`${rt.url}/loaded`)).json()).to.deep.equal({ crypto: false, fsPromises: false });
  });

  it('collects what its calls left once idle, with no call to prompt it; the handler sees no gc; calls after it keep their time limit', async () => {
    rt = await startRuntime({ code: HANDLER, env: { FNHOST_ISOLATION: 'process' }, timeoutMs: 1000 });
    const pid = rt.process.pid!;
    expect(await (await fetch(`${rt.url}/hold?mib=40`)).json()).to.deep.equal({ held: 640 });
    expect((await fetch(`${rt.url}/release`)).status).to.equal(200);
    const released = anonMiB(pid);
    expect(released, 'the 40 MiB the handler held are still resident before the collection').to.be.greaterThan(45);
    // No calls from here on: only the runtime's own idle collection can give the memory back.
    await until(`the idle runtime's anonymous memory drops by 20 MiB from ${released.toFixed(1)} MiB`, 60_000, () => anonMiB(pid) < released - 20);
    expect(await (await fetch(`${rt.url}/gc`)).json()).to.deep.equal({ gc: 'undefined' });
    // Checks a second apart once idle: a call arriving then still gets its 504 at its limit, not up to a second late.
    const started = Date.now();
    const slow = await fetch(`${rt.url}/slow?ms=10000`);
    expect(slow.status).to.equal(504);
    expect(Date.now() - started).to.be.lessThan(5_000);
    expect((await fetch(`${rt.url}/`)).status).to.equal(200);
    expect(rt.process.exitCode).to.equal(null);
  });
});
