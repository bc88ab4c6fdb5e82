import { expect } from 'chai';
import type { NetworkPolicyChange } from '@fnhost/core';
import { PolicyFollower, followStep } from '../../gateway/src/policy/follower.ts';
import { FakeClock } from './cluster/fakes.ts';

// Policy changes written through another gateway replica reach this one's egress proxy
// (docs/egress.md "Policy changes and open connections"): which scopes a read of the change
// log hands on, and the follower's timer, failures and close.

const change = (id: string, scope: string): NetworkPolicyChange => ({ id, scope, actor: 'admin', at: '2026-11-29T19:00:00.000Z', before: null, after: null });

describe('gateway: policy changes followed across replicas', () => {
  it('the first read only sets the baseline; later reads hand on the scopes of the changes not seen, once each', () => {
    const first = followStep(undefined, [change('c2', 'fn-a'), change('c1', 'global')]);
    expect(first).to.deep.equal({ seen: ['c2', 'c1'], scopes: [] });
    expect(followStep(first.seen, [change('c2', 'fn-a'), change('c1', 'global')]).scopes).to.deep.equal([]);
    const next = followStep(first.seen, [change('c5', 'fn-b'), change('c4', 'fn-a'), change('c3', 'fn-b'), change('c2', 'fn-a'), change('c1', 'global')]);
    expect(next).to.deep.equal({ seen: ['c5', 'c4', 'c3', 'c2', 'c1'], scopes: ['fn-b', 'fn-a'] });
  });

  it('a global change, or a full batch of new ones (older ones may be unread), rechecks every function', () => {
    expect(followStep(['c1'], [change('c2', 'global'), change('c1', 'fn-a')]).scopes).to.deep.equal(['global']);
    expect(followStep(['c1'], [change('c3', 'fn-a'), change('c2', 'global'), change('c1', 'fn-a')]).scopes).to.deep.equal(['global']);
    const full = Array.from({ length: 3 }, (_, i) => change(`n${i}`, `fn-${i}`));
    expect(followStep(['old'], full, 3).scopes).to.deep.equal(['global']);
    expect(followStep(['n2'], full, 3).scopes, 'two new of a batch of three').to.deep.equal(['fn-0', 'fn-1']);
  });

  it('reads every interval, hands on what is new, and after a failed read reports it and tries again later', async () => {
    const clock = new FakeClock();
    const log: NetworkPolicyChange[] = [change('c1', 'fn-a')];
    let fail = false;
    const changed: string[] = [];
    const failures: string[] = [];
    const follower = new PolicyFollower({
      store: { changeScopes: async (limit) => (fail ? Promise.reject(new Error('connection to MongoDB lost')) : log.slice(0, limit)) },
      changed: async (scope) => void changed.push(scope),
      clock,
      background: { failed: (task, err) => void failures.push(`${task}: ${(err as Error).message}`) },
      intervalMs: 500,
    });
    follower.start();
    await clock.advance(0);
    expect(changed).to.deep.equal([]);
    log.unshift(change('c2', 'fn-b'));
    await clock.advance(499);
    expect(changed, 'not before the interval').to.deep.equal([]);
    await clock.advance(1);
    expect(changed).to.deep.equal(['fn-b']);
    fail = true;
    await clock.advance(500);
    expect(failures).to.deep.equal(['policy_follow: connection to MongoDB lost']);
    log.unshift(change('c3', 'fn-c'));
    fail = false;
    await clock.advance(500);
    expect(changed, 'backing off after the failure').to.deep.equal(['fn-b']);
    await clock.advance(500);
    expect(changed).to.deep.equal(['fn-b', 'fn-c']);
    expect(follower.followed).to.equal(2);
    await follower.close();
    log.unshift(change('c4', 'fn-d'));
    await clock.advance(5_000);
    expect(changed, 'nothing after close').to.deep.equal(['fn-b', 'fn-c']);
    expect(clock.timers).to.deep.equal([]);
  });
});
