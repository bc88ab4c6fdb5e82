import { functionIdOf, functionIdOwner } from '@fnhost/core/function-identity.ts';
import { claimOf, decideClaim, type FunctionIdHome } from '@fnhost/core/function-id-home.ts';
import { isThrowaway } from '@fnhost/core/replay-throwaway.ts';
import type { Clock } from '@fnhost/core/clock.ts';
import type { FunctionIdHomeStore } from '@fnhost/core';
import type { FunctionResource } from '@fnhost/core/function-resource.ts';
import { keyOf } from './names.ts';
import type { SpecProblem } from './validate.ts';

// Who may hold each functionId. Two parts:
//   - the id's home namespace, in the store (core/src/function-id-home.ts): written when the id
//     is first given and moved only by a granted move, so an id never passes to another
//     namespace because its Function is absent for a while (issue 28);
//   - within the home namespace, the oldest of the Functions claiming the id, from the Functions
//     watch (FunctionIdIndex, core's functionIdOwner).
// Throwaway versions are not claimants: they run as their original by design, checked apart
// (validate.ts checkThrowaway, and Reconciler: their namespace must be the id's home).

export class FunctionIdIndex {
  readonly #byId = new Map<string, Map<string, FunctionResource>>();
  readonly #idOfKey = new Map<string, string>();

  /** A Function as the watch saw it (added or changed). */
  put(fn: FunctionResource): void {
    const key = keyOf(fn.metadata.namespace, fn.metadata.name);
    if (isThrowaway(fn)) {
      this.remove(key);
      return;
    }
    const id = functionIdOf(fn);
    const previous = this.#idOfKey.get(key);
    if (previous !== undefined && previous !== id) this.remove(key);
    let claimants = this.#byId.get(id);
    if (claimants === undefined) this.#byId.set(id, (claimants = new Map()));
    claimants.set(key, fn);
    this.#idOfKey.set(key, id);
  }

  /** A Function gone from the watch: the keys of the others that claimed its id (they are looked at again). */
  remove(key: string): string[] {
    const id = this.#idOfKey.get(key);
    if (id === undefined) return [];
    this.#idOfKey.delete(key);
    const claimants = this.#byId.get(id)!;
    claimants.delete(key);
    if (claimants.size === 0) this.#byId.delete(id);
    return [...claimants.keys()];
  }

  /** The keys of every Function claiming `functionId` (to look at them again when its home moves). */
  claimants(functionId: string): string[] {
    return [...(this.#byId.get(functionId)?.keys() ?? [])];
  }

  /** The oldest Function claiming `functionId` (in `namespace` when given), as the watch knows them; undefined when none. */
  owner(functionId: string, namespace?: string): FunctionResource | undefined {
    const claimants = [...(this.#byId.get(functionId)?.values() ?? [])];
    return functionIdOwner(namespace === undefined ? claimants : claimants.filter((c) => c.metadata.namespace === namespace));
  }
}

/** What `hold` concluded: the id is this Function's (and whether its home moved here now), or why not. */
export type HoldOutcome = { held: true; moved?: FunctionIdHome; recorded?: FunctionIdHome } | { held: false; problem: SpecProblem };

/** A store for an operator without MongoDB: homes last as long as the process (the chart always gives it MONGODB_URL). */
export class MemoryFunctionIdHomeStore implements FunctionIdHomeStore {
  readonly #homes = new Map<string, FunctionIdHome>();
  async get(functionId: string): Promise<FunctionIdHome | null> {
    return this.#homes.get(functionId) ?? null;
  }
  async claim(home: FunctionIdHome): Promise<FunctionIdHome> {
    if (!this.#homes.has(home.function_id)) this.#homes.set(home.function_id, home);
    return this.#homes.get(home.function_id)!;
  }
  async move(from: string, to: FunctionIdHome): Promise<FunctionIdHome | null> {
    const now = this.#homes.get(to.function_id);
    if (now?.namespace === from) this.#homes.set(to.function_id, to);
    return this.#homes.get(to.function_id) ?? null;
  }
}

export class FunctionIdHomes {
  readonly #store: FunctionIdHomeStore;
  readonly #index: FunctionIdIndex;
  readonly #clock: Clock;
  readonly #grants: boolean;

  /** `grants`: the chart installed the admission policy that checks the grant annotation (FNHOST_FUNCTION_ID_GRANTS). */
  constructor(deps: { store: FunctionIdHomeStore; index: FunctionIdIndex; clock: Clock; grants: boolean }) {
    this.#store = deps.store;
    this.#index = deps.index;
    this.#clock = deps.clock;
    this.#grants = deps.grants;
  }

  /**
   * Whether `fn` may hold its id, recording its home on a first claim and moving it on a granted
   * move. Two writers racing (operator replicas across a leader change) store one home: the
   * store's writes are compare-and-set, and a lost race is decided again against the winner.
   */
  async hold(fn: FunctionResource): Promise<HoldOutcome> {
    const claim = claimOf(fn);
    let home = await this.#store.get(claim.functionId);
    let moved: FunctionIdHome | undefined;
    let recorded: FunctionIdHome | undefined;
    for (let attempt = 0; ; attempt++) {
      const decision = decideClaim(claim, home, this.#grants);
      if (decision.kind === 'refuse') return { held: false, problem: { reason: decision.reason, message: decision.message } };
      if (decision.kind === 'own') break;
      if (attempt === 3) throw new Error(`functionId ${claim.functionId}: its home kept changing while ${claim.namespace}/${claim.name} claimed it`);
      const mine: FunctionIdHome = { function_id: claim.functionId, namespace: claim.namespace, name: claim.name, how: decision.how, at: this.#clock.now() };
      if (decision.kind === 'record') {
        home = await this.#store.claim(mine);
        if (home.namespace === claim.namespace) recorded = home;
      } else {
        home = await this.#store.move(decision.from, mine);
        if (home?.namespace === claim.namespace) moved = home;
      }
    }
    // Two Functions of the home namespace naming one id: the older one holds it.
    const owner = this.#index.owner(claim.functionId, claim.namespace);
    if (owner !== undefined && owner.metadata.name !== claim.name) {
      return {
        held: false,
        problem: {
          reason: 'FunctionIdTaken',
          message: `functionId ${claim.functionId} belongs to Function ${owner.metadata.namespace}/${owner.metadata.name}, created earlier in the same namespace: this Function gets no pods until that one is deleted or this one names another id (or none, for its own)`,
        },
      };
    }
    return { held: true, moved, recorded };
  }

  /** Whether `fn` holds its id now, without writing (the finalizer: only the holder cleans the id's logs). */
  async holds(fn: FunctionResource): Promise<boolean> {
    const claim = claimOf(fn);
    const home = await this.#store.get(claim.functionId);
    if (home === null || home.namespace !== claim.namespace) return false;
    const owner = this.#index.owner(claim.functionId, claim.namespace);
    return owner === undefined || owner.metadata.name === claim.name;
  }

  /** Whether `namespace` is the home of `functionId` (a throwaway runs as its original only there). */
  async isHome(functionId: string, namespace: string): Promise<boolean> {
    return (await this.#store.get(functionId))?.namespace === namespace;
  }
}
