import { expect } from 'chai';
import type { ApiRollout } from '@fnhost/core/api.ts';
import { RolloutError } from '../../../cli/src/errors.ts';
import { rolloutState, waitForRollout } from '../../../cli/src/commands/rollout.ts';
import { fn } from '../helpers/fixtures.ts';

const rollout = (r: Partial<ApiRollout>): ApiRollout => ({ generation: 5, observed_generation: 5, ready: 'True', reason: 'Available', message: '', ...r });

describe('cli function:deploy: waiting for the new code to serve', () => {
  it('serves once Ready speaks of the new generation and is True; refuses at once on a spec the operator refuses', () => {
    expect(rolloutState(rollout({ observed_generation: 4 }), 5).state).to.equal('pending');
    expect(rolloutState(rollout({}), 5)).to.deep.equal({ state: 'serving', reason: 'Available' });
    for (const reason of ['Idle', 'Inactive', 'ScaledToZero']) expect(rolloutState(rollout({ reason }), 5).state).to.equal('serving');
    expect(rolloutState(rollout({ ready: 'False', reason: 'Progressing', message: 'rolling out: 0 of 1' }), 5).state).to.equal('pending');
    expect(rolloutState(rollout({ ready: 'False', reason: 'CodeDoesNotParse', message: 'x' }), 5)).to.deep.equal({ state: 'refused', reason: 'CodeDoesNotParse', message: 'x' });
    // An old refusal is about the old spec: pending until the new generation is observed.
    expect(rolloutState(rollout({ ready: 'False', reason: 'CodeDoesNotParse', observed_generation: 4 }), 5).state).to.equal('pending');
  });

  it('polls until serving, on an injected clock', async () => {
    let now = 0;
    const answers = [rollout({ ready: 'False', reason: 'Progressing' }), rollout({})];
    let gets = 0;
    const written = fn({ rollout: rollout({ observed_generation: 4 }) });
    const state = await waitForRollout(written, 10_000, {
      get: async () => fn({ rollout: answers[gets++]! }),
      now: () => now,
      sleep: async (ms) => {
        now += ms;
      },
    });
    expect(state).to.deep.equal({ state: 'serving', reason: 'Available' });
    expect(gets).to.equal(2);
  });

  it('ends with a RolloutError naming the reason when refused, and the last state when the time is up', async () => {
    let now = 0;
    const deps = (r: ApiRollout) => ({ get: async () => fn({ rollout: r }), now: () => now, sleep: async (ms: number) => void (now += ms) });
    const written = fn({ name: 'hello', namespace: 'team-a', rollout: rollout({ generation: 6, observed_generation: 5 }) });
    let error: any;
    await waitForRollout(written, 10_000, deps(rollout({ generation: 6, observed_generation: 6, ready: 'False', reason: 'CodeDoesNotParse', message: 'spec.code does not parse: line 1' }))).catch((err) => (error = err));
    expect(error).to.be.instanceOf(RolloutError);
    expect(error.message).to.equal('the new code of hello does not run: the operator refused generation 6 (CodeDoesNotParse: spec.code does not parse: line 1)');
    expect(error.hint).to.contain('kubectl describe function hello -n team-a');
    now = 0;
    error = undefined;
    await waitForRollout(written, 3_000, deps(rollout({ generation: 6, observed_generation: 6, ready: 'False', reason: 'RuntimeNotReady', message: 'the runtime is running but /healthz does not answer 200' }))).catch((err) => (error = err));
    expect(error.message).to.equal('the new code of hello was not serving after 3 s: RuntimeNotReady (the runtime is running but /healthz does not answer 200)');
    expect(error.hint).to.contain('--wait-timeout');
  });

  it('does not wait on one machine (no rollout: the write returned once the new runtime loaded the code)', async () => {
    expect(await waitForRollout(fn(), 1000, { get: () => Promise.reject(new Error('not called')), now: () => 0, sleep: async () => {} })).to.equal(undefined);
  });
});
