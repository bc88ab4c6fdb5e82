import { expect } from 'chai';
import { fileURLToPath } from 'node:url';
import { startInternalService, type InternalService } from './helpers/internal-service.ts';
import { startRuntime } from './helpers/runtime.ts';

// The handler examples in examples/ run in the real runtime and do what their comments say.
const example = (name: string) => fileURLToPath(new URL(`../../examples/${name}`, import.meta.url));

describe('runtime: examples/*.js', function () {
  let svc: InternalService;
  before(async () => {
    svc = await startInternalService();
  });
  after(async () => svc?.close());

  const run = async (name: string, path: string, routes: string[] = []) => {
    const rt = await startRuntime({ path: example(name), routes, gatewayUrl: svc.url, token: svc.token });
    try {
      const res = await fetch(rt.url + path, { headers: { 'x-fnhost-trigger': 'schedule' } });
      return { status: res.status, body: await res.text(), kind: res.headers.get('x-fnhost-error-kind') };
    } finally {
      await rt.stop();
    }
  };

  it('echo.js', async () => {
    const r = await run('echo.js', '/x?a=1&a=2');
    expect(JSON.parse(r.body)).to.deep.include({ method: 'GET', path: '/x', query: { a: ['1', '2'] }, params: {} });
  });
  it('kv-counter.js', async () => {
    expect(JSON.parse((await run('kv-counter.js', '/?name=n')).body)).to.deep.equal({ name: 'n', count: 1, counters: ['count:n'] });
    expect(JSON.parse((await run('kv-counter.js', '/?name=n')).body)).to.deep.include({ count: 2 });
  });
  it('cron-job.js', async () => {
    expect((await run('cron-job.js', '/')).status).to.equal(200);
    expect(JSON.parse(svc.kv.get('last-run')!.json)).to.have.property('trigger', 'schedule');
  });
  it('streaming.js', async () => {
    expect((await run('streaming.js', '/')).body).to.equal('tick 1\ntick 2\ntick 3\ntick 4\ntick 5\ndone\n');
  });
  it('error.js', async () => {
    expect(await run('error.js', '/?mode=client')).to.include({ status: 400, kind: null });
    expect(await run('error.js', '/')).to.include({ status: 500, kind: 'exception' });
  });
  it('users-route.js', async () => {
    const routes = ['/users/:userId', '/users/:userId/posts/:postId'];
    expect(JSON.parse((await run('users-route.js', '/users/42/posts/7', routes)).body)).to.deep.equal({ userId: '42', postId: '7', fields: null });
    expect((await run('users-route.js', '/nope', routes)).status).to.equal(404);
  });
});
