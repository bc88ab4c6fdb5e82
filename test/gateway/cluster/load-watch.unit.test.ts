import { expect } from 'chai';
import { EndpointIndex, type EndpointSlice } from '../../../gateway/src/cluster/endpoints.ts';
import { LoadWatch, MAX_ATTEMPTS, MAX_IN_FLIGHT, MAX_MESSAGE_CHARS, RETRY_MS, failureToReport, type LoadAnswer } from '../../../gateway/src/cluster/load-watch.ts';
import { API_VERSION, KIND, type FunctionResource, type LoadFailure } from '@fnhost/core/function-resource.ts';
import { FakeClock, MemoryLogger, settle } from './fakes.ts';

// The gateway's load watch (docs/cluster-mode.md "Code that fails to load"): each starting pod of
// a function is asked once how its module load ended, and a failure is written into the
// Function's status.loadFailure, once; unreachable pods are asked again a bounded number of times.

type Ep = NonNullable<EndpointSlice['endpoints']>[number];
const pod = (ip: string, name: string, ready = false): Ep => ({ addresses: [ip], conditions: { ready }, targetRef: { kind: 'Pod', name } });
function slice(name: string, endpoints: Ep[]): EndpointSlice {
  return { metadata: { name, namespace: 'ns', labels: { 'kubernetes.io/service-name': 'fn-hello' } }, addressType: 'IPv4', ports: [{ name: 'http', port: 8080 }], endpoints };
}
function fn(status?: FunctionResource['status']): FunctionResource {
  return { apiVersion: API_VERSION, kind: KIND, metadata: { name: 'hello', namespace: 'ns', generation: 2 }, spec: { code: 'x', timeoutSeconds: 5 }, ...(status ? { status } : {}) };
}

function setup(answer: (origin: string) => Promise<LoadAnswer>) {
  const clock = new FakeClock();
  const endpoints = new EndpointIndex();
  let resource = fn();
  const asked: string[] = [];
  const reports: LoadFailure[] = [];
  const watch = new LoadWatch({
    subscribe: (l) => endpoints.subscribe(l),
    startingPods: (s) => endpoints.startingPods(s),
    functionOf: (s) => (s === 'ns/fn-hello' ? resource : undefined),
    ask: (origin) => {
      asked.push(origin);
      return answer(origin);
    },
    report: async (_fn, failure) => {
      reports.push(failure);
      resource = fn({ loadFailure: failure });
    },
    clock,
    logger: new MemoryLogger(),
  });
  watch.start();
  const put = (s: EndpointSlice) => endpoints.apply({ key: `ns/${s.metadata.name}`, object: s });
  return { clock, endpoints, watch, asked, reports, put, setResource: (r: FunctionResource) => (resource = r) };
}

const failed: LoadAnswer = { kind: 'failed', message: 'the module threw while loading: Error: API_KEY is not set (at src/handler.ts:3:7)' };

describe('cluster mode: the load watch of starting pods', () => {
  it('asks each starting pod once and writes its load failure into the status once, naming the pod', async () => {
    const t = setup(async () => failed);
    t.put(slice('s1', [pod('10.0.0.1', 'fn-hello-abc')]));
    await settle();
    expect(t.asked).to.deep.equal(['http://10.0.0.1:8080']);
    expect(t.reports).to.have.length(1);
    expect(t.reports[0]).to.include({ pod: 'fn-hello-abc', kind: 'failed', message: failed!.message });
    // Another change of the slice (a second pod, ready): the first is not asked again.
    t.put(slice('s1', [pod('10.0.0.1', 'fn-hello-abc'), pod('10.0.0.2', 'fn-hello-def', true)]));
    await settle();
    expect(t.asked).to.have.length(1);
    expect(t.reports).to.have.length(1);
    expect(t.watch.asked).to.equal(1);
  });

  it('writes nothing for a pod that loaded, nor when the status already names the same failure', async () => {
    const loaded = setup(async () => undefined);
    loaded.put(slice('s1', [pod('10.0.0.1', 'fn-hello-abc')]));
    await settle();
    expect(loaded.asked).to.have.length(1);
    expect(loaded.reports).to.deep.equal([]);

    const current = fn({ loadFailure: { pod: 'fn-hello-abc', kind: 'failed', message: failed!.message, at: '2026-01-01T00:00:00Z' } });
    expect(failureToReport(current, 'fn-hello-abc', failed!, failed!.message, 0)).to.equal(undefined);
    expect(failureToReport(current, 'fn-hello-xyz', failed!, failed!.message, 0)).to.include({ pod: 'fn-hello-xyz' });
    const long = failureToReport(fn(), 'p', failed!, 'x'.repeat(10_000), 0)!;
    expect(long.message.length).to.equal(MAX_MESSAGE_CHARS + 1);
  });

  it('asks an unreachable pod again after RETRY_MS, at most MAX_ATTEMPTS times', async () => {
    const t = setup(async () => {
      throw new Error('ECONNREFUSED');
    });
    t.put(slice('s1', [pod('10.0.0.1', 'fn-hello-abc')]));
    await settle();
    expect(t.asked).to.have.length(1);
    await t.clock.advance(RETRY_MS - 1);
    expect(t.asked).to.have.length(1);
    await t.clock.advance(1);
    expect(t.asked).to.have.length(2);
    await t.clock.advance(RETRY_MS * (MAX_ATTEMPTS + 5));
    expect(t.asked).to.have.length(MAX_ATTEMPTS);
    expect(t.clock.timers).to.deep.equal([]);
  });

  it('a load still unsettled at the function\'s time limit and the start\'s slack is a failure (a top-level await that never settles)', async () => {
    const t = setup(async () => {
      throw new DOMException('The operation was aborted due to timeout', 'TimeoutError');
    });
    t.put(slice('s1', [pod('10.0.0.1', 'fn-hello-abc')]));
    await settle();
    expect(t.reports).to.have.length(1);
    expect(t.reports[0]!.message).to.include('did not finish loading within 5 s');
    expect(t.clock.timers, 'not asked again').to.deep.equal([]);
  });

  it('never asks a pod that is ready, terminating or of no known function', async () => {
    const t = setup(async () => failed);
    t.put(slice('s1', [pod('10.0.0.1', 'a', true), { addresses: ['10.0.0.3'], conditions: { ready: false, terminating: true }, targetRef: { kind: 'Pod', name: 'c' } }]));
    t.endpoints.apply({ key: 'ns/other', object: { ...slice('other', [pod('10.0.0.4', 'd')]), metadata: { name: 'other', namespace: 'ns', labels: { 'kubernetes.io/service-name': 'fn-other' } } } });
    await settle();
    expect(t.asked).to.deep.equal([]);
  });

  it(`holds at most ${MAX_IN_FLIGHT} questions at once (a load settles slowly); the rest wait their turn`, async () => {
    const waiting: Array<() => void> = [];
    const t = setup(() => new Promise<LoadAnswer>((resolve) => waiting.push(() => resolve(undefined))));
    const many = Array.from({ length: MAX_IN_FLIGHT + 8 }, (_, i) => pod(`10.0.1.${i}`, `p${i}`));
    t.put(slice('s1', many));
    await settle();
    expect(t.watch.inFlight).to.equal(MAX_IN_FLIGHT);
    for (const release of waiting.splice(0)) release();
    await settle();
    expect(t.asked).to.have.length(MAX_IN_FLIGHT + 8);
  });
});
