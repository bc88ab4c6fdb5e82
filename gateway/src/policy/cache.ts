import type { NetworkPolicy, PolicyStore } from '@fnhost/core';

// The network policies as the gateway reads them: the management API writes through it, and the
// internal API and the egress proxy read it. A room of its own so that none of them imports another.

export const DEFAULT_GLOBAL_POLICY: NetworkPolicy = { default: 'allow', allow: [], deny: [] };

/**
 * Policies by scope: the runtime asks before every fetch. One gateway (one
 * machine) is the only writer, so it caches and updates its cache on write.
 * Gateways that share the store (cluster mode: several replicas behind one
 * Service, and a runtime's check may reach any of them) must not cache: a
 * change written through one replica has to hold on the next fetch checked
 * by another, so every check reads the store (two reads by key).
 */
export class PolicyCache {
  readonly #store: PolicyStore;
  readonly #cache: Map<string, NetworkPolicy | null> | undefined;
  readonly #listeners: Array<(scope: string) => Promise<void> | void> = [];
  constructor(store: PolicyStore, options: { shared?: boolean } = {}) {
    this.#store = store;
    this.#cache = options.shared ? undefined : new Map();
  }
  async get(scope: string): Promise<NetworkPolicy | null> {
    if (this.#cache?.has(scope)) return this.#cache.get(scope)!;
    const policy = await this.#store.get(scope);
    this.#cache?.set(scope, policy);
    return policy;
  }
  async set(scope: string, policy: NetworkPolicy | null, actor: string, now: number) {
    const change = await this.#store.set(scope, policy, actor, now);
    this.#cache?.set(scope, policy);
    // Awaited: the write is answered once what it changed holds (the egress proxy has closed connections it now denies).
    await this.changed(scope);
    return change;
  }
  /** Runs the listeners for a change of `scope`: one written here (set), or through another replica (follower.ts). */
  async changed(scope: string): Promise<void> {
    for (const listener of this.#listeners) await listener(scope);
  }
  /** Called after each change of a scope (`global` or a function id): written through this gateway, or another replica's as it is followed. */
  onChange(listener: (scope: string) => Promise<void> | void): void {
    this.#listeners.push(listener);
  }
  changes(limit: number) {
    return this.#store.changes(limit);
  }
}
