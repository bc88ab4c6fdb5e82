import { expect } from 'chai';
import { API_VERSION, KIND, type FunctionResource } from '@fnhost/core/function-resource.ts';
import { LOAD_FAILED, loadFailureOf, type PodView } from '../../operator/src/load-failure.ts';
import { desiredStatus, statusChanged } from '../../operator/src/status.ts';
import { transitionEvents } from '../../operator/src/events.ts';
import { ANNOTATION_CONFIG_HASH } from '../../operator/src/names.ts';

// A pod's load failure as the operator shows it (docs/cluster-mode.md "Code that fails to load"):
// Ready=False LoadFailed and CodeLoaded=False only for a pod of the current code, one Warning
// Event per failure text, and both gone (with status.loadFailure) once the function is ready.

const failure = { pod: 'fn-hello-1', kind: 'failed' as const, message: 'the module threw while loading: Error: API_KEY is not set (at src/handler.ts:3:7)', at: '2026-01-01T00:00:00Z' };
function fn(loadFailure?: typeof failure): FunctionResource {
  return { apiVersion: API_VERSION, kind: KIND, metadata: { name: 'hello', namespace: 'ns', generation: 3 }, spec: { code: 'x' }, status: { observedGeneration: 3, ...(loadFailure ? { loadFailure } : {}) } };
}
const podOf = (name: string, hash: string, ready = false): PodView => ({ metadata: { name, annotations: { [ANNOTATION_CONFIG_HASH]: hash } }, status: { containerStatuses: [{ ready }] } });

describe('operator: a runtime pod that failed to load the code', () => {
  it('is LoadFailed only while the named pod runs the current code and is not ready', () => {
    const got = loadFailureOf(fn(failure), [podOf('fn-hello-1', 'h2')], 'h2');
    expect(got).to.deep.equal({ status: 'False', reason: LOAD_FAILED, message: `the code failed to load in pod fn-hello-1: ${failure.message}` });
    expect(loadFailureOf(fn(), [podOf('fn-hello-1', 'h2')], 'h2'), 'no failure reported').to.equal(null);
    expect(loadFailureOf(fn(failure), [podOf('fn-hello-1', 'h1')], 'h2'), 'a pod of the old code').to.equal(null);
    expect(loadFailureOf(fn(failure), [podOf('fn-hello-2', 'h2')], 'h2'), 'the pod is gone').to.equal(null);
    expect(loadFailureOf(fn(failure), [podOf('fn-hello-1', 'h2', true)], 'h2'), 'the pod is ready').to.equal(null);
  });

  it('shows CodeLoaded=False beside Ready, tells one Warning Event per failure, and clears both once ready', () => {
    const ready = { status: 'False' as const, reason: LOAD_FAILED, message: `the code failed to load in pod fn-hello-1: ${failure.message}` };
    const now = new Date('2026-01-01T00:01:00Z');
    const before = fn(failure).status;
    const failing = desiredStatus(before, { functionId: 'id', url: 'u', generation: 3, ready, codeLoaded: { ...ready } }, now);
    const codeLoaded = failing.conditions!.find((c) => c.type === 'CodeLoaded');
    expect(codeLoaded).to.include({ status: 'False', reason: 'LoadFailed', observedGeneration: 3 });
    expect(codeLoaded!.message).to.include('(at src/handler.ts:3:7)');
    const events = transitionEvents(before, failing, 3, false);
    expect(events.filter((e) => e.reason === 'LoadFailed')).to.deep.equal([{ reason: 'LoadFailed', type: 'Warning', action: 'Load', note: ready.message }]);
    // The same failure at the next reconcile: no write, no second Event.
    const again = desiredStatus(failing, { functionId: 'id', url: 'u', generation: 3, ready, codeLoaded: { ...ready } }, now);
    expect(statusChanged(failing, again)).to.equal(false);
    expect(transitionEvents(failing, again, 3, false).filter((e) => e.reason === 'LoadFailed')).to.deep.equal([]);
    // Fixed (a new generation rolled out): the condition goes, and the gateway's loadFailure with it (null in the merge patch).
    const fixed = desiredStatus(failing, { functionId: 'id', url: 'u', generation: 4, ready: { status: 'True', reason: 'Available', message: '1 of 1' }, codeLoaded: null, dropLoadFailure: true }, now);
    expect(fixed.conditions!.map((c) => c.type)).to.deep.equal(['Ready']);
    expect(fixed.loadFailure).to.equal(null);
  });
});
