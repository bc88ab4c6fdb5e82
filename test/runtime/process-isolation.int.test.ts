import { expect } from 'chai';
import { startGenericRuntime, startRuntime, type RunningRuntime } from './helpers/runtime.ts';

// FNHOST_ISOLATION=process (docs/runtime.md "Isolation: a thread or the process"): the handler runs
// on the runtime's main thread; what ends the handler ends the process, for its starter to replace.
// The thread mode's own cases are isolation.int.test.ts; through a gateway, test/gateway/executor.int.test.ts.

const HANDLER = `
export default async (req, res) => {
  switch (req.path) {
    case '/threads': return res.json({ workerThreads: process.moduleLoadList.includes('NativeModule worker_threads'), env: Object.keys(process.env).filter((k) => k.startsWith('FNHOST_')) });
    case '/block': { const until = Date.now() + Number(req.query.ms); while (Date.now() < until) {} return res.json({ late: true }); }
    case '/slow': await new Promise((r) => setTimeout(r, Number(req.query.ms))); return res.json({ slow: true });
    case '/oom': { const hog = []; while (true) hog.push(new Array(1e5).fill(hog.length)); }
    case '/throw': throw new Error('boom in process');
    default: console.log('hello from the main thread'); return res.json({ ok: true });
  }
};`;

function exited(rt: RunningRuntime): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (rt.process.exitCode !== null || rt.process.signalCode !== null) return Promise.resolve({ code: rt.process.exitCode, signal: rt.process.signalCode });
  return new Promise((resolve) => rt.process.once('exit', (code, signal) => resolve({ code, signal })));
}

describe('runtime: process isolation (FNHOST_ISOLATION=process)', function () {
  this.timeout(60_000);
  let rt: RunningRuntime | undefined;
  afterEach(async () => {
    await rt?.stop();
    rt = undefined;
  });

  it('runs the handler on the main thread: no worker_threads loaded, the function environment without FNHOST_*, errors and console as in a thread', async () => {
    rt = await startRuntime({ code: HANDLER, env: { FNHOST_ISOLATION: 'process' } });
    const r = await fetch(`${rt.url}/threads`);
    expect(await r.json()).to.deep.equal({ workerThreads: false, env: [] });
    const hello = await fetch(`${rt.url}/`);
    expect(await hello.json()).to.deep.equal({ ok: true });
    await rt.waitForLine(/hello from the main thread/);
    const thrown = await fetch(`${rt.url}/throw`);
    expect(thrown.status).to.equal(500);
    expect(thrown.headers.get('x-fnhost-error-kind')).to.equal('exception');
    expect(decodeURIComponent(thrown.headers.get('x-fnhost-error')!)).to.equal('Error: boom in process');
    expect(decodeURIComponent(thrown.headers.get('x-fnhost-error-stack')!)).to.match(/<module>:\d+:\d+/);
    expect((await fetch(`${rt.url}/`)).status).to.equal(200);
  });

  it('a slow handler that leaves its loop free gets 504 at its limit and the process stays', async () => {
    rt = await startRuntime({ code: HANDLER, env: { FNHOST_ISOLATION: 'process' }, timeoutMs: 300 });
    const r = await fetch(`${rt.url}/slow?ms=3000`);
    expect(r.status).to.equal(504);
    expect(r.headers.get('x-fnhost-error-kind')).to.equal('timeout');
    expect((await fetch(`${rt.url}/`)).status).to.equal(200);
    expect(rt.process.exitCode).to.equal(null);
  });

  it('a handler that blocks the loop past its limit: its call and the one beside it are answered when the loop turns, and the process exits to be replaced', async () => {
    rt = await startRuntime({ code: HANDLER, env: { FNHOST_ISOLATION: 'process' }, timeoutMs: 500 });
    expect((await fetch(`${rt.url}/`)).status).to.equal(200);
    const end = exited(rt);
    const beside = fetch(`${rt.url}/slow?ms=400`);
    await new Promise((r) => setTimeout(r, 50));
    const blocked = await fetch(`${rt.url}/block?ms=1500`);
    expect(blocked.status).to.equal(504);
    expect(blocked.headers.get('x-fnhost-error-kind')).to.equal('timeout');
    // The call beside it was held by the same (blocked) process: it ends with it, as calls on a terminated worker do.
    const other = await beside;
    expect([502, 504]).to.include(other.status);
    expect(await end).to.deep.equal({ code: 3, signal: null });
    expect(rt.lines.join('\n')).to.match(/function runtime ending; its starter replaces it/);
  });

  it('out of memory ends the process with V8\'s heap message (what the gateway reads), at the heap limit its starter gave it', async () => {
    rt = await startRuntime({ code: HANDLER, env: { FNHOST_ISOLATION: 'process', NODE_OPTIONS: '--max-old-space-size=32' }, memoryMiB: 32, timeoutMs: 30_000 });
    const end = exited(rt);
    const r = await fetch(`${rt.url}/oom`).catch((err: Error) => err);
    expect(r).to.be.instanceOf(Error);
    const { code } = await end;
    expect(code).to.not.equal(0);
    expect(rt.lines.join('\n')).to.match(/heap out of memory/i);
  });

  it('a generic runtime loads the handler host ahead on its main thread and is specialized into it', async () => {
    const g = await startGenericRuntime({ env: { FNHOST_ISOLATION: 'process', FNHOST_WARM_WORKER_MEMORY_MIB: '128' } });
    rt = g;
    const { writeFile } = await import('node:fs/promises');
    await writeFile(`${g.dir}/fn.mjs`, HANDLER);
    const s = await g.specialize({ env: { FNHOST_FUNCTION_FILE: `${g.dir}/fn.mjs`, FNHOST_FUNCTION_NAME: 'spec', FNHOST_MEMORY_MIB: '128', GREETING: 'hi' } });
    expect(s.status).to.equal(200);
    await g.waitForLine(/"warm_worker":true/);
    const r = await fetch(`${g.url}/threads`);
    expect(await r.json()).to.deep.equal({ workerThreads: false, env: [] });
    // FNHOST_ISOLATION is the generic runtime's own: a specialization may not change it.
    expect((await g.specialize({ env: { FNHOST_FUNCTION_FILE: `${g.dir}/fn.mjs`, FNHOST_ISOLATION: 'thread' } })).status).to.be.oneOf([400, 409]);
  });

  it('refuses an unknown FNHOST_ISOLATION naming the value', async () => {
    const err = await startRuntime({ code: HANDLER, env: { FNHOST_ISOLATION: 'fiber' } }).then(
      (started) => {
        rt = started;
        return undefined;
      },
      (e: Error) => e,
    );
    expect(err?.message).to.match(/FNHOST_ISOLATION=\\"fiber\\" must be thread or process/);
  });
});
