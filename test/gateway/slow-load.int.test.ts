import { expect } from 'chai';
import { isAlive, startHarness, waitFor, type Harness } from './harness.ts';

// A function whose module loads for longer than its time limit (a top level that awaits the
// network, a heavy import) comes up again after its runtime dies (docs/gateway.md "A load longer
// than the time limit"): the load is counted apart from the calls' limit, a call that waits for
// it is answered 504 at its own limit without ending the runtime that loads, and a load that never
// ends is ended at the load bound, with a log line and records that say so. Real gateway, real
// runtime processes (sandboxed where the machine allows it), the real clock.

const SLOW_AWAIT = `
await new Promise((r) => setTimeout(r, 3000));
export default (req, res) => res.end('ok');`;

// A top level that blocks its thread for 3 s (what a heavy import does), not an await.
const SLOW_BLOCK = `
const until = Date.now() + 3000;
while (Date.now() < until) {}
export default (req, res) => res.end('ok');`;

// Loads at once unless its env sets HANG; then its load waits for ever (a network call that never answers).
const HANGS_WITH_ENV = `
if (process.env.HANG === '1') await new Promise(() => {});
export default (req, res) => res.end('ok');`;

interface Outcome {
  status: number;
  body: string;
  ms: number;
}

describe('gateway local executor: a module load longer than the time limit (real processes)', function () {
  this.timeout(180_000);
  let h: Harness;
  before(async () => {
    h = await startHarness({ env: { FNHOST_LOAD_TIMEOUT_SECONDS: '8' } });
  });
  after(async () => {
    await h?.close();
  });

  const runningPid = async (id: string): Promise<number> => (await waitFor(() => h.platform.executor.pid(id), `a runtime for ${id}`))!;

  const call = async (id: string, path = ''): Promise<Outcome> => {
    const t = performance.now();
    const r = await h.invoke(id, path);
    return { status: r.status, body: await r.text(), ms: performance.now() - t };
  };

  /** Calls one after another until one answers 200 (within deadlineMs); returns every outcome. */
  const callUntilServed = async (id: string, deadlineMs: number): Promise<Outcome[]> => {
    const outcomes: Outcome[] = [];
    const until = performance.now() + deadlineMs;
    while (performance.now() < until) {
      const o = await call(id);
      outcomes.push(o);
      if (o.status === 200) return outcomes;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`no call answered 200 within ${deadlineMs} ms: ${JSON.stringify(outcomes.map((o) => [o.status, o.body.slice(0, 120)]))}`);
  };

  for (const [kind, code] of [['awaits for 3 s', SLOW_AWAIT], ['blocks its thread for 3 s', SLOW_BLOCK]] as const) {
    it(`a module that ${kind} with a 1 s limit comes up after its runtime is killed, and later calls succeed`, async () => {
      const fn = await h.createFunction(`slow-${kind.split(' ')[0]}`, code, { timeout_seconds: 1 });
      const loaded = await call(fn.function_id);
      expect(loaded.status, `the runtime the create loaded answers: ${loaded.body}`).to.equal(200);
      const pid = await runningPid(fn.function_id);
      const restartsBefore = h.platform.metrics.runtimeRestarts;
      process.kill(pid, 'SIGKILL');
      await waitFor(() => !isAlive(pid), 'the killed runtime to end');

      const outcomes = await callUntilServed(fn.function_id, 60_000);
      const waited = outcomes.slice(0, -1);
      for (const o of waited) {
        expect(o.status, o.body).to.equal(504);
        expect(JSON.parse(o.body).error).to.equal('function_timeout');
        // Answered at its own limit (+ the gateway's 1 s grace), not held until the load ends.
        expect(o.ms).to.be.within(1000, 4000);
      }
      // One restart: the kill. The runtime that loads is never recycled by a call's deadline.
      expect(h.platform.metrics.runtimeRestarts - restartsBefore).to.equal(1);
      const served = await runningPid(fn.function_id);
      for (let i = 0; i < 5; i++) expect((await call(fn.function_id)).status).to.equal(200);
      expect(h.platform.executor.pid(fn.function_id), 'the same runtime serves the later calls').to.equal(served);

      const records = (await h.logs(fn.name, '?limit=100')).logs as Array<{ status_code: number; error_message: string | null }>;
      const timeouts = records.filter((r) => r.status_code === 504);
      expect(timeouts.length).to.equal(waited.length);
      for (const r of timeouts) expect(r.error_message).to.match(/time limit of 1 s while its runtime was still starting and loading its module/);
    });
  }

  it('after an idle stop, the next calls wait for the slow load and the function comes up', async () => {
    const idle = await startHarness({ env: { FNHOST_RUNTIME_IDLE_SECONDS: '1', FNHOST_LOAD_TIMEOUT_SECONDS: '8' } });
    try {
      const fn = await idle.createFunction('slow-idle', SLOW_AWAIT, { timeout_seconds: 1 });
      const pid = (await waitFor(() => idle.platform.executor.pid(fn.function_id), 'its runtime'))!;
      await waitFor(() => !isAlive(pid), 'the idle runtime to stop');
      const until = performance.now() + 60_000;
      let served = false;
      while (!served && performance.now() < until) {
        const r = await idle.invoke(fn.function_id);
        served = r.status === 200;
        expect([200, 504]).to.include(r.status);
        await r.text();
      }
      expect(served, 'a call answered 200 after the idle stop').to.equal(true);
    } finally {
      await idle.close();
    }
  });

  it('a load that never ends is bounded: the write is refused at the load bound, and stored anyway its runtime is ended at the bound, with records that say so', async () => {
    const fn = await h.createFunction('hangs', HANGS_WITH_ENV, { timeout_seconds: 1 });
    expect((await call(fn.function_id)).status).to.equal(200);
    const pid = await runningPid(fn.function_id);

    // A write whose load never ends is refused once the load bound (8 s here) has passed; the current runtime keeps serving.
    const refused = await h.api('PATCH', `/api/v1/functions/${fn.name}`, { env: { HANG: '1' } });
    expect(refused.status, JSON.stringify(refused.body)).to.equal(400);
    expect(refused.body.message).to.match(/^code does not finish loading: .*within its load bound of 8 s/);
    expect((await call(fn.function_id)).status).to.equal(200);
    expect(h.platform.executor.pid(fn.function_id)).to.equal(pid);

    // Stored anyway: each start hangs in its load; calls get 504 at their limit while it loads, and
    // at the load bound that runtime is ended and counted; a call waiting then, or sent right after,
    // is recorded with the load's timeout.
    const stored = await h.api('PATCH', `/api/v1/functions/${fn.name}?allow_load_error=true`, { env: { HANG: '1' } });
    expect(stored.status, JSON.stringify(stored.body)).to.equal(200);
    const restartsBefore = h.platform.metrics.runtimeRestarts;
    const first = await call(fn.function_id);
    expect(first.status, first.body).to.equal(504);
    const hanging = await runningPid(fn.function_id);
    const outcomes: Outcome[] = [first];
    const until = performance.now() + 40_000;
    while (isAlive(hanging) && performance.now() < until) outcomes.push(await call(fn.function_id));
    expect(isAlive(hanging), 'the runtime whose load never ends was ended at the load bound').to.equal(false);
    for (let i = 0; i < 3; i++) outcomes.push(await call(fn.function_id));
    for (const o of outcomes) expect(o.status, o.body).to.equal(504);
    expect(h.platform.metrics.runtimeRestarts - restartsBefore, 'the runtime ended at the load bound is counted').to.be.at.least(1);
    const records = (await waitFor(async () => {
      const logs = (await h.logs(fn.name, '?limit=200')).logs as Array<{ status_code: number; error_message: string | null }>;
      return logs.some((r) => r.status_code === 504 && /did not finish loading within its load bound of 8 s/.test(r.error_message ?? '')) ? logs : undefined;
    }, 'a record that says the load timed out'))!;
    expect(records.filter((r) => r.status_code !== 200).every((r) => r.status_code === 504)).to.equal(true);
  });
});
