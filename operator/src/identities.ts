import { functionIdOf, functionIdOwner } from '@fnhost/core/function-identity.ts';
import { isThrowaway } from '@fnhost/core/replay-throwaway.ts';
import type { FunctionResource } from '@fnhost/core/function-resource.ts';
import { keyOf } from './names.ts';

// Which Functions claim each functionId, from the Functions watch (controller.ts): the
// reconciler gives an id to its owner only (core's functionIdOwner), so spec.functionId cannot
// take over another namespace's function. Throwaway versions are not claimants: they run as
// their original by design, checked apart (validate.ts checkThrowaway).

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

  /** A Function gone from the watch: the keys of the others that claimed its id (one of them owns it now). */
  remove(key: string): string[] {
    const id = this.#idOfKey.get(key);
    if (id === undefined) return [];
    this.#idOfKey.delete(key);
    const claimants = this.#byId.get(id)!;
    claimants.delete(key);
    if (claimants.size === 0) this.#byId.delete(id);
    return [...claimants.keys()];
  }

  /** The Function a functionId belongs to, as the watch knows them; undefined when nobody claims it. */
  owner(functionId: string): FunctionResource | undefined {
    return functionIdOwner([...(this.#byId.get(functionId)?.values() ?? [])]);
  }
}
