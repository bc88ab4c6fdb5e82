// Express's weak ETag (res.send's default "etag" setting, the etag package): W/"<byte length in
// hex>-<the first 27 characters of the body's SHA-1 in base64>". The etag package hashes with
// node:crypto, and loading node:crypto (its JavaScript modules and OpenSSL's initialisation) costs
// an idle runtime ≈ 2.4 MiB of RSS (docs/runtime.md "Where the memory goes"), on the first call of
// every function, since every res.send sets an ETag. Bodies up to JS_SHA1_MAX_BYTES (a hello
// world, small JSON answers) are hashed here instead; larger ones still go to the etag package,
// where OpenSSL's SHA-1 is faster than this one (a function answering them pays the 2.4 MiB). The value is the same either way
// (test/runtime/etag.unit.test.ts compares the two).

import { http } from './libraries.ts';

/**
 * Bodies up to this many bytes are hashed in JavaScript: there it takes about the etag package's
 * time (its createHash has a fixed cost); at 1 KiB it took ≈ 2.5× as long (measured at load 20:
 * 33 vs 13 µs), so larger bodies go to OpenSSL.
 */
export const JS_SHA1_MAX_BYTES = 512;

/** The etag package's tag of an empty body. */
const EMPTY = '"0-2jmj7l5rSw0yVb/vlWAYkK/YBwk"';

// One scratch buffer for a string's UTF-8 bytes and one message schedule: the runtime hashes one
// body at a time (synchronously), so reusing them allocates nothing per call.
const utf8 = new Uint8Array(JS_SHA1_MAX_BYTES);
const w = new Int32Array(80);
const textEncoder = new TextEncoder();

/** Express's weak ETag of a response body (a string is hashed as its UTF-8 bytes). */
export function weakEtag(body: string | Buffer): string {
  if (body.length === 0) return `W/${EMPTY}`;
  let bytes: Uint8Array;
  if (typeof body === 'string') {
    // A string longer than the limit in UTF-16 units is longer in UTF-8 bytes too; a shorter one
    // may still not fit (3 bytes a unit at most): then encodeInto stops short of its end.
    if (body.length > JS_SHA1_MAX_BYTES) return http().etag(body, { weak: true });
    const { read, written } = textEncoder.encodeInto(body, utf8);
    if (read < body.length) return http().etag(body, { weak: true });
    bytes = utf8.subarray(0, written);
  } else {
    if (body.byteLength > JS_SHA1_MAX_BYTES) return http().etag(body, { weak: true });
    bytes = body;
  }
  const digest = sha1(bytes);
  return `W/"${bytes.length.toString(16)}-${Buffer.from(digest.buffer, digest.byteOffset, digest.byteLength).toString('base64').slice(0, 27)}"`;
}

/** SHA-1 (FIPS 180-4) of `bytes`: 20 bytes. Used for ETags only, never for anything secret. */
export function sha1(bytes: Uint8Array): Uint8Array {
  let h0 = 0x67452301;
  let h1 = 0xefcdab89 | 0;
  let h2 = 0x98badcfe | 0;
  let h3 = 0x10325476;
  let h4 = 0xc3d2e1f0 | 0;
  const n = bytes.length;
  // The message, a 0x80 byte, zeros, then the bit length (64-bit big-endian): whole 64-byte blocks.
  const blocks = ((n + 8) >>> 6) + 1;
  for (let b = 0; b < blocks; b++) {
    const base = b * 64;
    if (base + 64 <= n) {
      for (let i = 0, at = base; i < 16; i++, at += 4) w[i] = (bytes[at]! << 24) | (bytes[at + 1]! << 16) | (bytes[at + 2]! << 8) | bytes[at + 3]!;
    } else {
      // The last one or two blocks: the message's tail, the 0x80 byte, zeros.
      for (let i = 0; i < 16; i++) {
        let word = 0;
        for (let k = 0; k < 4; k++) {
          const at = base + i * 4 + k;
          word = (word << 8) | (at < n ? bytes[at]! : at === n ? 0x80 : 0);
        }
        w[i] = word;
      }
    }
    if (b === blocks - 1) {
      // The bit length in the last two words (bodies here are far below 2^32 bits).
      w[14] = Math.floor(n / 0x20000000);
      w[15] = (n << 3) | 0;
    }
    for (let i = 16; i < 80; i++) {
      const x = w[i - 3]! ^ w[i - 8]! ^ w[i - 14]! ^ w[i - 16]!;
      w[i] = (x << 1) | (x >>> 31);
    }
    let a = h0;
    let bb = h1;
    let c = h2;
    let d = h3;
    let e = h4;
    // Four rounds of 20, each with its own function and constant (no branch per step).
    let t: number;
    for (let i = 0; i < 20; i++) {
      t = (((a << 5) | (a >>> 27)) + ((bb & c) | (~bb & d)) + e + 0x5a827999 + w[i]!) | 0;
      e = d;
      d = c;
      c = (bb << 30) | (bb >>> 2);
      bb = a;
      a = t;
    }
    for (let i = 20; i < 40; i++) {
      t = (((a << 5) | (a >>> 27)) + (bb ^ c ^ d) + e + 0x6ed9eba1 + w[i]!) | 0;
      e = d;
      d = c;
      c = (bb << 30) | (bb >>> 2);
      bb = a;
      a = t;
    }
    for (let i = 40; i < 60; i++) {
      t = (((a << 5) | (a >>> 27)) + ((bb & c) | (bb & d) | (c & d)) + e - 0x70e44324 + w[i]!) | 0;
      e = d;
      d = c;
      c = (bb << 30) | (bb >>> 2);
      bb = a;
      a = t;
    }
    for (let i = 60; i < 80; i++) {
      t = (((a << 5) | (a >>> 27)) + (bb ^ c ^ d) + e - 0x359d3e2a + w[i]!) | 0;
      e = d;
      d = c;
      c = (bb << 30) | (bb >>> 2);
      bb = a;
      a = t;
    }
    h0 = (h0 + a) | 0;
    h1 = (h1 + bb) | 0;
    h2 = (h2 + c) | 0;
    h3 = (h3 + d) | 0;
    h4 = (h4 + e) | 0;
  }
  const out = new Uint8Array(20);
  const view = new DataView(out.buffer);
  view.setInt32(0, h0);
  view.setInt32(4, h1);
  view.setInt32(8, h2);
  view.setInt32(12, h3);
  view.setInt32(16, h4);
  return out;
}
