import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EndpointIndex, type EndpointSlice } from '../../../gateway/src/cluster/endpoints.ts';
import {
  ClusterExecutor, FunctionUnavailableError, MAX_PROBES_PER_FUNCTION, MAX_PROBES_PER_INTERVAL, PROBE_INTERVAL_MS, PROBE_TIMEOUT_MS, PROBED_POD_TTL_MS, REFUSED_ORIGIN_TTL_MS,
} from '../../../gateway/src/cluster/executor.ts';
import { httpHealthProbe } from '../../../gateway/src/cluster/probe.ts';
import { API_VERSION, KIND } from '@fnhost/core/function-resource.ts';
import { recordFromResource } from '../../../gateway/src/cluster/resource.ts';
import { FakeClock, settle } from './fakes.ts';

// The executor probing the starting pods of a function whose calls are held
// (docs/cluster-mode.md, Calls to pods), with a fake clock and a fake probe.

type Ep = NonNullable<EndpointSlice['endpoints']>[number];

function slice(name: string, service: string, endpoints: Ep[]): EndpointSlice {
  return { metadata: { name, namespace: 'ns', labels: { 'kubernetes.io/service-name': service } }, addressType: 'IPv4', ports: [{ name: 'http', port: 8080 }], endpoints };
}
const starting = (ip: string): Ep => ({ addresses: [ip], conditions: { ready: false } });
const ready = (ip: string): Ep => ({ addresses: [ip], conditions: { ready: true } });
const terminating = (ip: string): Ep => ({ addresses: [ip], conditions: { ready: false, terminating: true } });

function fnNamed(name: string) {
  return recordFromResource({ apiVersion: API_VERSION, kind: KIND, metadata: { name, namespace: 'ns' }, spec: { code: 'x', timeoutSeconds: 5 } })!;
}

/** A probe the test answers: each call waits until `answer` (or its abort). `healthy` answers at once. */
class FakeProbe {
  calls: Array<{ origin: string; signal: AbortSignal; answer: (ok: boolean) => void; settled: boolean }> = [];
  /** Origins answering at once (true: 200, false: 503); others wait for the test. */
  auto = new Map<string, boolean>();
  readonly probe = (origin: string, signal: AbortSignal): Promise<boolean> =>
    new Promise<boolean>((resolve, reject) => {
      const call = { origin, signal, settled: false, answer: (ok: boolean) => ((call.settled = true), resolve(ok)) };
      this.calls.push(call);
      signal.addEventListener('abort', () => ((call.settled = true), reject(new Error('aborted'))));
      const auto = this.auto.get(origin);
      if (auto !== undefined) call.answer(auto);
    });
  to(origin: string): number {
    return this.calls.filter((c) => c.origin === origin).length;
  }
  /** Probes still waiting for an answer. */
  open(origin?: string) {
    return this.calls.filter((c) => !c.settled && (origin === undefined || c.origin === origin));
  }
}

const A = 'http://10.0.0.7:8080';

describe('cluster mode: probing starting pods while calls are held', () => {
  const fn = fnNamed('a');

  function setup(holdMs = 30_000) {
    const idx = new EndpointIndex();
    const clock = new FakeClock();
    const fake = new FakeProbe();
    const woken: string[] = [];
    const ex = new ClusterExecutor({ endpoints: idx, clock, probe: fake.probe, wake: (f) => woken.push(f.name), holdMs });
    return { idx, clock, fake, ex, woken };
  }

  it('sends a held call to a starting pod as soon as its /healthz answers 200, before the slice says ready', async () => {
    const { idx, clock, fake, ex, woken } = setup();
    let answered: string | undefined;
    const pending = ex.acquire(fn).then((u) => (answered = u.origin));
    await settle();
    expect(woken).to.deep.equal(['a']);
    expect(fake.calls, 'nothing to probe before the pod has an address').to.deep.equal([]);
    // The pod gets its IP: the slice lists it, not ready. It is probed at once (no wait for the next interval).
    idx.apply({ key: 'ns/s', object: slice('s', 'fn-a', [starting('10.0.0.7')]) });
    expect(fake.to(A)).to.equal(1);
    fake.open(A)[0]!.answer(false);
    await clock.advance(PROBE_INTERVAL_MS);
    expect(fake.to(A)).to.equal(2);
    expect(answered).to.equal(undefined);
    fake.open(A)[0]!.answer(true);
    await pending;
    expect(answered).to.equal(A);
    expect(ex.releasedByProbe).to.equal(1);
    expect(ex.releasedBySlice).to.equal(0);
    expect(ex.held).to.equal(0);
    expect(ex.probing, 'the prober stopped').to.equal(0);
    expect(clock.timers, 'no timer left (hold, interval, probe timeouts)').to.deep.equal([]);
    // Until its slice catches up, new calls go to that pod without being held.
    expect(await ex.acquire(fn)).to.deep.equal({ origin: A });
    expect(ex.holds).to.equal(1);
    // The slice says ready: the normal path.
    idx.apply({ key: 'ns/s', object: slice('s', 'fn-a', [ready('10.0.0.7')]) });
    expect(await ex.acquire(fn)).to.deep.equal({ origin: A });
    expect(fake.calls.length, 'no probe without a held call').to.equal(2);
  });

  it('uses a probed pod for new calls only briefly: until the TTL, or until its slice drops it', async () => {
    const { idx, clock, fake, ex } = setup();
    fake.auto.set(A, true);
    idx.apply({ key: 'ns/s', object: slice('s', 'fn-a', [starting('10.0.0.7')]) });
    expect(await ex.acquire(fn)).to.deep.equal({ origin: A, coldStart: true });
    expect(ex.releasedByProbe).to.equal(1);
    await clock.advance(PROBED_POD_TTL_MS - 1);
    expect(await ex.acquire(fn)).to.deep.equal({ origin: A });
    expect(ex.holds).to.equal(1);
    await clock.advance(1);
    // Past the TTL the call is held again, and probed again (the pod still answers 200).
    expect(await ex.acquire(fn)).to.deep.equal({ origin: A, coldStart: true });
    expect(ex.holds).to.equal(2);
    expect(ex.releasedByProbe).to.equal(2);
    // The pod leaves the slice: never used again, the call is held (and times out, nothing else starting).
    idx.apply({ key: 'ns/s', object: slice('s', 'fn-a', []) });
    const refused = ex.acquire(fn).then(() => null, (e: unknown) => e);
    await clock.advance(5000);
    expect(await refused).to.be.instanceOf(FunctionUnavailableError);
    expect(ex.holds).to.equal(3);
  });

  it('keeps probing while /healthz answers 503, one probe in flight per pod, and stops when the slice says ready', async () => {
    const { idx, clock, fake, ex } = setup();
    fake.auto.set(A, false);
    idx.apply({ key: 'ns/s', object: slice('s', 'fn-a', [starting('10.0.0.7')]) });
    const pending = ex.acquire(fn);
    await settle();
    expect(fake.to(A)).to.equal(1);
    await clock.advance(10 * PROBE_INTERVAL_MS);
    expect(fake.to(A)).to.equal(11);
    expect(ex.held).to.equal(1);
    // A probe that hangs is not doubled: the next one waits for its answer or its timeout.
    fake.auto.delete(A);
    await clock.advance(PROBE_INTERVAL_MS);
    expect(fake.to(A)).to.equal(12);
    await clock.advance(PROBE_TIMEOUT_MS - 1);
    expect(fake.to(A), 'still in flight').to.equal(12);
    expect(fake.open(A)).to.have.length(1);
    await clock.advance(1);
    expect(fake.calls[11]!.signal.aborted, 'aborted at its timeout').to.equal(true);
    await clock.advance(PROBE_INTERVAL_MS);
    expect(fake.to(A), 'probed again after the timeout').to.be.greaterThan(12);
    const last = fake.open(A);
    expect(last).to.have.length(1);
    idx.apply({ key: 'ns/s', object: slice('s', 'fn-a', [ready('10.0.0.7')]) });
    expect(await pending).to.deep.equal({ origin: A, coldStart: true });
    expect(ex.releasedBySlice).to.equal(1);
    expect(ex.releasedByProbe).to.equal(0);
    expect(last[0]!.signal.aborted, 'the probe in flight is aborted').to.equal(true);
    const total = fake.to(A);
    await clock.advance(10 * PROBE_INTERVAL_MS);
    expect(fake.to(A), 'no probe after the release').to.equal(total);
    expect(clock.timers).to.deep.equal([]);
  });

  it('never probes or uses a terminating pod, nor one that turns terminating or leaves the slice during its probe', async () => {
    const { idx, clock, fake, ex } = setup();
    const T = 'http://10.0.0.8:8080';
    const B = 'http://10.0.0.9:8080';
    fake.auto.set(T, true);
    idx.apply({ key: 'ns/s', object: slice('s', 'fn-a', [terminating('10.0.0.8'), starting('10.0.0.9')]) });
    let settledWith: unknown;
    const pending = ex.acquire(fn).then((u) => (settledWith = u), (e: unknown) => (settledWith = e));
    await settle();
    expect(fake.to(T)).to.equal(0);
    expect(fake.to(B)).to.equal(1);
    // B turns terminating while its probe is in flight, then answers 200: not used.
    idx.apply({ key: 'ns/s', object: slice('s', 'fn-a', [terminating('10.0.0.8'), terminating('10.0.0.9')]) });
    fake.calls.find((c) => c.origin === B)!.answer(true);
    await clock.advance(10 * PROBE_INTERVAL_MS);
    expect(settledWith).to.equal(undefined);
    expect(fake.to(T)).to.equal(0);
    expect(fake.to(B), 'a terminating pod is not probed again').to.equal(1);
    // A new pod starts, and leaves the slice while its probe is in flight: its 200 is not used either.
    idx.apply({ key: 'ns/s', object: slice('s', 'fn-a', [starting('10.0.0.10')]) });
    const C = 'http://10.0.0.10:8080';
    expect(fake.to(C)).to.equal(1);
    const inFlight = fake.open(C)[0]!;
    idx.apply({ key: 'ns/s', object: undefined });
    expect(inFlight.signal.aborted, 'its probe is cancelled').to.equal(true);
    await clock.advance(5000);
    expect(settledWith).to.be.instanceOf(FunctionUnavailableError);
    expect(ex.releasedByProbe).to.equal(0);
    expect(fake.to(T)).to.equal(0);
    await pending;
  });

  it('stops probing when no call is held any more: the bound still gives the clear 503', async () => {
    const { idx, clock, fake, ex } = setup();
    fake.auto.set(A, false);
    idx.apply({ key: 'ns/s', object: slice('s', 'fn-a', [starting('10.0.0.7')]) });
    const pending = ex.acquire(fn).then(() => null, (e: unknown) => e);
    await clock.advance(4999);
    expect(ex.held).to.equal(1);
    expect(ex.probing).to.equal(1);
    const probes = fake.to(A);
    expect(probes).to.be.greaterThan(150);
    fake.auto.delete(A);
    await clock.advance(1);
    const err = (await pending) as FunctionUnavailableError;
    expect(err).to.be.instanceOf(FunctionUnavailableError);
    expect(err.status).to.equal(503);
    expect(err.code).to.equal('function_unavailable');
    expect(err.message).to.match(/has no ready pod after 5 s/);
    expect(ex.holdTimeouts).to.equal(1);
    expect(ex.probing).to.equal(0);
    expect(clock.timers).to.deep.equal([]);
    await clock.advance(1000);
    expect(fake.to(A), 'no probe once nothing is held').to.equal(probes);
    expect(ex.probes).to.equal(probes);
  });

  it('shares one prober among all the held calls of a function, and releases them all to the pod that answered', async () => {
    const { idx, clock, fake, ex } = setup();
    idx.apply({ key: 'ns/s', object: slice('s', 'fn-a', [starting('10.0.0.7')]) });
    const calls = [ex.acquire(fn), ex.acquire(fn), ex.acquire(fn)];
    await settle();
    expect(ex.held).to.equal(3);
    expect(ex.probing).to.equal(1);
    expect(fake.to(A), 'one probe, not one per held call').to.equal(1);
    fake.open(A)[0]!.answer(false);
    await clock.advance(PROBE_INTERVAL_MS);
    expect(fake.to(A)).to.equal(2);
    // Another function held at the same time has its own prober.
    const other = fnNamed('b');
    idx.apply({ key: 'ns/sb', object: slice('sb', 'fn-b', [starting('10.0.1.1')]) });
    const otherCall = ex.acquire(other);
    await settle();
    expect(ex.probing).to.equal(2);
    fake.open(A)[0]!.answer(true);
    expect(await Promise.all(calls)).to.deep.equal([{ origin: A, coldStart: true }, { origin: A, coldStart: true }, { origin: A, coldStart: true }]);
    expect(ex.releasedByProbe).to.equal(3);
    expect(ex.probing).to.equal(1);
    expect(ex.held).to.equal(1);
    fake.open('http://10.0.1.1:8080')[0]!.answer(true);
    expect(await otherCall).to.deep.equal({ origin: 'http://10.0.1.1:8080', coldStart: true });
    expect(clock.timers).to.deep.equal([]);
  });

  it('probes at most MAX_PROBES_PER_FUNCTION starting pods of a function at a time, taking turns', async () => {
    const { idx, clock, fake, ex } = setup();
    const ips = Array.from({ length: MAX_PROBES_PER_FUNCTION + 2 }, (_, i) => `10.0.0.${20 + i}`);
    idx.apply({ key: 'ns/s', object: slice('s', 'fn-a', ips.map(starting)) });
    const pending = ex.acquire(fn).then(() => null, (e: unknown) => e);
    await settle();
    expect(fake.open()).to.have.length(MAX_PROBES_PER_FUNCTION);
    for (let i = 0; i < 20; i++) {
      for (const c of fake.open()) c.answer(false);
      await clock.advance(PROBE_INTERVAL_MS);
      expect(fake.open().length).to.be.at.most(MAX_PROBES_PER_FUNCTION);
    }
    for (const ip of ips) expect(fake.to(`http://${ip}:8080`), `${ip} had its turns`).to.be.greaterThan(5);
    await clock.advance(5000);
    expect(await pending).to.be.instanceOf(FunctionUnavailableError);
  });

  it('starts at most MAX_PROBES_PER_INTERVAL probes per interval in all, serving every function in turn', async () => {
    const { idx, clock, fake, ex } = setup();
    const n = MAX_PROBES_PER_INTERVAL + 16;
    const pending: Array<Promise<unknown>> = [];
    for (let i = 0; i < n; i++) {
      idx.apply({ key: `ns/s${i}`, object: slice(`s${i}`, `fn-f${i}`, [starting(`10.1.${i >> 8}.${i & 255}`)]) });
      pending.push(ex.acquire(fnNamed(`f${i}`)).catch((e: unknown) => e));
    }
    await settle();
    expect(ex.probing).to.equal(n);
    expect(fake.calls).to.have.length(MAX_PROBES_PER_INTERVAL);
    for (const c of fake.open()) c.answer(false);
    await clock.advance(PROBE_INTERVAL_MS);
    expect(fake.calls.length).to.equal(2 * MAX_PROBES_PER_INTERVAL);
    expect(new Set(fake.calls.map((c) => c.origin)).size, 'the functions left out first came next').to.equal(n);
    // Every pod healthy now: the open probes answer, the rest are probed at the next interval.
    for (const c of fake.calls) fake.auto.set(c.origin, true);
    for (const c of fake.open()) c.answer(true);
    await clock.advance(PROBE_INTERVAL_MS);
    await Promise.all(pending);
    expect(ex.releasedByProbe).to.equal(n);
    expect(fake.calls.length).to.equal(2 * MAX_PROBES_PER_INTERVAL + (n - MAX_PROBES_PER_INTERVAL));
    expect(clock.timers).to.deep.equal([]);
  });

  it('answers at once with a ready pod and never probes then; a probe that throws counts as a failed probe', async () => {
    const idx = new EndpointIndex();
    const clock = new FakeClock();
    let probed = 0;
    const ex = new ClusterExecutor({
      endpoints: idx, clock, wake: () => undefined, holdMs: 1000,
      probe: () => {
        probed++;
        throw new Error('boom');
      },
    });
    idx.apply({ key: 'ns/s', object: slice('s', 'fn-a', [ready('10.0.0.1'), starting('10.0.0.7')]) });
    expect(await ex.acquire(fn)).to.deep.equal({ origin: 'http://10.0.0.1:8080' });
    expect(probed).to.equal(0);
    idx.apply({ key: 'ns/s', object: slice('s', 'fn-a', [starting('10.0.0.7')]) });
    const held = ex.acquire(fn).then(() => null, (e: unknown) => e);
    await clock.advance(1000);
    expect(await held).to.be.instanceOf(FunctionUnavailableError);
    expect(probed).to.be.greaterThan(10);
    await ex.close();
  });
});

describe('cluster mode: a pod that refuses the connection while its slice says ready', () => {
  const fn = fnNamed('a');
  const B = 'http://10.0.0.8:8080';

  it('is passed over: calls go to the other ready pod, and come back to it once the TTL has passed', async () => {
    const idx = new EndpointIndex();
    const clock = new FakeClock();
    const ex = new ClusterExecutor({ endpoints: idx, clock, wake: () => undefined });
    idx.apply({ key: 'ns/s', object: slice('s', 'fn-a', [ready('10.0.0.7'), ready('10.0.0.8')]) });
    ex.unreachable(fn, A);
    const picked = [];
    for (let i = 0; i < 4; i++) picked.push((await ex.acquire(fn)).origin);
    expect(picked).to.deep.equal([B, B, B, B]);
    expect(ex.refusals).to.equal(1);
    await clock.advance(REFUSED_ORIGIN_TTL_MS);
    const after = [];
    for (let i = 0; i < 2; i++) after.push((await ex.acquire(fn)).origin);
    expect(after).to.have.members([A, B]);
    await ex.close();
  });

  it('holds the call when the refusing pod was the only ready one, and sends it to the new pod the probe finds (the deactivate / activate race)', async () => {
    const idx = new EndpointIndex();
    const clock = new FakeClock();
    const fake = new FakeProbe();
    const woken: string[] = [];
    const ex = new ClusterExecutor({ endpoints: idx, clock, probe: fake.probe, wake: (f) => woken.push(f.name) });
    // The old pod is stopping (its port closed), its slice still says ready; the new pod has an address.
    idx.apply({ key: 'ns/s', object: slice('s', 'fn-a', [ready('10.0.0.7'), starting('10.0.0.8')]) });
    expect((await ex.acquire(fn)).origin).to.equal(A);
    ex.unreachable(fn, A);
    let answered: string | undefined;
    const pending = ex.acquire(fn).then((u) => (answered = u.origin));
    await settle();
    expect(answered, 'never the refusing pod again').to.equal(undefined);
    expect(woken).to.deep.equal(['a']);
    expect(fake.to(B)).to.equal(1);
    expect(fake.to(A), 'a ready pod is not probed').to.equal(0);
    fake.open(B)[0]!.answer(true);
    await pending;
    expect(answered).to.equal(B);
    expect(ex.releasedByProbe).to.equal(1);
    await ex.close();
  });

  it('releases a held call when the slice says another pod is ready, and forgives the refusing pod once its slice drops it', async () => {
    const idx = new EndpointIndex();
    const clock = new FakeClock();
    const ex = new ClusterExecutor({ endpoints: idx, clock, wake: () => undefined });
    idx.apply({ key: 'ns/s', object: slice('s', 'fn-a', [ready('10.0.0.7')]) });
    ex.unreachable(fn, A);
    let answered: string | undefined;
    const pending = ex.acquire(fn).then((u) => (answered = u.origin));
    await settle();
    expect(answered).to.equal(undefined);
    // The slice marks the old pod terminating and lists the new one ready.
    idx.apply({ key: 'ns/s', object: slice('s', 'fn-a', [terminating('10.0.0.7'), ready('10.0.0.8')]) });
    await pending;
    expect(answered).to.equal(B);
    expect(ex.releasedBySlice).to.equal(1);
    // The old address comes back ready (a container restarted in place): it listens again, and is used at once.
    idx.apply({ key: 'ns/s', object: slice('s', 'fn-a', [ready('10.0.0.7')]) });
    expect((await ex.acquire(fn)).origin).to.equal(A);
    await ex.close();
  });

  it('releases a held call to the refusing pod itself when the TTL passes and the slice still lists it (no endless hold)', async () => {
    const idx = new EndpointIndex();
    const clock = new FakeClock();
    const ex = new ClusterExecutor({ endpoints: idx, clock, wake: () => undefined, holdMs: 30_000 });
    idx.apply({ key: 'ns/s', object: slice('s', 'fn-a', [ready('10.0.0.7')]) });
    ex.unreachable(fn, A);
    let answered: string | undefined;
    const pending = ex.acquire(fn).then((u) => (answered = u.origin));
    await clock.advance(REFUSED_ORIGIN_TTL_MS - 1);
    expect(answered).to.equal(undefined);
    await clock.advance(1);
    await pending;
    expect(answered).to.equal(A);
    await ex.close();
  });

  it('says in the 503 that the ready pods refused, when the hold bound passes first', async () => {
    const idx = new EndpointIndex();
    const clock = new FakeClock();
    const ex = new ClusterExecutor({ endpoints: idx, clock, wake: () => undefined, holdMs: 2000 });
    idx.apply({ key: 'ns/s', object: slice('s', 'fn-a', [ready('10.0.0.7')]) });
    ex.unreachable(fn, A);
    const held = ex.acquire(fn).then(() => null, (e: unknown) => e as Error);
    await clock.advance(2000);
    const err = await held;
    expect(err).to.be.instanceOf(FunctionUnavailableError);
    expect(err!.message).to.equal('function a (namespace ns) is unavailable: its ready pods refused connections for 2 s (kubectl describe function a -n ns)');
    await ex.close();
  });
});

describe('cluster mode: the HTTP health probe', () => {
  let server: Server;
  let base: string;
  let status = 200;
  let hang = false;
  const paths: string[] = [];

  before(async () => {
    server = createServer((req, res) => {
      paths.push(`${req.method} ${req.url}`);
      if (hang) return;
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ status: status === 200 ? 'ok' : 'starting' }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('is true only when GET /healthz answers 200, and fails on a refused connection or an abort', async () => {
    expect(await httpHealthProbe(base, new AbortController().signal)).to.equal(true);
    expect(paths).to.deep.equal(['GET /healthz']);
    status = 503;
    expect(await httpHealthProbe(base, new AbortController().signal)).to.equal(false);
    hang = true;
    const abort = new AbortController();
    const hung = httpHealthProbe(base, abort.signal).then(() => 'answered', (e: Error) => e.name);
    abort.abort();
    expect(await hung).to.equal('AbortError');
    // A port nobody listens on (the pod's runtime not started yet).
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const refused = await httpHealthProbe(`http://127.0.0.1:${port}`, new AbortController().signal).then(() => 'answered', (e: NodeJS.ErrnoException) => e.code);
    expect(refused).to.equal('ECONNREFUSED');
  });
});
