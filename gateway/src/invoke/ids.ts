import { randomFillSync } from 'node:crypto';

// Log ids in core's format (`log_` + 20 URL-safe characters = 120 random
// bits, core/src/ids.ts), drawn from a pooled random buffer: one
// randomFillSync and one base64url encoding per 256 ids instead of a crypto
// call and a Buffer.toString per invocation. 15 bytes are exactly 20
// base64url characters (15 is a multiple of 3), so the pool's encoding is
// the 256 ids side by side and each id is a slice of it.

const ID_BYTES = 15;
const ID_CHARS = 20;
const POOL_IDS = 256;
const pool = Buffer.alloc(ID_BYTES * POOL_IDS);
let encoded = '';
let next = POOL_IDS;

export function fastLogId(): string {
  if (next === POOL_IDS) {
    randomFillSync(pool);
    encoded = pool.toString('base64url');
    next = 0;
  }
  const start = next++ * ID_CHARS;
  return 'log_' + encoded.slice(start, start + ID_CHARS);
}
