import { createHash } from 'node:crypto';
import { expect } from 'chai';
import { JS_SHA1_MAX_BYTES, sha1, weakEtag } from '../../runtime-image/src/etag.ts';
import { http } from '../../runtime-image/src/libraries.ts';

// The runtime's own SHA-1 and weak ETag (runtime-image/src/etag.ts) against node:crypto and the
// etag package Express uses: the same value for every body, whichever side of the limit.

/** Deterministic bytes (a linear congruential sequence), so a failure reproduces. */
function bytesOf(length: number, seed: number): Buffer {
  const out = Buffer.alloc(length);
  let x = seed;
  for (let i = 0; i < length; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    out[i] = x >>> 24;
  }
  return out;
}

describe('runtime: ETag without node:crypto', () => {
  it('SHA-1 equals node:crypto at every length around the block and padding edges, and at larger ones', () => {
    const lengths = [...Array.from({ length: 200 }, (_, i) => i), 447, 448, 511, 512, 513, 1000, 4095, 4096, 4097, JS_SHA1_MAX_BYTES, 100_000];
    for (const n of lengths) {
      const b = bytesOf(n, n + 1);
      expect(Buffer.from(sha1(b)).toString('hex'), `length ${n}`).to.equal(createHash('sha1').update(b).digest('hex'));
    }
  });

  it('the weak ETag of strings and bytes equals the etag package, below, at and above the limit', () => {
    const strings = ['', 'a', '{"hello":"world"}', 'é', '日本語テキスト', '😀'.repeat(100), 'x'.repeat(JS_SHA1_MAX_BYTES), 'x'.repeat(JS_SHA1_MAX_BYTES + 1), 'é'.repeat(JS_SHA1_MAX_BYTES / 2), 'é'.repeat(JS_SHA1_MAX_BYTES / 2 + 1), '€'.repeat(170), '€'.repeat(171)];
    for (const s of strings) expect(weakEtag(s), `string of ${s.length} units`).to.equal(http().etag(s, { weak: true }));
    for (const n of [0, 1, 55, 56, 64, 1024, JS_SHA1_MAX_BYTES - 1, JS_SHA1_MAX_BYTES, JS_SHA1_MAX_BYTES + 1, 50_000]) {
      const b = bytesOf(n, 7 * n + 3);
      expect(weakEtag(b), `${n} bytes`).to.equal(http().etag(b, { weak: true }));
    }
    // A view into a larger buffer hashes only its own bytes.
    const big = bytesOf(300, 9);
    const view = big.subarray(100, 150);
    expect(weakEtag(view)).to.equal(http().etag(Buffer.from(view), { weak: true }));
  });

  it('two bodies in a row do not share state (the scratch buffers are reused)', () => {
    const first = weakEtag('é'.repeat(100));
    weakEtag(bytesOf(5000, 1));
    expect(weakEtag('é'.repeat(100))).to.equal(first);
  });
});
