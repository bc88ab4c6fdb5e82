import { expect } from 'chai';
import { CodeFetchBound, CodeFetchBoundError, MIN_CHARGE_BYTES, fetchCharge } from '../../gateway/src/code/fetch-bound.ts';

// The per-function bound on GET /internal/v1/code/{digest} (gateway/src/code/fetch-bound.ts), on
// an injected clock: streams at once, a bucket of bytes, and one function never charged for another.

const MIB = 1024 * 1024;

function refusal(fn: () => unknown): CodeFetchBoundError {
  try {
    fn();
  } catch (err) {
    if (err instanceof CodeFetchBoundError) return err;
    throw err;
  }
  throw new Error('expected a CodeFetchBoundError');
}

describe('code fetch bound (unit)', () => {
  it('admits `concurrent` fetches of a function at once; the next is 429 code_fetches with Retry-After 1 until one is released (twice is once)', () => {
    const bound = new CodeFetchBound({ concurrent: 2, bytesPerSecond: 100 * MIB, burstBytes: 1000 * MIB });
    const a = bound.admit('f', MIB, 0);
    bound.admit('f', MIB, 0);
    const err = refusal(() => bound.admit('f', MIB, 0));
    expect(err).to.include({ reason: 'code_fetches', retryAfterSeconds: 1, status: 429, code: 'too_many_requests' });
    expect(err.message).to.equal('code fetch refused: this function is over its bound (2 fetches at once); retry after 1 s');
    a();
    a();
    expect(bound.inFlight('f')).to.equal(1);
    bound.admit('f', MIB, 0);
    expect(bound.inFlight('f')).to.equal(2);
  });

  it('charges bytes to a bucket per function: past the burst 429 code_fetch_rate with the seconds until it refills, and it refills at the rate', () => {
    const bound = new CodeFetchBound({ concurrent: 100, bytesPerSecond: 10 * MIB, burstBytes: 50 * MIB });
    for (let i = 0; i < 5; i++) bound.admit('f', 10 * MIB, 0)();
    const err = refusal(() => bound.admit('f', 10 * MIB, 0));
    expect(err).to.include({ reason: 'code_fetch_rate', retryAfterSeconds: 1 });
    expect(refusal(() => bound.admit('f', 30 * MIB, 500)).retryAfterSeconds).to.equal(3);
    bound.admit('f', 10 * MIB, 1000)();
  });

  it('never charges one function for another\'s fetches', () => {
    const bound = new CodeFetchBound({ concurrent: 1, bytesPerSecond: MIB, burstBytes: MIB });
    bound.admit('greedy', MIB, 0);
    refusal(() => bound.admit('greedy', MIB, 0));
    expect(() => bound.admit('neighbour', MIB, 0)).not.to.throw();
  });

  it('a blob larger than the bucket is admitted from a full one (never refused for ever), its debt delaying the next', () => {
    const bound = new CodeFetchBound({ concurrent: 4, bytesPerSecond: MIB, burstBytes: MIB });
    bound.admit('f', 50 * MIB, 0)();
    expect(refusal(() => bound.admit('f', MIB, 1000)).retryAfterSeconds).to.be.greaterThan(40);
  });

  it('charges at least 64 KiB a fetch, so a flood of 404s or tiny blobs is bounded too', () => {
    expect(fetchCharge(undefined)).to.equal(MIN_CHARGE_BYTES);
    expect(fetchCharge(10)).to.equal(MIN_CHARGE_BYTES);
    expect(fetchCharge(5 * MIB)).to.equal(5 * MIB);
  });
  it('check() refuses as admit() would for any fetch, before the blob is looked up, and takes nothing', () => {
    const bound = new CodeFetchBound({ concurrent: 1, bytesPerSecond: MIB, burstBytes: 2 * MIB });
    bound.check('f', 0);
    const release = bound.admit('f', MIB, 0);
    expect(refusal(() => bound.check('f', 0))).to.include({ reason: 'code_fetches', retryAfterSeconds: 1 });
    release();
    // One MiB left in the bucket: a check passes and charges nothing, however often.
    for (let i = 0; i < 10; i++) bound.check('f', 0);
    bound.admit('f', MIB - MIN_CHARGE_BYTES / 2, 0)();
    // Less than the least charge is left: any fetch would be refused, so the check refuses now.
    const err = refusal(() => bound.check('f', 0));
    expect(err).to.include({ reason: 'code_fetch_rate', retryAfterSeconds: 1 });
    expect(bound.inFlight('f')).to.equal(0);
    // Another function is not charged for this one.
    bound.check('g', 0);
  });
});
