import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startGateway } from '../helpers/platform.ts';
import { isAlive, startHarness, waitFor, type Harness } from './harness.ts';

// The local executor's warm pool (docs/gateway.md "Runtime processes"): generic runtimes started
// ahead, specialized on a function's first start, refilled in the background, ended on shutdown.
// The executor reads FNHOST_WARM_POOL from the environment when it is created.

async function harnessWithPool(size: number, env: Record<string, string> = {}): Promise<Harness> {
  const before = process.env.FNHOST_WARM_POOL;
  process.env.FNHOST_WARM_POOL = String(size);
  try {
    // The pool's mechanics by host pid: unsandboxed, where a handler's process.pid is its host pid.
    // The sandboxed pool (code and uid bound at specialization): test/gateway/sandbox.int.test.ts.
    return await startHarness({ env: { FNHOST_SANDBOX: 'off', ...env } });
  } finally {
    if (before === undefined) delete process.env.FNHOST_WARM_POOL;
    else process.env.FNHOST_WARM_POOL = before;
  }
}

/**
 * The first successful answer of a call made right after its runtime was ended or replaced. The
 * function here has a 1 s limit, and a call's limit counts its wait for a runtime to start
 * (docs/gateway.md "A load longer than the time limit"): on a loaded machine a start from the pool
 * can take longer (issue 30: at load 10 one did), and such a call is answered 504 while the start
 * goes on. That answer, and only it, may come before the 200.
 */
async function servedAfterRestart(h: Harness, functionId: string): Promise<Response> {
  // Each 504 took the call's whole limit (2 s with the gateway's second), so this loop needs no pause;
  // the mocha timeout is its backstop.
  for (;;) {
    const r = await h.invoke(functionId);
    if (r.status === 200) return r;
    const body = await r.text();
    expect(r.status, body).to.equal(504);
    expect(JSON.parse(body), body).to.include({ error: 'function_timeout' });
    expect(JSON.parse(body).message, body).to.match(/while its runtime was still starting and loading its module/);
  }
}

/** The pids of a process's children (from /proc). */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      // The command may hold spaces and parentheses: the fields after its closing one are fixed.
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

// What a handler can see of its process and platform.
const PROBE = `
import { getHeapStatistics } from 'node:v8';
export default async (req, res) => {
  if (req.query.mib) {
    const keep = [];
    for (let i = 0; i < Number(req.query.mib); i++) keep.push(new Array(128 * 1024).fill(i));
    return res.json({ kept: keep.length });
  }
  await kv.set('greeting', process.env.GREETING);
  res.json({
    pid: process.pid,
    env: process.env,
    heapLimitMiB: Math.round(getHeapStatistics().heap_size_limit / 1048576),
    cwd: process.cwd(),
    tzOffset: new Date(0).getTimezoneOffset(),
    execArgv: process.execArgv,
    kv: await kv.get('greeting'),
    sawSpecializeHeader: 'x-fnhost-specialize-token' in req.headers,
  });
};`;

describe('gateway local executor: the warm pool (real runtime processes)', function () {
  this.timeout(120_000);
  let pooled: Harness;
  let cold: Harness;
  before(async () => {
    pooled = await harnessWithPool(1, { FNHOST_MAX_TIMEOUT_SECONDS: '60' });
    cold = await harnessWithPool(0);
  });
  after(async () => {
    await pooled?.close();
    await cold?.close();
  });

  /** Waits for a full pool and gives the pid of the generic runtime the next start will take. */
  const nextGeneric = async (h: Harness): Promise<number> => {
    await waitFor(() => h.platform.executor.warmPool.ready === 1, 'a generic runtime to wait in the pool');
    return h.platform.executor.warmPool.pids[0]!;
  };

  it('a pooled runtime is exactly the function’s: env, heap limit, folder, time zone, argv and KV token as in a runtime started for it; the pool refills', async () => {
    const generic = await nextGeneric(pooled);
    // The generic runtime's heap size (the default): in process isolation its heap limit was fixed when it started.
    const spec = { env: { GREETING: 'hi', TZ: 'Asia/Tokyo' }, memory_mib: 128 };
    const fromPoolFn = await pooled.createFunction('probe', PROBE, spec);
    const fromStartFn = await cold.createFunction('probe', PROBE, spec);
    const invoke = async (h: Harness, id: string) => {
      const r = await h.invoke(id, '', { headers: { 'x-fnhost-specialize-token': 'a caller cannot reach the specialization' } });
      expect(r.status).to.equal(200);
      return r.json();
    };
    const fromPool = await invoke(pooled, fromPoolFn.function_id);
    const fromStart = await invoke(cold, fromStartFn.function_id);
    expect(fromPool.pid, 'the generic runtime serves the function').to.equal(generic);
    expect(pooled.platform.executor.pid(fromPoolFn.function_id)).to.equal(generic);
    expect(fromStart.pid).to.equal(cold.platform.executor.pid(fromStartFn.function_id));

    // Paths differ only by data directory and function id.
    const normalize = (seen: any, h: Harness, id: string) => {
      const { pid: _pid, ...rest } = seen;
      return JSON.parse(JSON.stringify(rest).replaceAll(h.dataDir, '<data>').replaceAll(id, '<id>'));
    };
    const a = normalize(fromPool, pooled, fromPoolFn.function_id);
    const b = normalize(fromStart, cold, fromStartFn.function_id);
    expect(a).to.deep.equal(b);
    expect(a).to.deep.equal({
      env: { GREETING: 'hi', TZ: 'Asia/Tokyo', NODE_COMPILE_CACHE: '<data>/compile-cache' },
      heapLimitMiB: b.heapLimitMiB,
      cwd: '<data>/functions/<id>',
      tzOffset: -540,
      // Process isolation (docs/runtime.md): the function's heap limit is the process's.
      execArgv: ['--max-old-space-size=128'],
      kv: 'hi',
      sawSpecializeHeader: false,
    });

    await waitFor(() => pooled.platform.executor.warmPool.ready === 1 && !pooled.platform.executor.warmPool.pids.includes(generic), 'the pool to refill');
  });

  it('the function’s memory limit holds in both kinds of runtime: past memory_mib is 502 function_out_of_memory, and the next call works', async () => {
    for (const h of [pooled, cold]) {
      const fn = (await h.api('GET', '/api/v1/functions/probe')).body;
      expect(fn.memory_mib).to.equal(128);
      expect((await h.invoke(fn.function_id, '?mib=8')).status).to.equal(200);
      // 176 MiB kept: within memory_mib + 64, past memory_mib.
      const big = await h.invoke(fn.function_id, '?mib=176');
      expect(big.status).to.equal(502);
      expect((await big.json()).error).to.equal('function_out_of_memory');
      expect((await h.invoke(fn.function_id, '?mib=8')).status).to.equal(200);
    }
  });

  it('a pooled runtime that is killed or times out is replaced; deactivation and deletion stop it', async () => {
    const generic = await nextGeneric(pooled);
    const fn = await pooled.createFunction('cycle', `export default (req, res) => { if (req.query.spin) { while (true) {} } res.json({ pid: process.pid }); }`, { timeout_seconds: 1 });
    expect((await (await pooled.invoke(fn.function_id)).json()).pid).to.equal(generic);
    process.kill(generic, 'SIGKILL');
    await waitFor(() => !isAlive(generic), 'the pooled runtime to die');
    const again = await servedAfterRestart(pooled, fn.function_id);
    expect((await again.json()).pid).to.not.equal(generic);
    const spun = await pooled.invoke(fn.function_id, '?spin=1');
    expect(spun.status).to.equal(504);
    await servedAfterRestart(pooled, fn.function_id);

    const second = await nextGeneric(pooled);
    await pooled.api('PATCH', '/api/v1/functions/cycle', { code: `export default (req, res) => res.json({ pid: process.pid, v: 2 })` });
    const changed = await (await servedAfterRestart(pooled, fn.function_id)).json();
    expect(changed).to.deep.equal({ pid: second, v: 2 });
    await pooled.api('POST', '/api/v1/functions/cycle/deactivate');
    await waitFor(() => !isAlive(second), 'deactivation to stop the pooled runtime');
    const third = await nextGeneric(pooled);
    await pooled.api('POST', '/api/v1/functions/cycle/activate');
    const reactivated = await (await servedAfterRestart(pooled, fn.function_id)).text();
    expect(JSON.parse(reactivated).pid, reactivated).to.equal(third);
    expect((await pooled.api('DELETE', '/api/v1/functions/cycle')).status).to.equal(204);
    await waitFor(() => !isAlive(third), 'deletion to stop the pooled runtime');
  });

  it('a function whose env sets a variable Node reads only at start gets a process started for it; the generic one keeps waiting', async () => {
    const generic = await nextGeneric(pooled);
    const fn = await pooled.createFunction('threads', `export default (req, res) => res.json({ pid: process.pid, uv: process.env.UV_THREADPOOL_SIZE })`, { env: { UV_THREADPOOL_SIZE: '2' } });
    const seen = await (await pooled.invoke(fn.function_id)).json();
    expect(seen.uv).to.equal('2');
    expect(seen.pid).to.not.equal(generic);
    expect(pooled.platform.executor.warmPool.pids).to.deep.equal([generic]);
    expect(isAlive(generic)).to.equal(true);
  });

  it('process isolation: a function of another memory size gets a process started for it with its own heap limit, and its limit holds; the generic one keeps waiting', async () => {
    const generic = await nextGeneric(pooled);
    const fn = await pooled.createFunction('small', PROBE, { memory_mib: 48, env: { GREETING: 'small' } });
    const seen = await (await pooled.invoke(fn.function_id)).json();
    expect(seen.pid).to.not.equal(generic);
    expect(seen.execArgv).to.deep.equal(['--max-old-space-size=48']);
    // V8's heap_size_limit adds its young generation to the old space's limit: 80 MiB below a 128 MiB function's (the first case's probe).
    const probe = (await pooled.api('GET', '/api/v1/functions/probe')).body;
    const reference = await (await pooled.invoke(probe.function_id)).json();
    expect(reference.heapLimitMiB - seen.heapLimitMiB).to.equal(128 - 48);
    const big = await pooled.invoke(fn.function_id, '?mib=96');
    expect(big.status).to.equal(502);
    expect((await big.json()).error).to.equal('function_out_of_memory');
    expect((await pooled.invoke(fn.function_id, '?mib=8')).status).to.equal(200);
    expect(pooled.platform.executor.warmPool.pids).to.deep.equal([generic]);
  });

  it('with FNHOST_WARM_POOL=0 no generic runtime is started: each start spawns the function’s own process, as before the pool', async () => {
    expect(cold.platform.executor.warmPool).to.deep.equal({ size: 0, ready: 0, pids: [] });
    const startsBefore = cold.platform.metrics.runtimeStarts;
    const fn = await cold.createFunction('plain', `export default (req, res) => res.json({ pid: process.pid })`);
    expect((await cold.invoke(fn.function_id)).status).to.equal(200);
    expect(cold.platform.metrics.runtimeStarts).to.equal(startsBefore + 1);
    expect(cold.platform.executor.warmPool.pids).to.deep.equal([]);
  });

  it('a stopping gateway ends its waiting generic runtimes and the specialized ones', async () => {
    const gw = await startGateway({ env: { FNHOST_WARM_POOL: '2', FNHOST_SANDBOX: 'off' } });
    let children: number[] = [];
    try {
      await waitFor(() => childrenOf(gw.pid).length === 2, 'two generic runtimes');
      const created = await fetch(`${gw.url}/api/v1/functions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${gw.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'served', code: `export default (req, res) => res.json({ pid: process.pid })` }),
      });
      const fn = await created.json();
      const { pid } = await (await fetch(fn.invocation_url)).json();
      await waitFor(() => childrenOf(gw.pid).length === 3, 'the pool to refill beside the function’s runtime');
      children = childrenOf(gw.pid);
      expect(children).to.include(pid);
    } finally {
      expect(await gw.stop()).to.equal(0);
    }
    for (const child of children) expect(isAlive(child), `runtime ${child} after the gateway stopped`).to.equal(false);
  });

  it('refuses a bad FNHOST_WARM_POOL at start with a message naming it', async () => {
    let failed: Error | undefined;
    try {
      const gw = await startGateway({ env: { FNHOST_WARM_POOL: 'lots' } });
      await gw.stop();
    } catch (err) {
      failed = err as Error;
    }
    expect(failed?.message).to.match(/FNHOST_WARM_POOL=\\"lots\\" must be an integer from 0 to 16/);
  });
});
