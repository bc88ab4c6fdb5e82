import { expect } from 'chai';
import { isAlive, startHarness, waitFor, type Harness } from './harness.ts';

// Runtimes idle for FNHOST_RUNTIME_IDLE_SECONDS stop (docs/gateway.md "Runtime processes"), on
// real runtime processes (sandboxed where the machine allows it) and the real clock, with the
// shortest setting: a function's process is gone after idling, the next call is served by a
// new one and recorded, and a call in flight across the deadline is never cut.

// ?hold waits until a ?go call of the same function has set the KV key 'go'.
const HOLDER = `
export default async (req, res) => {
  if (req.query.go) { await kv.set('go', 1); return res.json({ released: true }); }
  if (req.query.hold) { while ((await kv.get('go')) !== 1) await new Promise((r) => setTimeout(r, 25)); }
  res.json({ held: req.query.hold === '1' });
};`;

describe('gateway local executor: idle runtimes stop (real processes)', function () {
  this.timeout(120_000);
  let h: Harness;
  before(async () => {
    h = await startHarness({ env: { FNHOST_RUNTIME_IDLE_SECONDS: '1', FNHOST_MAX_TIMEOUT_SECONDS: '120' } });
  });
  after(async () => {
    await h?.close();
  });

  const runningPid = async (id: string): Promise<number> => (await waitFor(() => h.platform.executor.pid(id), `a runtime for ${id}`))!;

  it('a runtime idle past the setting is gone; the next call answers 200 from a new one, and both calls are recorded', async () => {
    const fn = await h.createFunction('sleepy', `export default (req, res) => res.json({ ok: true })`);
    expect((await h.invoke(fn.function_id)).status).to.equal(200);
    const pid = await runningPid(fn.function_id);
    const stopsBefore = h.platform.metrics.runtimeIdleStops;

    await waitFor(() => !isAlive(pid), 'the idle runtime process to end');
    expect(h.platform.executor.pid(fn.function_id), 'no runtime kept for the function').to.equal(undefined);
    expect(h.platform.metrics.runtimeIdleStops).to.be.greaterThan(stopsBefore);

    const again = await h.invoke(fn.function_id);
    expect(again.status).to.equal(200);
    expect(await again.json()).to.deep.equal({ ok: true });
    expect(h.platform.executor.pid(fn.function_id)).to.not.equal(pid);
    const logs = await h.logs('sleepy');
    expect(logs.logs.map((l: { status_code: number }) => l.status_code)).to.deep.equal([200, 200]);
  });

  it('a call in flight when the idle deadline passes is not cut: its runtime stays up and it answers 200', async () => {
    const holder = await h.createFunction('holder', HOLDER, { timeout_seconds: 120 });
    const other = await h.createFunction('other', `export default (req, res) => res.json({ ok: true })`);
    const held = h.invoke(holder.function_id, '?hold=1');
    await waitFor(() => h.platform.invoker.inflight === 1, 'the held call to be in flight');
    const holderPid = await runningPid(holder.function_id);

    // The other function's last call ends after the held call began, so its deadline is later than
    // the holder's would be: once its runtime is gone, the holder's deadline has passed too.
    expect((await h.invoke(other.function_id)).status).to.equal(200);
    const otherPid = await runningPid(other.function_id);
    await waitFor(() => !isAlive(otherPid), 'the other function’s idle runtime to end');
    expect(isAlive(holderPid), 'the runtime with a call in flight is still running').to.equal(true);
    expect(h.platform.executor.pid(holder.function_id)).to.equal(holderPid);

    expect((await h.invoke(holder.function_id, '?go=1')).status).to.equal(200);
    const response = await held;
    expect(response.status).to.equal(200);
    expect(await response.json()).to.deep.equal({ held: true });
    const logs = await h.logs('holder');
    expect(logs.logs.map((l: { status_code: number; error_message: string | null }) => [l.status_code, l.error_message])).to.deep.equal([[200, null], [200, null]]);

    // Once its calls have ended it idles like any other.
    await waitFor(() => !isAlive(holderPid), 'the holder’s runtime to end after its calls');
  });
});
