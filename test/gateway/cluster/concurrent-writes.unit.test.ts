import { expect } from 'chai';
import { ConcurrentChangeError, type Executor, type Stores } from '@fnhost/core';
import { API_VERSION, KIND, type FunctionResource } from '@fnhost/core/function-resource.ts';
import { FunctionCache, KubeFunctionStore, withPrecondition } from '../../../gateway/src/cluster/functions.ts';
import { KubeApiError, type KubeClient } from '../../../gateway/src/cluster/kube.ts';
import { FunctionService } from '../../../gateway/src/functions/service.ts';
import { MemoryLogger } from './fakes.ts';

// Two gateways behind one Service each hold the Functions in a cache fed by a
// watch; a management write through one reaches the other's cache a moment
// later. A write decided on a cache that has not caught up must neither be
// dropped as a no-op nor undo the other gateway's write (the panel scenario of
// CI at 39dcd2c: activate through one gateway right after a deactivate through
// the other, and the function stayed inactive).

/** The API server's side: one Function, merge patches with the resourceVersion precondition. */
class FakeApiServer {
  resource: FunctionResource;
  rv = 100;
  patches: Array<Record<string, unknown>> = [];
  gets = 0;
  /** Writes by someone else (the operator's status, kubectl) landing just before the next PATCHes. */
  interleave: Array<() => void> = [];

  constructor() {
    this.resource = {
      apiVersion: API_VERSION,
      kind: KIND,
      metadata: { name: 'toggle', namespace: 'team-a', uid: 'u1', resourceVersion: String(this.rv), creationTimestamp: '2026-11-29T10:00:00Z', generation: 1 },
      spec: { code: 'export default (req, res) => res.json({ on: true })', active: true, timeoutSeconds: 30 },
    };
  }

  bump(change: (spec: FunctionResource['spec']) => void = () => undefined): void {
    const copy = structuredClone(this.resource);
    change(copy.spec);
    copy.metadata.resourceVersion = String(++this.rv);
    this.resource = copy;
  }

  /** What a gateway's watch would deliver now. */
  snapshot(): FunctionResource {
    return structuredClone(this.resource);
  }

  client(): KubeClient {
    const request = async (method: string, path: string, options: { body?: unknown } = {}): Promise<unknown> => {
      if (method === 'GET') {
        this.gets++;
        if (!path.endsWith('/namespaces/team-a/functions/toggle')) throw new KubeApiError(404, 'NotFound', `GET ${path}: 404 not found`);
        return this.snapshot();
      }
      if (method !== 'PATCH') throw new Error(`unexpected ${method}`);
      this.interleave.shift()?.();
      const patch = options.body as { metadata?: { resourceVersion?: string }; spec: Record<string, unknown> };
      this.patches.push(patch);
      const expected = patch.metadata?.resourceVersion;
      if (expected !== undefined && expected !== this.resource.metadata.resourceVersion) {
        throw new KubeApiError(409, 'Conflict', `PATCH functions: 409 Operation cannot be fulfilled on functions.fnhost.dev "toggle": the object has been modified`);
      }
      this.bump((spec) => Object.assign(spec, patch.spec));
      return this.snapshot();
    };
    return { request } as unknown as KubeClient;
  }
}

/** A gateway's FunctionService over `client`, reading `cache` (its runtimes, schedules and logs stubbed). */
function serviceOver(client: KubeClient, cache: FunctionCache, logger = new MemoryLogger()): FunctionService {
  return new FunctionService({
    stores: { functions: new KubeFunctionStore(client, cache, Promise.resolve()), logs: { applyRetention: async () => undefined } } as unknown as Stores,
    executor: { sync: async () => undefined } as unknown as Executor,
    scheduler: { sync: () => undefined } as never,
    pendingCount: () => 0,
    executionUrl: () => 'http://gw',
    maxTimeoutSeconds: 900,
    now: () => Date.parse('2026-11-29T12:00:00Z'),
    logger: logger as never,
    index: cache,
    defaultNamespace: 'team-a',
    multiNamespace: true,
  });
}

/** A cache holding the Function as the server has it now (what the watch delivered last). */
function cacheOf(server: FakeApiServer): FunctionCache {
  const cache = new FunctionCache();
  cache.put(server.snapshot());
  return cache;
}

/** One gateway: its own cache (fed only when the test delivers the watch), store and service. */
function gateway(server: FakeApiServer) {
  const cache = cacheOf(server);
  return { cache, service: serviceOver(server.client(), cache), deliverWatch: () => cache.put(server.snapshot()) };
}

describe('cluster mode: management writes through two gateways', () => {
  it('an activate through a gateway whose cache has not seen the other\'s deactivate is made, not dropped as a no-op', async () => {
    const server = new FakeApiServer();
    const a = gateway(server);
    const b = gateway(server);
    expect((await a.service.setActive('toggle', false)).active).to.equal(false);
    expect(server.resource.spec.active).to.equal(false);
    // b's watch has not delivered the deactivate yet: its cache still says active.
    expect(b.service.resolve('toggle').active).to.equal(true);
    const answer = await b.service.setActive('toggle', true);
    expect(answer.active).to.equal(true);
    expect(server.resource.spec.active, 'the function as stored').to.equal(true);
    // b read the truth before deciding, and its cache holds what it wrote.
    expect(server.gets).to.be.greaterThan(0);
    expect(b.service.resolve('toggle').active).to.equal(true);
  });

  it('every patch carries the resourceVersion it was made from', async () => {
    const server = new FakeApiServer();
    const a = gateway(server);
    await a.service.setActive('toggle', false);
    expect(server.patches).to.have.length(1);
    expect(server.patches[0]!.metadata).to.deep.include({ resourceVersion: '100' });
    expect(withPrecondition({ spec: { active: true } }, '7')).to.deep.equal({ spec: { active: true }, metadata: { resourceVersion: '7' } });
    expect(withPrecondition({ metadata: { annotations: { a: 'b' } }, spec: {} }, '7')).to.deep.equal({ metadata: { annotations: { a: 'b' }, resourceVersion: '7' }, spec: {} });
  });

  it('a write that meets another between its read and its patch (409) is made again from a fresh read, keeping the other\'s change', async () => {
    const server = new FakeApiServer();
    const a = gateway(server);
    // kubectl changes the timeout just before a's patch lands.
    server.interleave.push(() => server.bump((spec) => (spec.timeoutSeconds = 45)));
    const answer = await a.service.setActive('toggle', false);
    expect(answer.active).to.equal(false);
    expect(answer.timeout_seconds, 'the other writer\'s change, read again').to.equal(45);
    expect(server.patches).to.have.length(2);
    expect(server.resource.spec).to.deep.include({ active: false, timeoutSeconds: 45 });
  });

  it('a retention write reads afresh too', async () => {
    const server = new FakeApiServer();
    const a = gateway(server);
    const b = gateway(server);
    await a.service.setActive('toggle', false);
    await b.service.setRetention('toggle', { type: 'count', count: 10 });
    expect(server.resource.spec.active, 'b did not write back the active it had cached').to.equal(false);
    expect(b.service.resolve('toggle').active).to.equal(false);
  });

  it('after a bounded number of tries the caller gets a 409 that says to try again', async () => {
    const server = new FakeApiServer();
    const a = gateway(server);
    for (let i = 0; i < 10; i++) server.interleave.push(() => server.bump());
    const err = await a.service.setActive('toggle', false).then(() => null, (e: unknown) => e);
    expect(err).to.be.instanceOf(ConcurrentChangeError);
    expect((err as ConcurrentChangeError).status).to.equal(409);
    expect((err as Error).message).to.match(/function "toggle" in namespace "team-a" was changed at the same time; try again/);
    expect(server.patches).to.have.length(4);
    expect(server.resource.spec.active).to.equal(true);
  });

  it('a read of one function catches up with the API server first; a bad ref or a server that does not answer leaves it to the cache', async () => {
    const server = new FakeApiServer();
    const a = gateway(server);
    const b = gateway(server);
    await a.service.setActive('toggle', false);
    expect(b.service.resolve('toggle').active, 'b\'s cache before').to.equal(true);
    await b.service.catchUp('toggle');
    expect(b.service.resolve('toggle').active).to.equal(false);
    // By id, as the API's /functions/{id} takes it.
    await a.service.setActive('toggle', true);
    await b.service.catchUp(b.service.resolve('toggle').function_id.toUpperCase());
    expect(b.service.resolve('toggle').active).to.equal(true);
    const gets = server.gets;
    await b.service.catchUp('Not/A-Name');
    expect(server.gets, 'no read for a ref that is no name').to.equal(gets);
    // An id this replica has not seen may still be a name (a DNS label): read as one, and not found.
    await b.service.catchUp('00000000-0000-4000-8000-000000000000');
    expect(server.gets).to.equal(gets + 1);
    expect(() => b.service.resolve('00000000-0000-4000-8000-000000000000')).to.throw(/not found/);
    // The API server does not answer: the cache does, and the failure is logged.
    const logger = new MemoryLogger();
    const down = { request: async () => Promise.reject(new Error('connect ECONNREFUSED 10.96.0.1:443')) } as unknown as KubeClient;
    const service = serviceOver(down, cacheOf(server), logger);
    await service.catchUp('toggle');
    expect(service.resolve('toggle').active).to.equal(true);
    expect(logger.lines.map((l) => `${l.level} ${l.msg} ${l.fields?.error}`)).to.deep.equal(['warn reading a function from the API server failed; answering from the cache connect ECONNREFUSED 10.96.0.1:443']);
  });

  it('a write through a gateway that has not seen the function\'s creation yet finds it on the API server', async () => {
    const server = new FakeApiServer();
    const b = serviceOver(server.client(), new FunctionCache());
    expect(() => b.resolve('toggle'), 'b\'s cache: empty').to.throw(/not found/);
    expect((await b.setActive('toggle', false)).active).to.equal(false);
    expect(server.resource.spec.active).to.equal(false);
    // A ref that is no name is not read, and stays not found.
    const gets = server.gets;
    expect(await b.setActive('Not/A-Name', false).then(() => null, (e: Error) => e.message)).to.match(/not found/);
    expect(server.gets).to.equal(gets);
  });

  it('reads for GETs are bounded: past two in flight a GET is answered from the cache without reading the API server', async () => {
    const server = new FakeApiServer();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let reads = 0;
    const slow = { request: async () => { reads++; await gate; return server.snapshot(); } } as unknown as KubeClient;
    const service = serviceOver(slow, cacheOf(server));
    const pending = [service.catchUp('toggle'), service.catchUp('toggle')];
    const answered: string[] = [];
    await Promise.all(Array.from({ length: 10 }, (_, i) => service.catchUp('toggle').then(() => void answered.push(`get ${i}`))));
    expect(answered, 'answered at once, from the cache').to.have.length(10);
    expect(reads).to.equal(2);
    release();
    await Promise.all(pending);
    await service.catchUp('toggle');
    expect(reads, 'a slot again once the reads ended').to.equal(3);
  });

  it('a function deleted meanwhile is not found, not written', async () => {
    const server = new FakeApiServer();
    const a = gateway(server);
    const client = server.client();
    const gone = { request: async (method: string, path: string, options: object) => (method === 'GET' ? Promise.reject(new KubeApiError(404, 'NotFound', 'GET functions: 404 not found')) : client.request(method as never, path, options as never)) } as unknown as KubeClient;
    const store = new KubeFunctionStore(gone, a.cache, Promise.resolve());
    await store.refresh('team-a', 'toggle');
    expect(() => a.service.resolve('toggle')).to.throw(/not found/);
    expect(server.patches).to.have.length(0);
  });
});
