import { randomFillSync } from 'node:crypto';
import { LOG_ID_RANDOM_CHARS, logIdTimePrefix } from '@fnhost/core';

// Log ids in core's format (core/src/ids.ts: `log_` + a 7-character time prefix that sorts in
// time order + 13 random URL-safe characters), made cheaply per invocation: the prefix is
// computed once per millisecond, and the random part is sliced from one pooled base64url
// encoding per 256 ids instead of a crypto call and a Buffer.toString per invocation. The pool's
// bytes are all random, so every character of its encoding is a uniform draw of 6 bits wherever
// a slice starts (the pool's 256 × 13 characters are exactly 2,496 bytes: no padding character).

const POOL_IDS = 256;
const pool = Buffer.alloc((POOL_IDS * LOG_ID_RANDOM_CHARS * 6) / 8);
let encoded = '';
let next = POOL_IDS;
let prefixMs = -1;
let prefix = '';

export function fastLogId(now = Date.now()): string {
  if (next === POOL_IDS) {
    randomFillSync(pool);
    encoded = pool.toString('base64url');
    next = 0;
  }
  if (now !== prefixMs) {
    prefixMs = now;
    prefix = 'log_' + logIdTimePrefix(now);
  }
  const start = next++ * LOG_ID_RANDOM_CHARS;
  return prefix + encoded.slice(start, start + LOG_ID_RANDOM_CHARS);
}
