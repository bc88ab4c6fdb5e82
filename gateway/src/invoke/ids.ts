import { randomFillSync } from 'node:crypto';

// Log ids in core's format (`log_` + 20 URL-safe characters = 120 random
// bits, core/src/ids.ts), drawn from a pooled random buffer: one
// randomFillSync per 256 ids instead of one crypto call per invocation.

const ID_BYTES = 15;
const POOL_IDS = 256;
const pool = Buffer.alloc(ID_BYTES * POOL_IDS);
let next = POOL_IDS;

export function fastLogId(): string {
  if (next === POOL_IDS) {
    randomFillSync(pool);
    next = 0;
  }
  const start = next++ * ID_BYTES;
  return 'log_' + pool.toString('base64url', start, start + ID_BYTES);
}
