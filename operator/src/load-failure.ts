import type { FunctionResource } from '@fnhost/core/function-resource.ts';
import { ANNOTATION_CONFIG_HASH } from './names.ts';
import type { ReadyInput } from './status.ts';

// A runtime pod whose module failed to load (docs/cluster-mode.md "Code that fails to load"). The
// gateway asks each starting pod how its load ended and writes a failure into
// status.loadFailure (gateway/src/cluster/load-watch.ts); the operator, which alone records
// Events, decides here (pure) whether that failure speaks of the Function's current code: the pod
// is still one of its runtime pods, not ready, and carries the current config hash (code, env,
// routes: what the module's load depends on). A pod of an older spec (a rollout that fixed the
// code) says nothing about the new one, and a pod deleted since is no evidence.

export const LOAD_FAILED = 'LoadFailed'; // the Ready reason, and the CodeLoaded condition's
/** The condition beside Ready; present only while the current code is known not to load. */
export const CODE_LOADED = 'CodeLoaded';

/** The fields of a runtime pod read here. */
export interface PodView {
  metadata?: { name?: string; annotations?: Record<string, string> };
  status?: { containerStatuses?: Array<{ ready?: boolean }> };
}

/** Ready=False LoadFailed (the same message as the CodeLoaded condition), or null when no current pod failed to load. */
export function loadFailureOf(fn: FunctionResource, pods: readonly PodView[], currentConfigHash: string): ReadyInput | null {
  const failure = fn.status?.loadFailure;
  if (failure == null) return null;
  const pod = pods.find((p) => p.metadata?.name === failure.pod);
  if (pod === undefined || pod.metadata?.annotations?.[ANNOTATION_CONFIG_HASH] !== currentConfigHash) return null;
  if ((pod.status?.containerStatuses ?? []).some((c) => c.ready === true)) return null;
  return { status: 'False', reason: LOAD_FAILED, message: `the code failed to load in pod ${failure.pod}: ${failure.message}` };
}
