import { expect } from 'chai';
import { eventually, startRuntime, type RunningRuntime } from './helpers/runtime.ts';

// Failures of user code end the call (and at worst the worker thread), never the runtime.
const CODE = `
export default async function handler(req, res) {
  switch (req.path) {
    case '/ok': return res.json({ ok: true, pid: process.pid });
    case '/spin': while (true) {}
    case '/answer-then-spin': res.status(202).end(); while (true) {}
    case '/never': return; // answers nothing, keeps the loop free
    case '/oom': { const hog = []; while (true) hog.push(new Array(1e5).fill(hog.length)); }
    case '/exit': process.exit(7);
    case '/throw-sync': throw new TypeError('sync failure: bad input 42');
    case '/throw-async': await new Promise((r) => setTimeout(r, 5)); throw new RangeError('async failure');
    case '/throw-timer': setTimeout(() => { throw new Error('thrown from a timer'); }, 5); return;
    case '/unhandled': Promise.reject(new Error('nobody caught me')); return;
    case '/throw-string': throw 'a plain string';
    case '/after-answer': res.json({ answered: true }); throw new Error('thrown after answering');
  }
}`;

function kindOf(res: Response): { kind: string | null; error: string } {
  return { kind: res.headers.get('x-fnhost-error-kind'), error: decodeURIComponent(res.headers.get('x-fnhost-error') ?? '') };
}

describe('runtime: failures of user code', function () {
  let rt: RunningRuntime;
  before(async () => {
    rt = await startRuntime({ code: CODE, timeoutMs: 1000, memoryMiB: 32 });
  });
  after(async () => rt?.stop());

  const get = (path: string) => fetch(rt.url + path);
  const expectServing = async () => {
    const res = await get('/ok');
    expect(res.status).to.equal(200);
    expect(((await res.json()) as { pid: number }).pid).to.equal(rt.process.pid);
  };

  it('a synchronous throw answers 500 with the message in x-fnhost-error (kind exception)', async () => {
    const res = await get('/throw-sync');
    expect(res.status).to.equal(500);
    expect(kindOf(res)).to.deep.equal({ kind: 'exception', error: 'TypeError: sync failure: bad input 42' });
    expect(await res.json()).to.have.property('error', 'function_error');
  });

  it('an async rejection, a throw from a timer and an unhandled rejection during the call answer 500 too', async () => {
    expect(kindOf(await get('/throw-async'))).to.deep.equal({ kind: 'exception', error: 'RangeError: async failure' });
    expect(kindOf(await get('/throw-timer'))).to.deep.equal({ kind: 'exception', error: 'Error: thrown from a timer' });
    expect(kindOf(await get('/unhandled'))).to.deep.equal({ kind: 'exception', error: 'Error: nobody caught me' });
    expect(kindOf(await get('/throw-string'))).to.deep.equal({ kind: 'exception', error: 'thrown value: a plain string' });
    await expectServing();
  });

  it('a throw after answering leaves the answer alone and is logged', async () => {
    const res = await get('/after-answer');
    expect(res.status).to.equal(200);
    expect(await res.json()).to.deep.equal({ answered: true });
    await rt.waitForLine(/thrown after answering/);
  });

  it('while(true) {} is ended at the time limit with 504 (kind timeout), and the next call succeeds', async () => {
    const started = Date.now();
    const res = await get('/spin');
    expect(res.status).to.equal(504);
    expect(kindOf(res).kind).to.equal('timeout');
    expect(kindOf(res).error).to.match(/time limit of 1000 ms/);
    expect(Date.now() - started).to.be.at.least(1000);
    await expectServing();
  });

  it('deferred work that blocks the loop after an early answer is ended after one time limit', async () => {
    const restarts = () => rt.lines.filter((l) => /function worker ended; starting a new one/.test(l)).length;
    const before = restarts();
    const res = await get('/answer-then-spin');
    expect(res.status).to.equal(202);
    await eventually(() => (restarts() > before ? true : undefined), 'the blocked worker to be replaced');
    await expectServing();
  });

  it('a handler that never answers is ended by the timeout, and the runtime keeps serving', async () => {
    const res = await get('/never');
    expect(res.status).to.equal(504);
    expect(kindOf(res).kind).to.equal('timeout');
    await expectServing();
  });

  it('exhausting the heap limit answers 502 (kind out_of_memory) and the runtime serves again', async () => {
    const res = await get('/oom');
    expect(res.status).to.equal(502);
    expect(kindOf(res)).to.deep.equal({ kind: 'out_of_memory', error: 'the function ran out of memory (heap limit 32 MiB) and was restarted' });
    await expectServing();
  });

  it('process.exit() ends only the call (502, kind exit), not the runtime', async () => {
    const res = await get('/exit');
    expect(res.status).to.equal(502);
    expect(kindOf(res)).to.deep.equal({ kind: 'exit', error: 'the function called process.exit(7) before answering' });
    await expectServing();
    const health = await fetch(rt.url + '/healthz');
    expect(health.status).to.equal(200);
  });
});

describe('runtime: module that cannot load', function () {
  let rt: RunningRuntime;
  before(async () => {
    rt = await startRuntime({ code: 'export default (req, res) => { res.json( }' });
  });
  after(async () => rt?.stop());

  it('reports the load error on /healthz (503; its text only to the gateway\'s x-fnhost-wait-load) and on every call (500, kind load), and stays up', async () => {
    await rt.waitForLine(/failed to load/);
    const health = await fetch(rt.url + '/healthz');
    expect(health.status).to.equal(503);
    // A caller's /invoke/{id}/healthz reaches this route without x-fnhost-* headers: no error text.
    expect(await health.json()).to.deep.equal({ status: 'error', error: 'load' });
    const asked = await fetch(rt.url + '/healthz', { headers: { 'x-fnhost-wait-load': '1' } });
    expect(asked.status).to.equal(503);
    const body = (await asked.json()) as { status: string; kind: string; message: string };
    expect(body).to.include({ status: 'error', kind: 'syntax' });
    expect(body.message).to.match(/^SyntaxError: /);
    for (let i = 0; i < 2; i++) {
      const res = await fetch(rt.url + '/');
      expect(res.status).to.equal(500);
      expect(kindOf(res).kind).to.equal('load');
      expect(kindOf(res).error).to.match(/^SyntaxError: /);
      // No path of the runtime's machine in the text.
      expect(kindOf(res).error).not.to.match(/\/fn\/|\.mjs|\.cjs|fnhost-/);
    }
    expect(rt.process.exitCode).to.equal(null);
  });
});

describe('runtime: module that never finishes loading', function () {
  let rt: RunningRuntime;
  before(async () => {
    rt = await startRuntime({ code: 'while (true) {}\nexport default (req, res) => res.end();', timeoutMs: 500, env: { FNHOST_LOAD_TIMEOUT_MS: '1000' } });
  });
  after(async () => rt?.stop());

  it('is ended at its load bound (FNHOST_LOAD_TIMEOUT_MS, not the time limit), counted from the runtime\'s own modules loaded (not after the 30 s grace they get), and stays up', async () => {
    // The worker beats once before reading the function's module, so a module that blocks at once
    // still starts the clock; without that beat the load would end only after the grace.
    const line = await rt.waitForLine(/failed to load/, 20_000);
    expect(line).to.match(/did not finish loading within its load bound of 1000 ms/);
    const res = await fetch(rt.url + '/');
    expect(res.status).to.equal(500);
    expect(kindOf(res)).to.deep.equal({ kind: 'load', error: 'the function module did not finish loading within its load bound of 1000 ms' });
    expect(rt.process.exitCode).to.equal(null);
  });
});

describe('runtime: a module whose load blocks longer than the time limit', function () {
  let rt: RunningRuntime;
  after(async () => rt?.stop());

  it('loads within its load bound and answers: the load is not charged to the time limit (a heavy import, a 1 s limit)', async () => {
    const code = `const t = Date.now(); while (Date.now() - t < 2500) {}
export default (req, res) => res.json({ loaded: true });`;
    rt = await startRuntime({ code, timeoutMs: 1000 });
    const asked = await fetch(`${rt.url}/healthz`, { headers: { 'x-fnhost-wait-load': '1' } });
    expect(asked.status, await asked.clone().text()).to.equal(200);
    const res = await fetch(`${rt.url}/`);
    expect(res.status, decodeURIComponent(res.headers.get('x-fnhost-error') ?? '')).to.equal(200);
    expect(await res.json()).to.deep.equal({ loaded: true });
  });
});

describe('runtime: a call that waits for the worker to start', function () {
  let rt: RunningRuntime;
  after(async () => rt?.stop());

  it('has its whole time limit once the worker gets it: the worker start is not charged to the function', async () => {
    // The module takes 1.2 s to load (inside its 2 s load limit) and the handler 1.2 s to answer:
    // charged from its arrival the call would be over its 2 s limit; from the moment the worker has it, it is not.
    const code = `const t = Date.now(); while (Date.now() - t < 1200) {}
export default async (req, res) => { await new Promise((r) => setTimeout(r, 1200)); res.json({ waited: true }); };`;
    rt = await startRuntime({ code, timeoutMs: 2000 });
    const res = await fetch(`${rt.url}/`);
    expect(res.status, decodeURIComponent(res.headers.get('x-fnhost-error') ?? '')).to.equal(200);
    expect(await res.json()).to.deep.equal({ waited: true });
  });
});
