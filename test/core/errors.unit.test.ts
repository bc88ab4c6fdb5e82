import { expect } from 'chai';
import { FnhostError, ValidationError } from '@fnhost/core';

// core/src/errors.ts: a refusal (4xx) is built without a stack (never shown; it was most of its
// cost on the paths a flood drives), a fault (5xx) keeps one; either way the limit is restored.

describe('FnhostError', () => {
  it('a refusal (4xx) carries its name and message but no stack frames', () => {
    const err = new ValidationError('ttl must be a number, got "x"');
    expect(err.stack).to.equal('ValidationError: ttl must be a number, got "x"');
    expect(err).to.include({ code: 'invalid_argument', status: 400, expose: true });
  });

  it('a fault (5xx) keeps its stack frames', () => {
    const err = new FnhostError('store_unavailable', 503, 'the store did not answer');
    expect(err.stack).to.match(/^FnhostError: the store did not answer\n\s+at /);
    expect(err.expose).to.equal(false);
  });

  it('leaves Error.stackTraceLimit as it found it', () => {
    const before = Error.stackTraceLimit;
    new ValidationError('x');
    expect(Error.stackTraceLimit).to.equal(before);
    expect(new Error('plain').stack).to.match(/\n\s+at /);
  });
});
