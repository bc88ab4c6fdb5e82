import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { FnhostError, limits } from '@fnhost/core';
import { API_VERSION, KIND, type FunctionResource } from '@fnhost/core/function-resource.ts';
import { ANNOTATION_EXPIRES_AT, LABEL_REPLAY_OF, LABEL_THROWAWAY, MAX_THROWAWAY_LIFETIME_MS, isThrowaway, servedNameOf, throwawayExpiry } from '@fnhost/core/replay-throwaway.ts';
import { EndpointIndex, type EndpointSlice } from '../../../gateway/src/cluster/endpoints.ts';
import { FunctionCache } from '../../../gateway/src/cluster/functions.ts';
import { KubeApiError } from '../../../gateway/src/cluster/kube.ts';
import { derivedFunctionId } from '../../../gateway/src/cluster/resource.ts';
import { ClusterThrowaways, statusRefusal, throwawayName, throwawayResource } from '../../../gateway/src/cluster/throwaway.ts';
import { FakeClock, MemoryLogger, settle } from './fakes.ts';

function original(extra: Partial<FunctionResource['spec']> = {}): FunctionResource {
  return {
    apiVersion: API_VERSION,
    kind: KIND,
    metadata: { name: 'pay', namespace: 'ns', uid: 'uid-pay', resourceVersion: '10', creationTimestamp: '2026-11-23T10:00:00Z' },
    spec: {
      code: 'old',
      routes: ['/x'],
      env: [{ name: 'A', value: '1' }, { name: 'S', valueFrom: { secretKeyRef: { name: 'creds', key: 'k' } } }],
      timeoutSeconds: 7,
      memoryMiB: 256,
      schedule: { cron: '* * * * *' },
      scaleToZero: { idleSeconds: 60 },
      scaling: { minReplicas: 0, maxReplicas: 5 },
      replicas: 3,
      recordRequests: { enabled: true },
      ...extra,
    },
  };
}

function throwaway(name: string, rv: string, extra: Partial<FunctionResource['metadata']> = {}): FunctionResource {
  const res = throwawayResource(original(), 'new', 'aaaaa', Date.parse('2026-11-26T10:00:00Z'));
  return { ...res, metadata: { ...res.metadata, name, resourceVersion: rv, uid: `uid-${name}`, ...extra } };
}

describe('cluster mode: replay throwaway versions', () => {
  describe('the throwaway Function', () => {
    it('keeps the original id, env (Secret references too), routes, timeout and memory; one active pod, no schedule, scaling or recording', () => {
      const res = throwawayResource(original(), 'export default (req, res) => res.end("new")', 'ab12c', Date.parse('2026-11-26T10:00:00Z'));
      expect(res.metadata.name).to.equal('pay-rp-ab12c');
      expect(res.metadata.namespace).to.equal('ns');
      expect(res.metadata.labels).to.deep.equal({ [LABEL_THROWAWAY]: 'replay', [LABEL_REPLAY_OF]: 'pay' });
      expect(res.metadata.annotations).to.deep.equal({ [ANNOTATION_EXPIRES_AT]: '2026-11-26T10:00:00.000Z' });
      expect(res.metadata.ownerReferences).to.deep.equal([{ apiVersion: API_VERSION, kind: KIND, name: 'pay', uid: 'uid-pay' }]);
      expect(res.spec).to.deep.equal({
        code: 'export default (req, res) => res.end("new")',
        functionId: derivedFunctionId('ns', 'pay'),
        active: true,
        replicas: 1,
        routes: ['/x'],
        env: [{ name: 'A', value: '1' }, { name: 'S', valueFrom: { secretKeyRef: { name: 'creds', key: 'k' } } }],
        timeoutSeconds: 7,
        memoryMiB: 256,
      });
    });

    it('keeps an imported spec.functionId, and is active even when the original is scaled to zero', () => {
      const res = throwawayResource(original({ functionId: '11111111-2222-5333-8444-555555555555', replicas: 0 }), 'x', 'aaaaa', 0);
      expect(res.spec.functionId).to.equal('11111111-2222-5333-8444-555555555555');
      expect(res.spec.replicas).to.equal(1);
    });

    it('cuts a long original name so that the throwaway name fits a Function name', () => {
      const long = 'a'.repeat(limits.MAX_FUNCTION_NAME_LENGTH);
      const name = throwawayName(long, 'zz9zz');
      expect(name.length).to.equal(limits.MAX_FUNCTION_NAME_LENGTH);
      expect(name.endsWith('-rp-zz9zz')).to.equal(true);
      expect(throwawayName('pay', 'zz9zz')).to.equal('pay-rp-zz9zz');
    });

    it('is told apart by its label, and its code sees the original name', () => {
      const res = throwaway('pay-rp-aaaaa', '1');
      expect(isThrowaway(res)).to.equal(true);
      expect(servedNameOf(res)).to.equal('pay');
      expect(isThrowaway(original())).to.equal(false);
      expect(servedNameOf(original())).to.equal('pay');
    });
  });

  describe('expiry of leftovers', () => {
    const now = Date.parse('2026-11-26T10:00:00Z');
    it('expires at its annotation', () => {
      const res = throwaway('t', '1', { annotations: { [ANNOTATION_EXPIRES_AT]: '2026-11-26T10:00:30Z' } });
      expect(throwawayExpiry(res, now)).to.deep.equal({ expired: false, inMs: 30_000 });
      expect(throwawayExpiry(res, now + 30_000).expired).to.equal(true);
    });
    it('falls back to its creation plus the longest lifetime when the annotation is missing or unreadable', () => {
      const res = throwaway('t', '1', { annotations: { [ANNOTATION_EXPIRES_AT]: 'soon' }, creationTimestamp: '2026-11-26T10:00:00Z' });
      expect(throwawayExpiry(res, now)).to.deep.equal({ expired: false, inMs: MAX_THROWAWAY_LIFETIME_MS });
      expect(throwawayExpiry(res, now + MAX_THROWAWAY_LIFETIME_MS).expired).to.equal(true);
    });
    it('is expired when nothing dates it', () => {
      const res = throwaway('t', '1', { annotations: {}, creationTimestamp: undefined });
      expect(throwawayExpiry(res, now)).to.deep.equal({ expired: true, inMs: 0 });
    });
  });

  describe('the cache keeps throwaways apart', () => {
    it('never lists, counts or finds them by id; holds them by name until deleted', () => {
      const cache = new FunctionCache();
      cache.put(original());
      const before = cache.version;
      const seen: string[] = [];
      cache.onThrowaway((key) => seen.push(key));
      cache.apply({ key: 'ns/pay-rp-aaaaa', object: throwaway('pay-rp-aaaaa', '11') });
      expect(cache.all().map((f) => f.name)).to.deep.equal(['pay']);
      // Same functionId as the original: the id still finds the original.
      expect(cache.get(derivedFunctionId('ns', 'pay'))!.name).to.equal('pay');
      expect(cache.getByName('ns', 'pay-rp-aaaaa')).to.equal(undefined);
      expect(cache.version).to.equal(before);
      expect(cache.throwaway('ns', 'pay-rp-aaaaa')!.spec.code).to.equal('new');
      expect(cache.throwaways({ namespace: 'ns', name: 'pay' })).to.have.length(1);
      expect(cache.throwaways({ namespace: 'ns', name: 'other' })).to.have.length(0);
      // An older event does not roll it back; one being deleted is not counted.
      cache.apply({ key: 'ns/pay-rp-aaaaa', object: throwaway('pay-rp-aaaaa', '12', { deletionTimestamp: '2026-11-26T10:00:00Z' }) });
      cache.apply({ key: 'ns/pay-rp-aaaaa', object: throwaway('pay-rp-aaaaa', '11') });
      expect(cache.throwaways()).to.have.length(0);
      cache.apply({ key: 'ns/pay-rp-aaaaa', object: undefined });
      expect(cache.throwaway('ns', 'pay-rp-aaaaa')).to.equal(undefined);
      expect(seen).to.deep.equal(['ns/pay-rp-aaaaa', 'ns/pay-rp-aaaaa', 'ns/pay-rp-aaaaa']);
    });
  });

  describe('status', () => {
    it('turns a code parse refusal into invalid_code, other refusals into 503, and ignores a condition about an older spec', () => {
      const res = throwaway('pay-rp-aaaaa', '1', { generation: 1 });
      expect(statusRefusal(res, 'pay')).to.equal(undefined);
      res.status = { conditions: [{ type: 'Ready', status: 'False', reason: 'CodeDoesNotParse', message: 'spec.code does not parse: SyntaxError: Unexpected token', lastTransitionTime: '', observedGeneration: 1 }] };
      const parse = statusRefusal(res, 'pay') as FnhostError;
      expect([parse.code, parse.status, parse.message]).to.deep.equal(['invalid_code', 400, 'code does not parse: SyntaxError: Unexpected token']);
      res.status.conditions![0]!.reason = 'Unschedulable';
      const other = statusRefusal(res, 'pay') as FnhostError;
      expect([other.code, other.status]).to.deep.equal(['replay_throwaway_not_ready', 503]);
      res.status.conditions![0]!.reason = 'TimeoutAboveMaximum';
      expect((statusRefusal(res, 'pay') as FnhostError).status, 'what makes any function unrunnable').to.equal(503);
      expect(other.message).to.contain('ns/pay-rp-aaaaa').and.to.contain('Unschedulable');
      res.status.conditions![0]!.observedGeneration = 0;
      expect(statusRefusal(res, 'pay')).to.equal(undefined);
      res.status.conditions![0]!.observedGeneration = 1;
      res.status.conditions![0]!.reason = 'Progressing';
      expect(statusRefusal(res, 'pay')).to.equal(undefined);
    });
  });

  describe('ClusterThrowaways', () => {
    let server: Server | undefined;
    afterEach(async () => {
      if (server !== undefined) await new Promise((r) => server!.close(r));
      server = undefined;
    });

    function setup(options: { created?: (body: FunctionResource) => FunctionResource } = {}) {
      const clock = new FakeClock();
      const cache = new FunctionCache();
      cache.put(original());
      const endpoints = new EndpointIndex();
      const requests: Array<{ method: string; path: string; body?: unknown }> = [];
      const client = {
        async request<T>(method: string, path: string, opts: { body?: unknown } = {}): Promise<T> {
          requests.push({ method, path, body: opts.body });
          if (method === 'POST') {
            const body = opts.body as FunctionResource;
            return (options.created ?? ((b) => ({ ...b, metadata: { ...b.metadata, uid: 'uid-t', resourceVersion: '20', generation: 1 } })))(body) as T;
          }
          if (method === 'DELETE') return { kind: 'Status' } as T;
          throw new Error(`unexpected ${method}`);
        },
      };
      const logger = new MemoryLogger();
      const throwaways = new ClusterThrowaways({ client: client as never, cache, endpoints, clock, logger, readyMs: 60_000, maxPerFunction: 2, suffix: () => 'aaaaa' });
      const fn = { ...cache.get(derivedFunctionId('ns', 'pay'))!, code: 'new' };
      return { clock, cache, endpoints, requests, throwaways, fn, logger };
    }

    function slice(origin: string, ready: boolean): EndpointSlice {
      const url = new URL(origin);
      return {
        metadata: { name: 'fn-pay-rp-aaaaa-x', namespace: 'ns', labels: { 'kubernetes.io/service-name': 'fn-pay-rp-aaaaa' } },
        addressType: 'IPv4',
        ports: [{ name: 'http', port: Number(url.port) }],
        endpoints: [{ addresses: [url.hostname], conditions: { ready } }],
      };
    }

    async function runtime(answer: (waitLoad: boolean) => { status: number; body: unknown }): Promise<string> {
      server = createServer((req, res) => {
        const { status, body } = answer(req.headers['x-fnhost-wait-load'] !== undefined);
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      });
      await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
      return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    }

    it('creates the throwaway, answers with its pod once the module loaded (a starting pod asked), and deletes it on discard', async () => {
      const { cache, endpoints, requests, throwaways, fn } = setup();
      const origin = await runtime((waitLoad) => (waitLoad ? { status: 200, body: { status: 'ok' } } : { status: 503, body: {} }));
      const started = throwaways.start(fn);
      await settle();
      expect(requests[0]!.method).to.equal('POST');
      expect((requests[0]!.body as FunctionResource).metadata.name).to.equal('pay-rp-aaaaa');
      endpoints.apply({ key: 'ns/fn-pay-rp-aaaaa-x', object: slice(origin, false) });
      const runtimeOf = await started;
      expect(runtimeOf.upstream.origin).to.equal(origin);
      expect(cache.throwaways({ namespace: 'ns', name: 'pay' })).to.have.length(1);
      await runtimeOf.discard();
      // No longer counted against the bound, before the watch reports the deletion.
      expect(cache.throwaways({ namespace: 'ns', name: 'pay' })).to.have.length(0);
      await runtimeOf.discard();
      expect(requests.filter((r) => r.method === 'DELETE').map((r) => r.path)).to.deep.equal(['/apis/fnhost.dev/v1alpha1/namespaces/ns/functions/pay-rp-aaaaa']);
      expect(throwaways.created).to.equal(1);
    });

    it('refuses code whose module exports no handler (400 invalid_code) and deletes the throwaway', async () => {
      const { endpoints, requests, throwaways, fn } = setup();
      const origin = await runtime(() => ({ status: 503, body: { status: 'error', error: 'load', kind: 'no_handler', message: 'the module exports no handler: x' } }));
      const started = throwaways.start(fn).then(() => undefined, (err: FnhostError) => err);
      await settle();
      endpoints.apply({ key: 'ns/fn-pay-rp-aaaaa-x', object: slice(origin, false) });
      const err = (await started) as FnhostError;
      expect([err.code, err.status]).to.deep.equal(['invalid_code', 400]);
      expect(requests.map((r) => r.method)).to.deep.equal(['POST', 'DELETE']);
    });

    it('refuses code the operator could not parse (its status), and deletes the throwaway', async () => {
      const { cache, requests, throwaways, fn } = setup();
      const started = throwaways.start(fn).then(() => undefined, (err: FnhostError) => err);
      await settle();
      const res = cache.throwaway('ns', 'pay-rp-aaaaa')!;
      cache.apply({ key: 'ns/pay-rp-aaaaa', object: { ...res, metadata: { ...res.metadata, resourceVersion: '21' }, status: { conditions: [{ type: 'Ready', status: 'False', reason: 'CodeDoesNotParse', message: 'spec.code does not parse: SyntaxError: x', lastTransitionTime: '', observedGeneration: 1 }] } } });
      const err = (await started) as FnhostError;
      expect([err.code, err.status, err.message]).to.deep.equal(['invalid_code', 400, 'code does not parse: SyntaxError: x']);
      expect(requests.map((r) => r.method)).to.deep.equal(['POST', 'DELETE']);
    });

    it('gives up after its bound with 504 naming the throwaway and its condition, and deletes it', async () => {
      const { clock, requests, throwaways, fn } = setup();
      const started = throwaways.start(fn).then(() => undefined, (err: FnhostError) => err);
      await clock.advance(60_000);
      const err = (await started) as FnhostError;
      expect([err.code, err.status]).to.deep.equal(['replay_throwaway_not_ready', 504]);
      expect(err.message).to.contain('ns/pay-rp-aaaaa').and.to.contain('60 s');
      expect(requests.map((r) => r.method)).to.deep.equal(['POST', 'DELETE']);
    });

    it('allows at most maxPerFunction at a time (429 before anything is created)', async () => {
      const { cache, requests, throwaways, fn } = setup();
      cache.apply({ key: 'ns/pay-rp-bbbbb', object: throwaway('pay-rp-bbbbb', '30') });
      cache.apply({ key: 'ns/pay-rp-ccccc', object: throwaway('pay-rp-ccccc', '31') });
      const err = await throwaways.start(fn).then(() => undefined, (e: FnhostError) => e);
      expect([err!.code, err!.status]).to.deep.equal(['replay_throwaways_busy', 429]);
      expect(requests).to.have.length(0);
    });

    it('turns a refused create into 503 and sends no pod a call', async () => {
      const { requests, throwaways, fn } = setup({ created: () => { throw new KubeApiError(403, 'Forbidden', 'POST functions: 403 quota exceeded'); } });
      const err = await throwaways.start(fn).then(() => undefined, (e: FnhostError) => e);
      expect([err!.code, err!.status]).to.deep.equal(['replay_throwaway_not_ready', 503]);
      expect(err!.message).to.contain('quota exceeded');
      expect(requests.map((r) => r.method)).to.deep.equal(['POST', 'DELETE']);
    });

    it('sweeps only throwaways past their expiry', async () => {
      const { cache, clock, requests, throwaways } = setup();
      cache.apply({ key: 'ns/pay-rp-old00', object: throwaway('pay-rp-old00', '30', { annotations: { [ANNOTATION_EXPIRES_AT]: new Date(clock.now() - 1).toISOString() } }) });
      cache.apply({ key: 'ns/pay-rp-new00', object: throwaway('pay-rp-new00', '31', { annotations: { [ANNOTATION_EXPIRES_AT]: new Date(clock.now() + 60_000).toISOString() } }) });
      expect(await throwaways.sweep()).to.equal(1);
      expect(requests.map((r) => `${r.method} ${r.path}`)).to.deep.equal(['DELETE /apis/fnhost.dev/v1alpha1/namespaces/ns/functions/pay-rp-old00']);
      expect(throwaways.swept).to.equal(1);
    });
  });
});
