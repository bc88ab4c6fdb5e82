import { expect } from 'chai';
import { ValidationError } from '../../core/src/errors.ts';
import * as limits from '../../core/src/limits.ts';
import { DigestCounter, collectableCode, digestHex, digestOf, isDigest, parseDigest, referencedDigests, validateCodeRef } from '../../core/src/code/index.ts';
import { validateCodeSource } from '../../core/src/validation.ts';

function errorOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).to.be.instanceOf(ValidationError);
    return (err as Error).message;
  }
  throw new Error('expected a ValidationError');
}

const HELLO = 'sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824';

describe('code digests', () => {
  it('is the SHA-256 of the bytes, written sha256:<64 lowercase hex>', () => {
    expect(digestOf('hello')).to.equal(HELLO);
    expect(digestOf(Buffer.from('hello'))).to.equal(HELLO);
    const counter = new DigestCounter();
    counter.update(Buffer.from('hel'));
    counter.update(Buffer.from('lo'));
    expect(counter.size).to.equal(5);
    expect(counter.digest()).to.equal(HELLO);
    expect(digestHex(HELLO)).to.equal(HELLO.slice(7));
  });

  it('refuses malformed digests naming the value', () => {
    expect(isDigest(HELLO)).to.equal(true);
    for (const bad of [HELLO.toUpperCase(), HELLO.slice(0, -1), `sha512:${HELLO.slice(7)}`, HELLO.slice(7), '', 42, null]) {
      expect(isDigest(bad)).to.equal(false);
      expect(errorOf(() => parseDigest(bad))).to.match(/is malformed: expected "sha256:" and 64 lowercase hex digits/).and.to.include(JSON.stringify(bad));
    }
    expect(errorOf(() => parseDigest('x'.repeat(500)))).to.have.length.below(200);
  });
});

describe('validateCodeRef and validateCodeSource', () => {
  it('takes {digest, size} with the size 1 to MAX_CODE_REF_BYTES', () => {
    expect(validateCodeRef({ digest: HELLO, size: 5 })).to.deep.equal({ digest: HELLO, size: 5 });
    expect(validateCodeRef({ digest: HELLO, size: limits.MAX_CODE_REF_BYTES }).size).to.equal(52_428_800);
    expect(errorOf(() => validateCodeRef({ digest: HELLO, size: limits.MAX_CODE_REF_BYTES + 1 }))).to.include('code_ref.size must be an integer from 1 to 52428800 (bytes), got 52428801');
    expect(errorOf(() => validateCodeRef({ digest: HELLO, size: 0 }))).to.include('got 0');
    expect(errorOf(() => validateCodeRef({ digest: HELLO, size: '5' }))).to.include('got "5"');
    expect(errorOf(() => validateCodeRef({ digest: 'sha256:abc', size: 5 }))).to.include('code_ref.digest "sha256:abc" is malformed');
    expect(errorOf(() => validateCodeRef({ digest: HELLO, size: 5, url: 'x' }))).to.include('code_ref takes digest and size only, got "url"');
    expect(errorOf(() => validateCodeRef('sha256:x'))).to.include('code_ref must be an object {digest, size}, got "sha256:x"');
  });

  it('takes exactly one of code and code_ref', () => {
    expect(validateCodeSource({ code: 'export default () => 1' }, true)).to.deep.equal({ code: 'export default () => 1' });
    expect(validateCodeSource({ code_ref: { digest: HELLO, size: 5 } }, true)).to.deep.equal({ code: '', code_ref: { digest: HELLO, size: 5 } });
    expect(errorOf(() => validateCodeSource({ code: 'x', code_ref: { digest: HELLO, size: 5 } }, true))).to.include('not both');
    expect(errorOf(() => validateCodeSource({}, true))).to.match(/^code is required/).and.to.include('code_ref');
    expect(validateCodeSource({}, false)).to.equal(undefined);
    expect(errorOf(() => validateCodeSource({ code: 'x'.repeat(limits.MAX_CODE_BYTES + 1) }, false))).to.include(`the limit inline is ${limits.MAX_CODE_BYTES} bytes`);
  });
});

describe('collectableCode (the GC decision)', () => {
  const hour = 3_600_000;
  const now = 10 * hour;
  const d = (n: number): string => digestOf(String(n));

  it('collects unreferenced blobs past the grace period only', () => {
    const blobs = [
      { digest: d(1), uploadedAt: now - 2 * hour }, // referenced: kept
      { digest: d(2), uploadedAt: now - 2 * hour }, // unreferenced, old: collected
      { digest: d(3), uploadedAt: now - hour + 1 }, // unreferenced, within grace: kept
      { digest: d(4), uploadedAt: now - hour }, // exactly at the grace: collected
      { digest: d(5), uploadedAt: now + hour }, // a clock step: kept
    ];
    expect(collectableCode(blobs, referencedDigests([{ digest: d(1), size: 1 }, undefined, null]), now, hour)).to.deep.equal([d(2), d(4)]);
    expect(collectableCode([], new Set(), now, hour)).to.deep.equal([]);
  });
});
