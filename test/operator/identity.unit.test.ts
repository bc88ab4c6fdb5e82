import { expect } from 'chai';
import { isUuid } from '@fnhost/core';
import { derivedFunctionId, functionIdOf, nameFits, uuidV5 } from '../../operator/src/names.ts';
import { microTime, nextLease } from '../../operator/src/leader.ts';
import { throttleDelayMs, Semaphore } from '../../operator/src/kube.ts';
import { fnResource } from './fixtures.ts';

describe('operator identity, names, lease and throttling rules', () => {
  it('uuidV5 matches the RFC 4122 example (DNS namespace, www.example.com)', () => {
    expect(uuidV5('www.example.com', '6ba7b810-9dad-11d1-80b4-00c04fd430c8')).to.equal('2ed6657d-e927-568b-95e1-2665a8aea6a2');
  });

  it('functionId is derived from namespace and name only: stable across re-applies, distinct across namespaces', () => {
    const a = derivedFunctionId('team-a', 'hello');
    expect(isUuid(a)).to.equal(true);
    expect(derivedFunctionId('team-a', 'hello')).to.equal(a);
    expect(functionIdOf(fnResource({}, { uid: 'another-uid', resourceVersion: '99' }))).to.equal(a);
    expect(derivedFunctionId('team-b', 'hello')).to.not.equal(a);
  });

  it('spec.functionId, when set, is the identity', () => {
    const id = '11111111-2222-4333-8444-555555555555';
    expect(functionIdOf(fnResource({ functionId: id }))).to.equal(id);
  });

  it('names up to 40 characters fit; longer ones do not', () => {
    expect(nameFits('a'.repeat(40))).to.equal(true);
    expect(nameFits('a'.repeat(41))).to.equal(false);
  });

  const opts = { namespace: 'ns', name: 'lease', identity: 'me', leaseDurationSeconds: 15, renewDeadlineSeconds: 10, retryPeriodSeconds: 2 };
  const now = 1_700_000_000_000;

  it('a free lease is taken; a lease held and renewed recently is not', () => {
    expect(nextLease(undefined, opts, now, now)).to.include({ holderIdentity: 'me', leaseTransitions: 0, leaseDurationSeconds: 15 });
    const held = { holderIdentity: 'other', leaseDurationSeconds: 15, renewTime: microTime(now), leaseTransitions: 2 };
    expect(nextLease(held, opts, now + 14_999, now)).to.equal(null);
  });

  it('a lease not renewed for its duration (by our own observation) is taken over, counting a transition', () => {
    const held = { holderIdentity: 'other', leaseDurationSeconds: 15, renewTime: microTime(now), leaseTransitions: 2 };
    expect(nextLease(held, opts, now + 15_000, now)).to.include({ holderIdentity: 'me', leaseTransitions: 3 });
  });

  it('renewing our own lease keeps acquireTime and transitions; a released lease is free', () => {
    const mine = { holderIdentity: 'me', leaseDurationSeconds: 15, acquireTime: microTime(now - 60_000), renewTime: microTime(now - 2000), leaseTransitions: 4 };
    expect(nextLease(mine, opts, now, now)).to.deep.equal({ holderIdentity: 'me', leaseDurationSeconds: 15, acquireTime: mine.acquireTime, renewTime: microTime(now), leaseTransitions: 4 });
    expect(nextLease({ holderIdentity: '', leaseDurationSeconds: 1, leaseTransitions: 4 }, opts, now, now)).to.include({ holderIdentity: 'me', leaseTransitions: 4 });
  });

  it('microTime has microseconds', () => {
    expect(microTime(Date.parse('2026-11-22T10:00:00.123Z'))).to.equal('2026-11-22T10:00:00.123000Z');
  });

  it('429 backoff honours Retry-After (bounded) and otherwise grows to a cap', () => {
    expect(throttleDelayMs('3', 0)).to.equal(3000);
    expect(throttleDelayMs('0', 0)).to.equal(100);
    expect(throttleDelayMs('3600', 0)).to.equal(30_000);
    expect([0, 1, 2, 3].map((a) => throttleDelayMs(null, a))).to.deep.equal([250, 500, 1000, 2000]);
    expect(throttleDelayMs(null, 20)).to.equal(30_000);
  });

  it('the semaphore caps holders and hands slots over in order', async () => {
    const sem = new Semaphore(2);
    await sem.acquire();
    await sem.acquire();
    const order: number[] = [];
    const third = sem.acquire().then(() => order.push(3));
    const fourth = sem.acquire().then(() => order.push(4));
    expect(sem.inFlight).to.equal(2);
    expect(sem.waiting).to.equal(2);
    sem.release();
    await third;
    sem.release();
    await fourth;
    expect(order).to.deep.equal([3, 4]);
    sem.release();
    sem.release();
    expect(sem.inFlight).to.equal(0);
  });
});
