import { expect } from 'chai';
import type { NetworkPolicy, NetworkPolicyChange, PolicyStore } from '@fnhost/core';
import { PolicyCache } from '../../gateway/src/policy/cache.ts';

// The gateway's policy cache: one gateway caches (it is the only writer);
// gateways sharing a store (cluster mode's replicas) read it on every check,
// so a change written through one replica holds on the next check of another.

function memoryStore(): PolicyStore & { reads: number } {
  const policies = new Map<string, NetworkPolicy>();
  const changes: NetworkPolicyChange[] = [];
  return {
    reads: 0,
    async get(scope) {
      this.reads++;
      return policies.get(scope) ?? null;
    },
    async set(scope, policy, actor, now) {
      const before = policies.get(scope) ?? null;
      if (policy === null) policies.delete(scope);
      else policies.set(scope, policy);
      const change = { scope, actor, at: now, before, after: policy } as unknown as NetworkPolicyChange;
      changes.unshift(change);
      return change;
    },
    async changes(limit) {
      return changes.slice(0, limit);
    },
    async changeScopes(limit) {
      return changes.slice(0, limit).map((c) => ({ id: c.id, scope: c.scope }));
    },
  };
}

const DENY: NetworkPolicy = { default: 'allow', allow: [], deny: ['10.244.0.1'] };

describe('gateway: policy cache', () => {
  it('shared: a change written through one gateway is what another gateway reads next', async () => {
    const store = memoryStore();
    const a = new PolicyCache(store, { shared: true });
    const b = new PolicyCache(store, { shared: true });
    expect(await b.get('fn-1')).to.equal(null);
    await a.set('fn-1', DENY, 'admin', 1);
    expect(await b.get('fn-1')).to.deep.equal(DENY);
    await a.set('fn-1', null, 'admin', 2);
    expect(await b.get('fn-1')).to.equal(null);
  });

  it('one gateway alone caches: repeated checks read the store once, and its own writes update the cache', async () => {
    const store = memoryStore();
    const cache = new PolicyCache(store);
    await cache.get('global');
    await cache.get('global');
    expect(store.reads).to.equal(1);
    await cache.set('global', DENY, 'admin', 1);
    expect(await cache.get('global')).to.deep.equal(DENY);
    expect(store.reads).to.equal(1);
  });
});
