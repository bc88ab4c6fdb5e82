import { derivedFunctionId } from './function-identity.ts';
import type { FunctionResource } from './function-resource.ts';

// A functionId's home: the namespace it was given to, recorded in the store
// (FunctionIdHomeStore) the first time it is given and kept after its Function
// is deleted, because the id's KV (and, until the finalizer, its logs) outlive
// the Function. Who serves an id is decided from the home, never from which
// claimant is present at the moment: "the oldest present claimant" handed an
// id to another namespace while its owner was briefly gone (a GitOps
// delete-and-apply, issue 28). The operator records and moves homes; the
// cluster gateway reads them. docs/security.md "Tenancy".

/** How a home came to be: the id's own namespace/name, a first explicit claim, or a move granted by the previous home. */
export type HomeHow = 'derived' | 'claimed' | 'moved';

export interface FunctionIdHome {
  function_id: string;
  namespace: string;
  /** The Function the id was given to when the home was written (messages only: the home is the namespace). */
  name: string;
  how: HomeHow;
  /** When the home was written (ms). */
  at: number;
}

/**
 * The annotation that names the namespace an id is moved from: a grant, which the chart's
 * ValidatingAdmissionPolicy admits only from a user who may `claim` functions.fnhost.dev in
 * that namespace (charts/fnhost/templates/platform/function-id-grants.yaml).
 */
export const ANNOTATION_ID_HOME = 'fnhost.dev/function-id-home';

/** The operator's Ready reasons under which a Function was never given its id. */
export const NOT_GIVEN_REASONS: readonly string[] = ['FunctionIdTaken', 'FunctionIdHomeMismatch', 'FunctionIdUnknown', 'NamespaceNotAllowed'];

/** A Function's claim on its id, as the rule needs it. */
export interface IdClaim {
  functionId: string;
  namespace: string;
  name: string;
  /** The id is derived from this namespace/name (no spec.functionId, or it names the derived id). */
  derived: boolean;
  /** The namespace the annotation says the id moves from (only when it names another namespace). */
  grantFrom?: string;
  /**
   * An earlier operator gave it this id (status.functionId is it and Ready is not a refusal): a
   * Function made before homes were recorded keeps the id it serves (the upgrade's first claims).
   */
  served: boolean;
}

export type ClaimDecision =
  /** The id's home is this namespace. */
  | { kind: 'own' }
  /** No home yet: record this namespace as it. */
  | { kind: 'record'; how: HomeHow }
  /** Move the home from `from` to this namespace (a grant, or a derived id's namespace taking it back from an ungranted claim). */
  | { kind: 'move'; from: string; how: HomeHow }
  | { kind: 'refuse'; reason: 'FunctionIdTaken' | 'FunctionIdHomeMismatch' | 'FunctionIdUnknown'; message: string };

/** UUID version 5, the form of every derived id (one-machine ids are random, version 4). */
export function hasDerivedForm(functionId: string): boolean {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i.test(functionId);
}

/**
 * Whether `claim` may hold its id, given the id's stored home (null: never given).
 * `grants`: moves by annotation are honoured only when the admission policy that checks them is
 * installed (the chart says so to the operator); without it anyone could write the annotation.
 */
export function decideClaim(claim: IdClaim, home: FunctionIdHome | null, grants: boolean): ClaimDecision {
  const id = claim.functionId;
  if (home === null) {
    if (claim.derived) return { kind: 'record', how: 'derived' };
    if (!hasDerivedForm(id) || claim.served) return { kind: 'record', how: 'claimed' };
    // A derived-form id nobody was given: it may be another namespace's future name (derived ids
    // are computable), and a claim now would let this namespace fill its KV before that one exists.
    return {
      kind: 'refuse',
      reason: 'FunctionIdUnknown',
      message: `spec.functionId ${id} has the form of a derived id (UUIDv5) and was never given to a Function: a derived id belongs to the namespace and name it is derived from; leave spec.functionId unset for this Function's own id`,
    };
  }
  if (home.namespace === claim.namespace) return { kind: 'own' };
  if (claim.derived && home.how === 'claimed') return { kind: 'move', from: home.namespace, how: 'derived' };
  if (claim.grantFrom !== undefined) {
    if (!grants) {
      return {
        kind: 'refuse',
        reason: 'FunctionIdTaken',
        message: `functionId ${id} belongs to namespace ${home.namespace}; the ${ANNOTATION_ID_HOME} annotation is not honoured because the admission policy that checks it is not installed (chart value functions.idGrants)`,
      };
    }
    if (claim.grantFrom === home.namespace) return { kind: 'move', from: home.namespace, how: claim.derived ? 'derived' : 'moved' };
    return {
      kind: 'refuse',
      reason: 'FunctionIdHomeMismatch',
      message: `${ANNOTATION_ID_HOME} names namespace ${claim.grantFrom}, but functionId ${id} belongs to namespace ${home.namespace}: a move must name the id's home, by a user who may claim functions there`,
    };
  }
  return {
    kind: 'refuse',
    reason: 'FunctionIdTaken',
    message:
      `functionId ${id} belongs to namespace ${home.namespace} (given to ${home.namespace}/${home.name}${home.how === 'moved' ? ' by a granted move' : ''}), and stays there while its Function is absent: ` +
      `this Function gets no pods. To move the id here, apply it with the annotation ${ANNOTATION_ID_HOME}: ${home.namespace} as a user who may claim functions in ${home.namespace}`,
  };
}

/** A Function's claim on its id (throwaways are checked apart: they run as their original). */
export function claimOf(res: FunctionResource): IdClaim {
  const namespace = res.metadata.namespace ?? 'default';
  const name = res.metadata.name;
  const own = derivedFunctionId(namespace, name);
  const functionId = res.spec.functionId ?? own;
  const named = res.metadata.annotations?.[ANNOTATION_ID_HOME];
  const ready = res.status?.conditions?.find((c) => c.type === 'Ready');
  return {
    functionId,
    namespace,
    name,
    derived: functionId === own,
    grantFrom: named !== undefined && named !== '' && named !== namespace ? named : undefined,
    served: res.status?.functionId === functionId && ready !== undefined && !NOT_GIVEN_REASONS.includes(ready.reason ?? ''),
  };
}

/**
 * Whether the gateway may serve `claim` under its id, knowing the id's home (a namespace),
 * that none is stored (null), or not knowing yet (undefined: not read, or the store did not
 * answer): with a home, only its namespace's claimants; without one, only the id's own
 * namespace/name (the operator records the others' first claims, then the gateway reads them).
 */
export function mayServe(claim: Pick<IdClaim, 'namespace' | 'derived'>, home: string | null | undefined): boolean {
  return typeof home === 'string' ? claim.namespace === home : claim.derived;
}
