import type { ApiFunction, ApiRollout } from '@fnhost/core/api.ts';
import { RolloutError } from '../errors.ts';

// function:deploy on a cluster: the PATCH is answered once the Function is
// stored, and the operator then rolls the new code out. The new code serves
// when the operator's Ready condition speaks of the new generation and is
// True: Available means every replica of the new pod template is available
// and no old one is left (operator/src/reconciler.ts); Idle, Inactive and
// ScaledToZero mean no pod runs, so the next one starts with the new code.
// A reason the operator gives for a spec it refuses does not change until
// the spec does: waiting longer would not help, so the wait ends at once.

/** The operator's reasons for a spec it will not run (operator/src/validate.ts, reconciler.ts, namespaces.ts). */
export const REFUSED_REASONS = new Set([
  'NameTooLong', 'InvalidCode', 'CodeTooLarge', 'TimeoutAboveMaximum', 'InvalidRoutes', 'InvalidEnv', 'InvalidSchedule',
  'CodeDoesNotParse', 'Rejected', 'NamespaceNotAllowed', 'FunctionIdChanged',
  // A pod of the new code failed to load it: the message is the module's error at its line and column.
  'LoadFailed',
  // spec.codeRef names code the namespace has not uploaded (the CLI uploads before it writes: only a collection in between).
  'CodeMissing',
]);

export type RolloutState = { state: 'serving'; reason: string } | { state: 'refused'; reason: string; message: string } | { state: 'pending'; reason: string; message: string };

export function rolloutState(r: ApiRollout, generation: number): RolloutState {
  if (r.observed_generation < generation) return { state: 'pending', reason: 'NotObserved', message: `the operator has not acted on generation ${generation} yet` };
  if (r.ready === 'True') return { state: 'serving', reason: r.reason };
  if (r.ready === 'False' && REFUSED_REASONS.has(r.reason)) return { state: 'refused', reason: r.reason, message: r.message };
  return { state: 'pending', reason: r.reason || 'Unknown', message: r.message };
}

export interface WaitDeps {
  get(): Promise<ApiFunction>;
  now(): number;
  sleep(ms: number): Promise<void>;
}

export const POLL_MS = 500;

/** Resolves once the new code serves; throws RolloutError when refused or past `timeoutMs`. Nothing to wait for without a rollout (one machine). */
export async function waitForRollout(written: ApiFunction, timeoutMs: number, deps: WaitDeps): Promise<RolloutState | undefined> {
  if (written.rollout === undefined) return undefined;
  const generation = written.rollout.generation;
  const deadline = deps.now() + timeoutMs;
  let current = written.rollout;
  for (;;) {
    const state = rolloutState(current, generation);
    if (state.state === 'serving') return state;
    if (state.state === 'refused') {
      throw new RolloutError(`the new code of ${written.name} does not run: the operator refused generation ${generation} (${state.reason}: ${state.message})`, {
        hint: `the change is stored; the previous code keeps serving. Fix it and deploy again (kubectl describe function ${written.name} -n ${written.namespace})`,
      });
    }
    if (deps.now() >= deadline) {
      throw new RolloutError(`the new code of ${written.name} was not serving after ${Math.round(timeoutMs / 1000)} s: ${state.reason}${state.message ? ` (${state.message})` : ''}`, {
        hint: `the change is stored and the rollout goes on; see kubectl describe function ${written.name} -n ${written.namespace}, or pass --wait-timeout or --no-wait`,
      });
    }
    await deps.sleep(Math.min(POLL_MS, Math.max(0, deadline - deps.now())));
    const next = (await deps.get()).rollout;
    if (next === undefined) return undefined;
    current = next;
  }
}
