import { expect } from 'chai';
import type { AutoscalerStatus, ConcurrencyReport } from '@fnhost/core/function-resource.ts';
import {
  PANIC_THRESHOLD,
  REPORT_FORGET_AFTER_MS,
  REPORT_MAX_AGE_MS,
  STABLE_WINDOW_MS,
  autoscaleDecision,
  autoscalerStatus,
  observedConcurrency,
  scalingOf,
  staleConcurrencyKeys,
  type EffectiveScaling,
} from '../../operator/src/autoscale.ts';
import { idleDecision } from '../../operator/src/idle.ts';
import { deploymentFor } from '../../operator/src/builders/index.ts';
import { fnResource, testSettings } from './fixtures.ts';

const T0 = Date.parse('2026-11-26T10:00:00Z');
const iso = (ms: number) => new Date(ms).toISOString();
const report = (stable: number, panic: number, at = T0): ConcurrencyReport => ({ stable, panic, at: iso(at) });
const scaling: EffectiveScaling = { minReplicas: 1, maxReplicas: 10, targetConcurrency: 2 };

/** Runs the decision as the operator does: each step starts from what the last one wrote into status.autoscaler. */
function run(steps: Array<{ at: number; reports: Record<string, ConcurrencyReport> }>, s = scaling): AutoscalerStatus[] {
  let previous: AutoscalerStatus | undefined;
  const out: AutoscalerStatus[] = [];
  for (const step of steps) {
    const observed = observedConcurrency(step.reports, step.at);
    previous = autoscalerStatus(autoscaleDecision({ scaling: s, observed, previous, nowMs: step.at }), observed);
    out.push(previous);
  }
  return out;
}

describe('operator: autoscaling on concurrency (the pure decision)', () => {
  it('fills the CRD defaults, and a Function without spec.scaling does not autoscale', () => {
    expect(scalingOf(fnResource())).to.equal(undefined);
    expect(scalingOf(fnResource({ scaling: {} }))).to.deep.equal({ minReplicas: 1, maxReplicas: 10, targetConcurrency: 10 });
  });

  it('adds up the gateways\' fresh reports and leaves out stale, null and malformed ones', () => {
    const o = observedConcurrency(
      {
        'gw-a': report(3, 4, T0 - 5_000),
        'gw-b': report(1.5, 6, T0 - 20_000),
        'gw-gone': report(50, 50, T0 - REPORT_MAX_AGE_MS),
        'gw-bad': { stable: -1, panic: 2, at: iso(T0) },
        'gw-null': null as unknown as ConcurrencyReport,
      },
      T0,
    );
    expect(o).to.include({ stable: 4.5, panic: 10, reports: 2 });
    // The oldest counted report turns stale first: the operator looks again then.
    expect(o.staleAtMs).to.equal(T0 - 20_000 + REPORT_MAX_AGE_MS);
    expect(staleConcurrencyKeys({ old: report(1, 1, T0 - REPORT_FORGET_AFTER_MS), fresh: report(1, 1, T0 - 1000) }, T0)).to.deep.equal(['old']);
  });

  it('stable mode: ceil(stable demand / target), within min and max', () => {
    const at = (stable: number, s = scaling) => autoscaleDecision({ scaling: s, observed: observedConcurrency({ g: report(stable, stable) }, T0), previous: { replicas: 3, mode: 'stable' }, nowMs: T0 }).replicas;
    expect(at(5)).to.equal(3);
    expect(at(6)).to.equal(3);
    expect(at(6.2)).to.equal(4);
    expect(at(0)).to.equal(1); // never below 1: zero only comes from the idle rule
    expect(at(0, { ...scaling, minReplicas: 2 })).to.equal(2);
    expect(at(100)).to.equal(10);
  });

  it('a burst (panic window above twice the capacity) scales up at once and never down until a stable window passes without one', () => {
    // One pod, target 2: the stable average has barely moved, the 6 s one shows 10 calls in flight.
    const steps = run([
      { at: T0, reports: { g: report(0.4, 0.4) } },
      { at: T0 + 10_000, reports: { g: report(1.8, 10, T0 + 10_000) } },
      // The burst is served by 5 pods now: the panic window reads 9, under 2 × 5 × 2; no scale-down in panic.
      { at: T0 + 20_000, reports: { g: report(3.4, 9, T0 + 20_000) } },
      // Load gone: still panic mode (a stable window after the last panic condition), 5 pods kept.
      { at: T0 + 40_000, reports: { g: report(3, 0, T0 + 40_000) } },
      // A stable window after the burst: back to stable mode, sized on the stable average.
      { at: T0 + 10_000 + STABLE_WINDOW_MS + 1000, reports: { g: report(2.5, 0, T0 + 10_000 + STABLE_WINDOW_MS + 1000) } },
    ]);
    expect(steps.map((s) => [s.replicas, s.mode])).to.deep.equal([
      [1, 'stable'],
      [5, 'panic'],
      [5, 'panic'],
      [5, 'panic'],
      [2, 'stable'],
    ]);
    expect(steps[1]!.panicUntil).to.equal('2026-11-26T10:01:10Z');
  });

  it('the panic threshold is relative to the replicas running: the same short-window demand is no burst for enough pods', () => {
    const observed = observedConcurrency({ g: report(8, 8) }, T0);
    expect(autoscaleDecision({ scaling, observed, previous: { replicas: 1, mode: 'stable' }, nowMs: T0 }).mode).to.equal('panic');
    expect(8 < PANIC_THRESHOLD * 4 * scaling.targetConcurrency).to.equal(true);
    expect(autoscaleDecision({ scaling, observed, previous: { replicas: 4, mode: 'stable' }, nowMs: T0 })).to.include({ mode: 'stable', replicas: 4 });
  });

  it('with no fresh report the function settles at minReplicas, and the operator is told when to look again', () => {
    const d = autoscaleDecision({ scaling: { ...scaling, minReplicas: 2 }, observed: observedConcurrency({}, T0), previous: { replicas: 6, mode: 'stable' }, nowMs: T0 });
    expect(d).to.include({ replicas: 2, mode: 'stable' });
    expect(d.recheckAtMs).to.equal(undefined);
    const fresh = autoscaleDecision({ scaling, observed: observedConcurrency({ g: report(4, 4, T0 - 1000) }, T0), previous: { replicas: 2, mode: 'stable' }, nowMs: T0 });
    expect(fresh.recheckAtMs).to.equal(T0 - 1000 + REPORT_MAX_AGE_MS);
  });

  it('minReplicas 0 allows idle scale to zero (default 300 s), and the idle rule wins over the autoscaler\'s floor', () => {
    const created = iso(T0 - 301_000);
    const fn = fnResource({ scaling: { minReplicas: 0, maxReplicas: 4, targetConcurrency: 2 } }, { creationTimestamp: created });
    expect(idleDecision(fn, T0)).to.include({ idle: true });
    expect(idleDecision(fnResource({ scaling: { minReplicas: 1 } }, { creationTimestamp: created }), T0)).to.deep.equal({ idle: false });
    const settings = testSettings();
    expect((deploymentFor(fn, settings, { idle: true, replicas: 3 }).spec as any).replicas).to.equal(0);
    expect((deploymentFor(fn, settings, { idle: false, replicas: 3 }).spec as any).replicas).to.equal(3);
    // An invocation wakes it: not idle, and the autoscaler's floor (1) applies.
    const woken = { ...fn, status: { lastInvocationTime: iso(T0 - 1000) } };
    expect(idleDecision(woken, T0)).to.include({ idle: false });
    expect(autoscaleDecision({ scaling: scalingOf(woken)!, observed: observedConcurrency({}, T0), previous: { replicas: 0, mode: 'stable' }, nowMs: T0 }).replicas).to.equal(1);
  });
});
