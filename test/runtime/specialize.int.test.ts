import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { eventually, functionVars, RUNTIME_MAIN, spawnRuntime, startGenericRuntime, type GenericRuntime, type RunningRuntime } from './helpers/runtime.ts';

// The warm pool's step of the internal protocol (docs/internal-protocol.md "Warm pool"): a runtime
// started with no function becomes one function's runtime through one authenticated request, and
// is then indistinguishable, to the handler, from a runtime started for that function.

// What a handler can see of its process: compared between a specialized and a started runtime.
const PROBE = `
import { getHeapStatistics } from 'node:v8';
import { homedir } from 'node:os';
export default (req, res) => res.json({
  pid: process.pid,
  env: process.env,
  heapLimitMiB: Math.round(getHeapStatistics().heap_size_limit / 1048576),
  cwd: process.cwd(),
  home: homedir(),
  tzOffset: new Date(0).getTimezoneOffset(),
  execArgv: process.execArgv,
  params: req.params,
});`;

describe('runtime: a generic runtime of the warm pool', function () {
  this.timeout(60_000);
  let dir: string;
  let file: string;
  const started: Array<{ stop(): Promise<void> }> = [];
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'fnhost-spec-'));
    file = join(dir, 'probe.mjs');
    await writeFile(file, PROBE);
  });
  after(async () => {
    for (const rt of started) await rt.stop();
    await rm(dir, { recursive: true, force: true });
  });
  const generic = async (env?: Record<string, string>): Promise<GenericRuntime> => {
    const g = await startGenericRuntime({ env });
    started.push(g);
    return g;
  };

  it('before specialization: says so on /healthz (503 generic) and answers calls 503 not_specialized', async () => {
    const g = await generic();
    expect(await g.waitForLine(/"msg":"listening"/)).to.match(/"generic":true/);
    const health = await fetch(`${g.url}/healthz`);
    expect(health.status).to.equal(503);
    expect(await health.json()).to.deep.equal({ status: 'generic' });
    const call = await fetch(`${g.url}/anything`, { method: 'POST', body: 'x' });
    expect(call.status).to.equal(503);
    expect((await call.json()).error).to.equal('not_specialized');
  });

  it('refuses a wrong credential (401) and another path (404); a bad configuration (400) leaves it generic for a correct one', async () => {
    const g = await generic();
    const body = { env: functionVars(file) };
    const wrong = await g.specialize(body, 'not-the-token');
    expect(wrong.status).to.equal(401);
    const elsewhere = await fetch(`${g.url}/other`, { method: 'POST', headers: { 'x-fnhost-specialize-token': g.token }, body: '{}' });
    expect(elsewhere.status).to.equal(404);
    const cases: Array<[unknown, RegExp]> = [
      ['{not json', /JSON/],
      [{ env: { ...functionVars(file), FNHOST_TIMEOUT_MS: 'soon' } }, /FNHOST_TIMEOUT_MS="soon"/],
      [{ env: { ...functionVars(file), PORT: '9' } }, /must not set PORT/],
      [{ env: { FNHOST_FUNCTION_ID: 'x' } }, /FNHOST_FUNCTION_FILE is required/],
      [{ env: functionVars(file), cwd: 'relative/dir' }, /cwd must be an absolute path/],
      [{ env: functionVars(file), cwd: join(dir, 'missing') }, /ENOENT/],
      [{ env: functionVars(file), extra: 1 }, /unknown field "extra"/],
    ];
    for (const [bad, message] of cases) {
      const r = await g.specialize(bad);
      expect(r.status, JSON.stringify(bad)).to.equal(400);
      expect((await r.json()).message).to.match(message);
    }
    expect((await fetch(`${g.url}/healthz`)).status).to.equal(503);
    const ok = await g.specialize(body);
    expect(ok.status).to.equal(200);
    expect(await ok.json()).to.include({ status: 'specialized', function_id: '00000000-0000-4000-8000-000000000001' });
    expect((await fetch(`${g.url}/`)).status).to.equal(200);
  });

  it('specialized, it is the function’s runtime exactly as one started for it (env, heap limit, folder, time zone, home, argv, routes), and refuses a second specialization', async () => {
    const work = await mkdtemp(join(tmpdir(), 'fnhost-spec-cwd-'));
    const home = dir;
    // The environment a runtime for this function is started with (minus PORT and HOST).
    const env = { ...functionVars(file, { memoryMiB: 48, routes: ['/users/:id'], name: 'probe' }), GREETING: 'hi', TZ: 'Asia/Tokyo', HOME: home };
    const g = await generic();
    const specialized = await g.specialize({ env, cwd: work });
    expect(specialized.status).to.equal(200);
    await g.waitForLine(/"msg":"specialized".*"function_name":"probe"/);
    // The same function started directly, in the same folder.
    const cold: RunningRuntime = await spawnRuntime({ PORT: '0', HOST: '127.0.0.1', ...env }, work);
    started.push(cold);
    const fromPool = await (await fetch(`${g.url}/users/7`)).json();
    const fromStart = await (await fetch(`${cold.url}/users/7`)).json();
    expect(fromPool.pid).to.equal(g.process.pid);
    expect(fromStart.pid).to.equal(cold.process.pid);
    delete fromPool.pid;
    delete fromStart.pid;
    expect(fromPool).to.deep.equal(fromStart);
    expect(fromPool).to.deep.include({ env: { GREETING: 'hi', TZ: 'Asia/Tokyo', HOME: home }, cwd: work, home, tzOffset: -540, execArgv: [], params: { id: '7' } });

    const again = await g.specialize({ env: functionVars(file, { name: 'other' }) });
    expect(again.status).to.equal(409);
    expect((await again.json()).error).to.equal('already_specialized');
    // Still the first function's runtime.
    expect((await (await fetch(`${g.url}/users/8`)).json()).params).to.deep.equal({ id: '8' });
    expect(g.lines.some((l) => l.includes('"function_name":"other"'))).to.equal(false);
  });

  it('keeps the function’s heap limit: allocating past memory_mib ends the call with out_of_memory, and the next call works', async () => {
    const hogFile = join(dir, 'hog.mjs');
    await writeFile(hogFile, `export default (req, res) => { const keep = []; for (let i = 0; i < Number(req.query.mib); i++) keep.push(new Array(128 * 1024).fill(i)); res.json({ kept: keep.length }); }`);
    const g = await generic();
    expect((await g.specialize({ env: functionVars(hogFile, { memoryMiB: 32 }) })).status).to.equal(200);
    const small = await fetch(`${g.url}/?mib=4`);
    expect(small.status).to.equal(200);
    const big = await fetch(`${g.url}/?mib=96`);
    expect(big.status).to.equal(502);
    expect(big.headers.get('x-fnhost-error-kind')).to.equal('out_of_memory');
    expect((await fetch(`${g.url}/?mib=4`)).status).to.equal(200);
  });

  it('with a spare worker (FNHOST_WARM_WORKER_MEMORY_MIB): the same function runtime, its worker started ahead; another memory size or time zone gets a new worker', async () => {
    const work = await mkdtemp(join(tmpdir(), 'fnhost-spec-spare-'));
    const env = { ...functionVars(file, { memoryMiB: 64, routes: ['/users/:id'], name: 'probe' }), GREETING: 'hi', TZ: 'Asia/Tokyo', HOME: dir };
    // The generic runtime starts in another time zone than its function's: the spare must not keep it.
    const g = await generic({ FNHOST_WARM_WORKER_MEMORY_MIB: '64', TZ: 'America/New_York' });
    expect((await g.specialize({ env, cwd: work })).status).to.equal(200);
    expect(await g.waitForLine(/"msg":"specialized"/)).to.match(/"warm_worker":true/);
    const cold: RunningRuntime = await spawnRuntime({ PORT: '0', HOST: '127.0.0.1', ...env }, work);
    started.push(cold);
    const fromSpare = await (await fetch(`${g.url}/users/7`)).json();
    const fromStart = await (await fetch(`${cold.url}/users/7`)).json();
    delete fromSpare.pid;
    delete fromStart.pid;
    expect(fromSpare).to.deep.equal(fromStart);
    expect(fromSpare).to.deep.include({ env: { GREETING: 'hi', TZ: 'Asia/Tokyo', HOME: dir }, cwd: work, tzOffset: -540, params: { id: '7' } });
    expect(g.lines.some((l) => l.includes('the spare worker cannot be used'))).to.equal(false);

    // Another heap limit: the spare is ended and a worker with the function's limit started.
    const hogFile = join(dir, 'hog-spare.mjs');
    await writeFile(hogFile, `export default (req, res) => { const keep = []; for (let i = 0; i < Number(req.query.mib); i++) keep.push(new Array(128 * 1024).fill(i)); res.json({ kept: keep.length }); }`);
    const other = await generic({ FNHOST_WARM_WORKER_MEMORY_MIB: '256' });
    expect((await other.specialize({ env: functionVars(hogFile, { memoryMiB: 32 }) })).status).to.equal(200);
    expect(await other.waitForLine(/"msg":"specialized"/)).to.match(/"warm_worker":false/);
    expect((await fetch(`${other.url}/?mib=96`)).headers.get('x-fnhost-error-kind')).to.equal('out_of_memory');
    expect((await fetch(`${other.url}/?mib=4`)).status).to.equal(200);
    await rm(work, { recursive: true, force: true });
  });

  it('with a spare worker, the first call finds the response libraries loaded while the spare waited; a worker started for the function loads them on first use', async () => {
    // Whether the vendored Express helpers (and node:crypto under etag) are in this thread's module cache when the handler runs.
    const probeFile = join(dir, 'libraries-loaded.mjs');
    await writeFile(probeFile, `import { createRequire } from 'node:module';
export default (req, res) => { const loaded = Object.keys(createRequire(import.meta.url).cache).some((k) => k.endsWith('http-parts.cjs')); res.json({ loaded }); };`);
    const withSpare = await generic({ FNHOST_WARM_WORKER_MEMORY_MIB: '64' });
    expect((await withSpare.specialize({ env: functionVars(probeFile, { memoryMiB: 64 }) })).status).to.equal(200);
    expect(await withSpare.waitForLine(/"msg":"specialized"/)).to.match(/"warm_worker":true/);
    expect(await (await fetch(`${withSpare.url}/`)).json()).to.deep.equal({ loaded: true });
    const withoutSpare = await generic();
    expect((await withoutSpare.specialize({ env: functionVars(probeFile, { memoryMiB: 64 }) })).status).to.equal(200);
    expect(await withoutSpare.waitForLine(/"msg":"specialized"/)).to.match(/"warm_worker":false/);
    expect(await (await fetch(`${withoutSpare.url}/`)).json()).to.deep.equal({ loaded: false });
    // Both loaded once the first answer was sent.
    expect(await (await fetch(`${withoutSpare.url}/`)).json()).to.deep.equal({ loaded: true });
  });

  it('listens on loopback only: HOST=0.0.0.0 stops it at start naming HOST; FNHOST_FUNCTION_FILE with the token too', async () => {
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{ HOST: '0.0.0.0' }, /HOST="0\.0\.0\.0": a generic runtime listens on loopback only/],
      [{ FNHOST_FUNCTION_FILE: file }, /either FNHOST_FUNCTION_FILE .* or FNHOST_SPECIALIZE_TOKEN/],
      [{ FNHOST_SPECIALIZE_TOKEN: 'short' }, /at least 32 characters/],
    ];
    for (const [env, message] of cases) {
      const vars: Record<string, string> = { PATH: process.env.PATH ?? '', PORT: '0', HOST: '127.0.0.1', FNHOST_SPECIALIZE_TOKEN: 'x'.repeat(40) };
      Object.assign(vars, env);
      const child = spawn(process.execPath, [RUNTIME_MAIN], { env: vars, stdio: ['ignore', 'pipe', 'pipe'] });
      const messages: string[] = [];
      createInterface({ input: child.stderr! }).on('line', (l) => messages.push(l.startsWith('{') ? (JSON.parse(l) as { msg: string }).msg : l));
      const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
      expect(code).to.equal(2);
      expect(messages.join('\n')).to.match(message);
    }
  });

  it('remote (FNHOST_SPECIALIZE_REMOTE=1, a cluster pool pod): inline code from the request is written to its own file and served; a second specialization is 409', async () => {
    const g = await generic({ FNHOST_SPECIALIZE_REMOTE: '1', FNHOST_GATEWAY_URL: 'http://127.0.0.1:9' });
    const code = `export default (req, res) => res.json({ fn: 'remote-${process.pid}' });\n`;
    const env = functionVars('/unused');
    delete env.FNHOST_FUNCTION_FILE;
    const bad = await g.specialize({ env: { ...env, FNHOST_GATEWAY_URL: 'http://elsewhere' }, code });
    expect(bad.status).to.equal(400);
    const ok = await g.specialize({ env, code });
    expect(ok.status, await ok.clone().text()).to.equal(200);
    await eventually(async () => ((await fetch(`${g.url}/healthz`)).status === 200 ? true : undefined), 'the specialized runtime to load its code');
    expect(await (await fetch(`${g.url}/`)).json()).to.deep.equal({ fn: `remote-${process.pid}` });
    const again = await g.specialize({ env, code: 'export default (req, res) => res.send("other")' });
    expect(again.status).to.equal(409);
    expect(await (await fetch(`${g.url}/`)).json()).to.deep.include({ fn: `remote-${process.pid}` });
  });

  it('remote, asked with the start\'s wait header: the answer comes once the module has loaded and says how (ok, or the load error\'s kind and text)', async () => {
    const env = functionVars('/unused');
    delete env.FNHOST_FUNCTION_FILE;
    const wait = { 'x-fnhost-wait-load': '1' };
    const g = await generic({ FNHOST_SPECIALIZE_REMOTE: '1', FNHOST_GATEWAY_URL: 'http://127.0.0.1:9', FNHOST_WARM_WORKER_MEMORY_MIB: '128' });
    // A module whose top level takes 300 ms: the answer cannot come before it has run.
    const slow = `const until = Date.now() + 300; while (Date.now() < until);\nexport default (req, res) => res.json({ fn: 'slow-${process.pid}' });\n`;
    const ok = await g.specialize({ env, code: slow }, undefined, wait);
    const answer = await ok.json();
    expect(ok.status, JSON.stringify(answer)).to.equal(200);
    expect(answer).to.deep.include({ status: 'specialized' });
    expect(answer.load.status).to.equal('ok');
    expect(answer.load.ms).to.be.at.least(300);
    // Loaded: the next request is served without waiting.
    expect((await fetch(`${g.url}/healthz`)).status).to.equal(200);
    expect(await (await fetch(`${g.url}/`)).json()).to.deep.equal({ fn: `slow-${process.pid}` });

    const b = await generic({ FNHOST_SPECIALIZE_REMOTE: '1', FNHOST_GATEWAY_URL: 'http://127.0.0.1:9' });
    const broken = await b.specialize({ env, code: 'throw new Error("broken at load");\n' }, undefined, wait);
    const failed = await broken.json();
    expect(broken.status, JSON.stringify(failed)).to.equal(200);
    expect(failed.load).to.deep.include({ status: 'error', kind: 'failed' });
    expect(failed.load.message).to.match(/broken at load/);
    // Without the header the answer does not wait and says nothing of the load (as before).
    const c = await generic({ FNHOST_SPECIALIZE_REMOTE: '1', FNHOST_GATEWAY_URL: 'http://127.0.0.1:9' });
    const plain = await (await c.specialize({ env, code: slow })).json();
    expect(plain).to.not.have.property('load');
  });

  it('SIGTERM ends a generic runtime with exit code 0, specialized or not', async () => {
    for (const specialize of [false, true]) {
      const g = await generic();
      if (specialize) expect((await g.specialize({ env: functionVars(file) })).status).to.equal(200);
      const exited = new Promise<number | null>((resolve) => g.process.once('exit', (c) => resolve(c)));
      g.process.kill('SIGTERM');
      expect(await exited).to.equal(0);
    }
  });
});
