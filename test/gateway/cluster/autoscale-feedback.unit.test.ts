import { expect } from 'chai';
import { ConcurrencyMeter, PANIC_WINDOW_MS, STABLE_WINDOW_MS } from '../../../gateway/src/cluster/concurrency.ts';
import { PANIC_WRITE_INTERVAL_MS, StatusFeedback, type StatusFields } from '../../../gateway/src/cluster/status.ts';
import { EndpointIndex, type EndpointSlice } from '../../../gateway/src/cluster/endpoints.ts';
import { ClusterExecutor, FunctionUnavailableError, LOAD_ERROR, PROBE_INTERVAL_MS } from '../../../gateway/src/cluster/executor.ts';
import { cannotRunReason, recordFromResource } from '../../../gateway/src/cluster/resource.ts';
import { API_VERSION, KIND, type FunctionResource } from '@fnhost/core/function-resource.ts';
import { FakeClock, MemoryLogger, settle } from './fakes.ts';

const T0 = 1_700_000_000_000;

describe('cluster mode: calls in flight for the autoscaler', () => {
  it('averages calls in flight over the stable and the panic window, exactly (time-weighted)', () => {
    const m = new ConcurrencyMeter();
    let now = T0;
    // 10 calls in flight for 3 s, then none.
    for (let i = 0; i < 10; i++) m.started('f', now);
    now += 3000;
    for (let i = 0; i < 10; i++) m.ended('f', now);
    const a = m.averages('f', now);
    expect(a.inFlight).to.equal(0);
    expect(a.panic).to.be.closeTo((10 * 3000) / PANIC_WINDOW_MS, 1e-9);
    expect(a.stable).to.be.closeTo((10 * 3000) / STABLE_WINDOW_MS, 1e-9);
    // 6 s later the burst has left the panic window but not the stable one.
    expect(m.averages('f', now + 6000).panic).to.equal(0);
    expect(m.averages('f', now + 6000).stable).to.be.closeTo(0.5, 1e-9);
    expect(m.active('f', now + 6000)).to.equal(true);
    // A stable window later: nothing left, and the meter is dropped.
    expect(m.active('f', now + STABLE_WINDOW_MS + 1000)).to.equal(false);
    expect(m.averages('f', now + STABLE_WINDOW_MS + 1000)).to.deep.equal({ stable: 0, panic: 0, inFlight: 0 });
  });

  it('a call still in flight counts for all the time it holds, across seconds and a long quiet gap', () => {
    const m = new ConcurrencyMeter();
    m.started('f', T0 + 500);
    const a = m.averages('f', T0 + 120_500);
    expect(a.inFlight).to.equal(1);
    expect(a.stable).to.be.closeTo(1, 1e-9);
    expect(a.panic).to.be.closeTo(1, 1e-9);
    m.ended('f', T0 + 120_500);
    m.ended('f', T0 + 120_500); // one end too many is ignored
    expect(m.averages('f', T0 + 120_500).inFlight).to.equal(0);
  });

  it('status feedback: reports under this gateway\'s key while calls are in the window, a last zero, and a burst sooner than the interval', async () => {
    const clock = new FakeClock();
    const writes: Array<{ at: number; id: string; fields: StatusFields }> = [];
    const fb = new StatusFeedback({
      clock,
      intervalMs: 10_000,
      logger: new MemoryLogger(),
      writer: { write: async (id, fields) => (writes.push({ at: clock.now(), id, fields }), true) },
      concurrency: { meter: new ConcurrencyMeter(), gatewayId: 'gw-0', capacity: (id) => (id === 'auto' ? 2 : undefined) },
    });
    // A function without spec.scaling is not measured: only the usual feedback.
    fb.callStarted('plain');
    fb.callEnded('plain');
    fb.record('plain', 200);
    // One call of `auto` in flight: written at once (first write), with its report.
    fb.callStarted('auto');
    await clock.advance(0);
    await settle();
    const first = writes.find((w) => w.id === 'auto')!;
    expect(first.fields.concurrency).to.have.key('gw-0');
    expect(first.fields.lastInvocationTime, 'a call in flight keeps the function from looking idle').to.be.a('string');
    expect(writes.find((w) => w.id === 'plain')!.fields.concurrency).to.equal(undefined);
    // A burst: 9 more calls; once the 6 s window reads twice the capacity, a write comes PANIC_WRITE_INTERVAL_MS after the last.
    await clock.advance(1000);
    for (let i = 0; i < 9; i++) fb.callStarted('auto');
    await clock.advance(3000);
    fb.callStarted('auto');
    await clock.advance(PANIC_WRITE_INTERVAL_MS);
    await settle();
    const autoWrites = () => writes.filter((w) => w.id === 'auto');
    expect(autoWrites().length, 'a burst is written before the interval').to.equal(2);
    expect(autoWrites()[1]!.at - first.at).to.be.lessThan(10_000);
    expect(autoWrites()[1]!.fields.concurrency!['gw-0']!.panic).to.be.greaterThan(4);
    // The calls end; writes go on once per interval while the stable window holds calls, then a last zero, then none.
    for (let i = 0; i < 11; i++) fb.callEnded('auto');
    fb.record('auto', 200);
    await clock.advance(STABLE_WINDOW_MS + 30_000);
    await settle();
    const last = autoWrites()[autoWrites().length - 1]!;
    expect(last.fields.concurrency!['gw-0']).to.include({ stable: 0, panic: 0 });
    const gaps = autoWrites().slice(2).map((w, i) => w.at - autoWrites()[i + 1]!.at);
    for (const gap of gaps) expect(gap).to.be.at.least(10_000);
    const count = writes.length;
    await clock.advance(120_000);
    expect(writes.length, 'no writes once the window is empty').to.equal(count);
    await fb.close();
  });
});

describe('cluster mode: a function that cannot run answers at once', () => {
  type Ep = NonNullable<EndpointSlice['endpoints']>[number];
  const slice = (endpoints: Ep[]): EndpointSlice => ({
    metadata: { name: 's', namespace: 'ns', labels: { 'kubernetes.io/service-name': 'fn-a' } },
    addressType: 'IPv4',
    ports: [{ name: 'http', port: 8080 }],
    endpoints,
  });
  const starting = (ip: string): Ep => ({ addresses: [ip], conditions: { ready: false } });
  const resource = (conditions: object[], generation = 2): FunctionResource => ({
    apiVersion: API_VERSION,
    kind: KIND,
    metadata: { name: 'a', namespace: 'ns', generation },
    spec: { code: 'x', timeoutSeconds: 30 },
    status: { conditions: conditions as never },
  });
  const cond = (reason: string, observedGeneration = 2) => ({ type: 'Ready', status: 'False', reason, message: 'SyntaxError at line 2', observedGeneration, lastTransitionTime: '2026-11-26T10:00:00Z' });

  it('reads the reason from a Ready=False condition about the current generation only', () => {
    expect(cannotRunReason(resource([cond('CodeDoesNotParse')]))).to.equal('function a (namespace ns) cannot run: CodeDoesNotParse (kubectl describe function a -n ns)');
    expect(cannotRunReason(resource([cond('CodeDoesNotParse', 1)])), 'the operator has not seen the new spec').to.equal(undefined);
    expect(cannotRunReason(resource([{ ...cond('LoadFailed'), message: 'the code failed to load in pod fn-a-1: Error: API_KEY abc123 is wrong' }])), 'the reason, never the owner\'s error text').to.equal(
      'function a (namespace ns) cannot run: LoadFailed (kubectl describe function a -n ns)',
    );
    expect(cannotRunReason(resource([cond('Progressing')]))).to.equal(undefined);
    expect(cannotRunReason(resource([cond('RuntimeNotReady')])), 'every start is not ready for a moment').to.equal(undefined);
    expect(cannotRunReason(undefined)).to.equal(undefined);
  });

  it('status: 503 function_unavailable without holding; load error: as soon as every starting pod says so', async () => {
    const clock = new FakeClock();
    const idx = new EndpointIndex();
    const res = resource([cond('CodeDoesNotParse')]);
    const fn = recordFromResource(res)!;
    let why: string | undefined = cannotRunReason(res);
    const answers = new Map<string, boolean | typeof LOAD_ERROR>();
    const woken: string[] = [];
    const ex = new ClusterExecutor({ endpoints: idx, clock, wake: (f) => woken.push(f.name), cannotRun: () => why, probe: async (origin) => answers.get(origin) ?? false });
    const err = await ex.acquire(fn).then(() => null, (e: unknown) => e);
    expect(err).to.be.instanceOf(FunctionUnavailableError);
    expect((err as FunctionUnavailableError).status).to.equal(503);
    expect((err as Error).message).to.contain('CodeDoesNotParse');
    expect(woken, 'nothing is held, nothing woken').to.deep.equal([]);
    expect(ex.held).to.equal(0);

    // The status says nothing; the pods' runtimes answer that the module failed to load.
    why = undefined;
    let outcome: unknown;
    const pending = ex.acquire(fn).then(() => 'served', (e: unknown) => e);
    void pending.then((o) => (outcome = o));
    answers.set('http://10.0.0.7:8080', LOAD_ERROR);
    answers.set('http://10.0.0.8:8080', false); // a second pod still loading (a rollout): keep holding
    idx.apply({ key: 'ns/s', object: slice([starting('10.0.0.7'), starting('10.0.0.8')]) });
    await clock.advance(PROBE_INTERVAL_MS * 3);
    await settle();
    expect(outcome).to.equal(undefined);
    answers.set('http://10.0.0.8:8080', LOAD_ERROR);
    await clock.advance(PROBE_INTERVAL_MS * 2);
    await settle();
    expect(outcome).to.be.instanceOf(FunctionUnavailableError);
    expect((outcome as Error).message).to.match(/cannot run: its code failed to load/);
    expect(clock.now() - T0, 'well before the 30 s hold bound').to.be.lessThan(1000);
    expect(ex.unrunnable).to.equal(2);
    await ex.close();
  });
});
