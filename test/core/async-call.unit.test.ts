import { expect } from 'chai';
import {
  ASYNC_DEFAULT_KEEP_MS, backoffMs, decideAfterAttempt, decideBeforeAttempt, isAsyncId, isRetryable, keptUntil, newAsyncId,
  requestBytes, retryPolicyOf, validateAsyncSettings,
} from '@fnhost/core';

// The pure decisions of asynchronous invocation (core/src/async-call.ts), on a clock and a jitter passed in.

const policy = retryPolicyOf(undefined, 60_000);
const T = Date.parse('2030-01-01T00:00:00Z');

describe('async call policy', () => {
  it('defaults as Lambda: two retries, six hours, first retry after about a minute', () => {
    expect(policy).to.deep.equal({ maxRetries: 2, maxAgeMs: 6 * 3600_000, baseDelayMs: 60_000 });
    expect(retryPolicyOf({ max_retries: 0, max_age_seconds: 120 }, 10)).to.deep.equal({ maxRetries: 0, maxAgeMs: 120_000, baseDelayMs: 10 });
  });

  it('retries 5xx only: 500, 502 (out of memory, unreachable), 503, 504 (timeout); never a 4xx, 429 included', () => {
    for (const s of [500, 502, 503, 504]) expect(isRetryable(s), String(s)).to.equal(true);
    for (const s of [400, 404, 409, 422, 429]) expect(isRetryable(s), String(s)).to.equal(false);
  });

  it('backs off exponentially with equal jitter: half the delay fixed, half random', () => {
    expect(backoffMs(1, 60_000, 0)).to.equal(30_000);
    expect(backoffMs(1, 60_000, 0.999999)).to.be.closeTo(60_000, 1);
    expect(backoffMs(2, 60_000, 0)).to.equal(60_000);
    expect(backoffMs(2, 60_000, 0.5)).to.equal(90_000);
  });

  it('after an attempt: succeeded below 400, failed on a 4xx, retried on a 5xx until the retries are used, dead past them or past the age', () => {
    expect(decideAfterAttempt(1, 200, T, T, policy, 0.5)).to.deep.equal({ state: 'succeeded' });
    expect(decideAfterAttempt(1, 302, T, T, policy, 0.5)).to.deep.equal({ state: 'succeeded' });
    expect(decideAfterAttempt(1, 404, T, T, policy, 0.5)).to.deep.equal({ state: 'failed' });
    expect(decideAfterAttempt(1, 500, T, T, policy, 0)).to.deep.equal({ state: 'queued', next_at: T + 30_000 });
    expect(decideAfterAttempt(2, 504, T, T, policy, 0)).to.deep.equal({ state: 'queued', next_at: T + 60_000 });
    expect(decideAfterAttempt(3, 502, T, T, policy, 0)).to.deep.equal({ state: 'dead', reason: 'retries_exhausted' });
    // The next try would come past the six hours.
    expect(decideAfterAttempt(1, 500, T, T + 6 * 3600_000 - 1000, policy, 0)).to.deep.equal({ state: 'dead', reason: 'max_age' });
  });

  it('before an attempt: one beyond the retries (earlier ones lost with their gateway) or past the age is not run', () => {
    expect(decideBeforeAttempt(3, T, T, policy)).to.deep.equal({ run: true });
    expect(decideBeforeAttempt(4, T, T, policy)).to.deep.equal({ run: false, reason: 'retries_exhausted' });
    expect(decideBeforeAttempt(1, T, T + 6 * 3600_000 + 1, policy)).to.deep.equal({ run: false, reason: 'max_age' });
  });

  it('keeps a finished call under the function\'s time retention, else a week', () => {
    expect(keptUntil({ type: 'time', days: 2 }, T)).to.equal(T + 2 * 86_400_000);
    expect(keptUntil({ type: 'count', count: 5 } as never, T)).to.equal(T + ASYNC_DEFAULT_KEEP_MS);
  });

  it('validates a function\'s async settings, naming the bad value; null takes the default back', () => {
    expect(validateAsyncSettings({ max_retries: 1 })).to.deep.equal({ max_retries: 1 });
    expect(validateAsyncSettings({ max_age_seconds: null }, { max_retries: 0, max_age_seconds: 600 })).to.deep.equal({ max_retries: 0 });
    expect(() => validateAsyncSettings({ max_retries: 3 })).to.throw(/max_retries must be an integer from 0 to 2.*got 3/);
    expect(() => validateAsyncSettings({ max_age_seconds: 10 })).to.throw(/from 60 to 21600.*got 10/);
    expect(() => validateAsyncSettings({ retries: 1 })).to.throw(/unknown field "retries"/);
    expect(() => validateAsyncSettings([])).to.throw(/must be an object/);
  });

  it('makes unguessable ids (128 random bits) and counts a request\'s bytes', () => {
    const id = newAsyncId();
    expect(isAsyncId(id)).to.equal(true);
    expect(id).to.not.equal(newAsyncId());
    expect(isAsyncId('async_short')).to.equal(false);
    expect(requestBytes({ method: 'POST', path: '/a', headers: { 'x-a': 'bc' }, body: Buffer.alloc(10) })).to.equal(4 + 2 + 3 + 2 + 10);
  });
});
