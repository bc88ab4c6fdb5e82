import { expect } from 'chai';
import type { FunctionStatus } from '@fnhost/core/function-resource.ts';
import { DEDUPE_WINDOW_MS, EVENTS_BURST, EVENTS_PER_FUNCTION_PER_MINUTE, EventLimiter, eventObject, transitionEvents } from '../../operator/src/events.ts';
import { fnResource } from './fixtures.ts';

const T0 = Date.parse('2026-11-26T10:00:00Z');
const ready = (reason: string, status: 'True' | 'False' = 'True', message = 'm'): FunctionStatus['conditions'] => [
  { type: 'Ready', status, reason, message, lastTransitionTime: '2026-11-26T10:00:00Z' },
];

describe('operator: Kubernetes Events on Functions', () => {
  it('tells what a status change means: Created, Updated, Invalid, ScaledToZero, Woken, Scaled from → to', () => {
    const reasons = (before: FunctionStatus | undefined, after: FunctionStatus, generation = 1, invalid = false) =>
      transitionEvents(before, after, generation, invalid).map((e) => `${e.type}/${e.reason}: ${e.note}`);
    expect(reasons(undefined, { observedGeneration: 1, conditions: ready('Progressing', 'False') })).to.deep.equal(['Normal/Created: runtime objects created for generation 1']);
    expect(reasons({ observedGeneration: 1, conditions: ready('Available') }, { observedGeneration: 2, conditions: ready('Progressing', 'False') }, 2)).to.deep.equal([
      'Normal/Updated: generation 2 applied (was 1)',
    ]);
    expect(reasons({ observedGeneration: 2, conditions: ready('Available') }, { observedGeneration: 3, conditions: ready('CodeDoesNotParse', 'False', 'SyntaxError (line 2)') }, 3, true)).to.deep.equal([
      'Warning/Invalid: CodeDoesNotParse: SyntaxError (line 2)',
    ]);
    expect(reasons({ observedGeneration: 1, conditions: ready('Available') }, { observedGeneration: 1, conditions: ready('Idle', 'True', 'no invocation since …') })).to.deep.equal([
      'Normal/ScaledToZero: no invocation since …',
    ]);
    expect(reasons({ observedGeneration: 1, conditions: ready('Idle') }, { observedGeneration: 1, conditions: ready('Progressing', 'False') })).to.deep.equal([
      'Normal/Woken: an invocation came: scaled up from zero',
    ]);
    const scaled = reasons(
      { observedGeneration: 1, conditions: ready('Available'), autoscaler: { replicas: 1, mode: 'stable' } },
      { observedGeneration: 1, conditions: ready('Progressing', 'False'), autoscaler: { replicas: 5, mode: 'panic', observed: '1.8/10.0' } },
    );
    expect(scaled).to.deep.equal(['Normal/Scaled: scaled from 1 to 5 replicas (panic mode, calls in flight stable/panic 1.8/10.0)']);
    // An invalid schedule: a warning, while the function is Available.
    const schedule = reasons(
      { observedGeneration: 1, conditions: ready('Available') },
      { observedGeneration: 1, conditions: [...ready('Available')!, { type: 'Scheduled', status: 'False', reason: 'InvalidSchedule', message: 'unknown time zone', lastTransitionTime: '2026-11-26T10:00:00Z' }] },
    );
    expect(schedule).to.have.length(1);
    expect(schedule[0]).to.match(/^Warning\/Invalid: InvalidSchedule: unknown time zone/);
    // Nothing changed that an event tells.
    expect(reasons({ observedGeneration: 1, conditions: ready('Available') }, { observedGeneration: 1, conditions: ready('Available') })).to.deep.equal([]);
  });

  it('a hot loop cannot flood: the same event once per window, a few per Function per minute, a global bucket', () => {
    const limiter = new EventLimiter();
    expect(limiter.allow('ns/a/u', 'Invalid', 'x', T0)).to.equal(true);
    for (let i = 1; i <= 1000; i++) expect(limiter.allow('ns/a/u', 'Invalid', 'x', T0 + i * 100)).to.equal(false);
    expect(limiter.allow('ns/a/u', 'Invalid', 'x', T0 + DEDUPE_WINDOW_MS)).to.equal(true);

    const perFn = new EventLimiter();
    let allowed = 0;
    for (let i = 0; i < 100; i++) if (perFn.allow('ns/b/u', 'Scaled', `to ${i}`, T0 + i * 100)) allowed++;
    expect(allowed).to.equal(EVENTS_PER_FUNCTION_PER_MINUTE);
    expect(perFn.allow('ns/b/u', 'Scaled', 'to later', T0 + 61_000)).to.equal(true);

    const global = new EventLimiter();
    let burst = 0;
    for (let i = 0; i < 200; i++) if (global.allow(`ns/f${i}/u`, 'Created', 'c', T0)) burst++;
    expect(burst).to.equal(EVENTS_BURST);
    expect(global.allow('ns/late/u', 'Created', 'c', T0 + 1000)).to.equal(true);
  });

  it('is an events.k8s.io/v1 Event regarding the Function, with a MicroTime', () => {
    const e = eventObject(fnResource(), { reason: 'Scaled', type: 'Normal', action: 'Scale', note: 'scaled from 1 to 3 replicas' }, T0, 'operator-0');
    expect(e).to.deep.include({ apiVersion: 'events.k8s.io/v1', kind: 'Event', reason: 'Scaled', type: 'Normal', action: 'Scale', reportingController: 'fnhost.dev/operator' });
    expect(e.eventTime).to.equal('2026-11-26T10:00:00.000000Z');
    expect(e.regarding).to.deep.include({ kind: 'Function', name: 'hello', namespace: 'team-a', uid: '0b5d8c9e-1111-4222-8333-944455556666' });
    expect(e.metadata.name).to.match(/^hello\.[0-9a-f]{16}$/);
  });
});
