import { expect } from 'chai';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { isAlive, startHarness, waitFor, type Harness } from './harness.ts';

describe('gateway local executor (real runtime processes)', function () {
  this.timeout(90_000);
  let h: Harness;
  before(async () => {
    // The executor's mechanics by host pid (kill, stop, recycle): unsandboxed, where a handler's
    // process.pid is its host pid. The sandboxed executor: test/gateway/sandbox.int.test.ts.
    h = await startHarness({ env: { FNHOST_MAX_TIMEOUT_SECONDS: '60', FNHOST_SANDBOX: 'off' } });
  });
  after(async () => {
    await h?.close();
  });

  it('starts a runtime when a function is created, and a killed runtime recovers on the next call', async () => {
    const fn = await h.createFunction('phoenix', 'export default (req, res) => res.json({ pid: process.pid })');
    const pid = await waitFor(() => h.platform.executor.pid(fn.function_id), 'the runtime to start eagerly on create');
    const first = await (await h.invoke(fn.function_id)).json();
    process.kill(pid!, 'SIGKILL');
    await waitFor(() => !isAlive(pid!), 'the runtime to die');
    const again = await h.invoke(fn.function_id);
    expect(again.status).to.equal(200);
    const second = await again.json();
    expect(second.pid).to.not.equal(first.pid);
    expect(h.platform.metrics.runtimeRestarts).to.be.greaterThan(0);
  });

  it('a handler stuck in while(true) gets 504 function_timeout at its limit, logged, and the next call works', async () => {
    const fn = await h.createFunction('spinner', `export default (req, res) => { if (req.query.spin) { while (true) {} } res.json({ ok: true }); }`, { timeout_seconds: 1 });
    const r = await h.invoke(fn.function_id, '?spin=1');
    expect(r.status).to.equal(504);
    expect((await r.json()).error).to.equal('function_timeout');
    const logs = await h.logs('spinner');
    expect(logs.logs[0]).to.include({ status_code: 504 });
    expect(logs.logs[0].error_message).to.match(/time limit|timeout|timed out/i);
    expect((await h.invoke(fn.function_id)).status).to.equal(200);
    // function:test meets the same failure under the same code, and records it the same way.
    const test = await h.api('POST', '/api/v1/functions/spinner/test', { method: 'GET', path: '/', query: { spin: '1' } });
    expect(test.status).to.equal(200);
    expect(test.body).to.include({ status_code: 504 });
    expect(test.body.body).to.deep.equal({ error: 'function_timeout', message: test.body.error_message });
    const after = await h.logs('spinner');
    expect(after.logs[0]).to.include({ id: test.body.log_id, status_code: 504, trigger: 'test', error_message: test.body.error_message });
  });

  it('enforces the limit itself when the runtime cannot answer at all: 504 logged, runtime recycled', async () => {
    const fn = await h.createFunction('frozen', `export default (req, res) => res.json({ ok: true })`, { timeout_seconds: 1 });
    expect((await h.invoke(fn.function_id)).status).to.equal(200);
    const pid = h.platform.executor.pid(fn.function_id)!;
    // A stopped process answers nothing, like a runtime whose main thread is stuck.
    process.kill(pid, 'SIGSTOP');
    try {
      const r = await h.invoke(fn.function_id);
      expect(r.status).to.equal(504);
      expect(await r.json()).to.deep.equal({ error: 'function_timeout', message: 'function exceeded its time limit of 1 s' });
      await waitFor(() => !isAlive(pid), 'the frozen runtime to be recycled');
    } finally {
      if (isAlive(pid)) process.kill(pid, 'SIGKILL');
    }
    const logs = await h.logs('frozen');
    expect(logs.logs[0]).to.include({ status_code: 504, error_message: 'function exceeded its time limit of 1 s' });
    expect((await h.invoke(fn.function_id)).status).to.equal(200);
  });

  it('restarts the runtime when the code changes, and stops it when the function is deactivated or deleted', async () => {
    const fn = await h.createFunction('shifty', `export default (req, res) => res.json({ v: 1 })`);
    expect(await (await h.invoke(fn.function_id)).json()).to.deep.equal({ v: 1 });
    const pid1 = h.platform.executor.pid(fn.function_id)!;
    const patched = await h.api('PATCH', '/api/v1/functions/shifty', { code: `export default (req, res) => res.json({ v: 2, env: process.env.GREETING })`, env: { GREETING: 'hi' } });
    expect(patched.status).to.equal(200);
    expect(await (await h.invoke(fn.function_id)).json()).to.deep.equal({ v: 2, env: 'hi' });
    await waitFor(() => !isAlive(pid1), 'the old runtime to stop');
    const pid2 = h.platform.executor.pid(fn.function_id)!;
    await h.api('POST', '/api/v1/functions/shifty/deactivate');
    await waitFor(() => !isAlive(pid2), 'deactivation to stop the runtime');
    await h.api('POST', '/api/v1/functions/shifty/activate');
    expect((await h.invoke(fn.function_id)).status).to.equal(200);
    const pid3 = h.platform.executor.pid(fn.function_id)!;
    const del = await h.api('DELETE', '/api/v1/functions/shifty');
    expect(del.status).to.equal(204);
    await waitFor(() => !isAlive(pid3), 'deletion to stop the runtime');
    expect(existsSync(join(h.dataDir, 'functions', fn.function_id))).to.equal(false);
    expect((await h.invoke(fn.function_id)).status).to.equal(404);
  });

  it('process isolation: a handler that calls process.exit() ends its runtime; the call is 502 recorded, a restart is counted, and the next call works in a new process', async () => {
    const fn = await h.createFunction('quitter', `export default (req, res) => { if (req.query.quit) process.exit(7); res.json({ pid: process.pid }); }`);
    const before = (await (await h.invoke(fn.function_id)).json()).pid;
    const restarts = h.platform.metrics.runtimeRestarts;
    const r = await h.invoke(fn.function_id, '?quit=1');
    expect(r.status).to.equal(502);
    await waitFor(() => !isAlive(before), 'the runtime to have exited');
    const logs = await h.logs('quitter');
    expect(logs.logs[0]).to.include({ status_code: 502 });
    const again = await h.invoke(fn.function_id);
    expect(again.status).to.equal(200);
    expect((await again.json()).pid).to.not.equal(before);
    expect(h.platform.metrics.runtimeRestarts).to.be.greaterThan(restarts);
  });

  it('logs an out-of-memory crash as out of memory', async function () {
    const fn = await h.createFunction('hog', `export default (req, res) => { const keep = []; for (;;) keep.push(new Array(1e6).fill(Math.random())); }`, { memory_mib: 32, timeout_seconds: 30 });
    const r = await h.invoke(fn.function_id);
    expect(r.status).to.equal(502);
    expect((await r.json()).error).to.equal('function_out_of_memory');
    const logs = await h.logs('hog');
    expect(logs.logs[0].status_code).to.equal(502);
    expect(logs.logs[0].error_message).to.match(/out of memory|heap/i);
  });
});
