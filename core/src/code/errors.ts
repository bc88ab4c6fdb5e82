import { FnhostError } from '../errors.ts';
import * as limits from '../limits.ts';

// The code store's refusals (docs/gateway.md "The code store").

/** A function names a digest its namespace never uploaded, or one collected since: as missing either way (no probing another team's code). */
export class CodeMissingError extends FnhostError {
  readonly digest: string;
  constructor(digest: string) {
    super('code_missing', 400, `code ${digest} is not in the code store: upload it first (PUT /api/v1/code/${digest}, or fnhost bundle --push)`);
    this.digest = digest;
  }
}

/** The uploaded bytes are not the ones the digest names. Nothing is stored. */
export class CodeDigestMismatchError extends FnhostError {
  constructor(expected: string, actual: string) {
    super('digest_mismatch', 400, `the uploaded bytes have digest ${actual}, not ${expected} as the address says`);
  }
}

/** An upload past MAX_CODE_REF_BYTES: refused on its declared length, or when the stream passes it. */
export class CodeTooLargeError extends FnhostError {
  constructor(size: number | undefined) {
    super('payload_too_large', 413, `code ${size === undefined ? 'is larger than' : `is ${size} bytes; the limit is`} ${limits.MAX_CODE_REF_BYTES} bytes`);
  }
}

/**
 * The code store's byte bound (its total, or the namespace's) would be passed. 507 Insufficient
 * Storage, not 429: waiting does not help until code is deleted or collected, and the bound is
 * one of storage, not of rate.
 */
export class CodeStoreFullError extends FnhostError {
  readonly scope: 'total' | 'namespace';
  constructor(scope: 'total' | 'namespace', used: number, adding: number, max: number, namespace: string) {
    super('code_store_full', 507, scope === 'total'
      ? `the code store holds ${used} bytes; ${adding} more would pass its bound of ${max} bytes (FNHOST_CODE_STORE_MAX_BYTES): delete functions or wait for unreferenced code to be collected`
      : `namespace "${namespace}" holds ${used} bytes of code; ${adding} more would pass its bound of ${max} bytes (FNHOST_CODE_STORE_NAMESPACE_MAX_BYTES)`, { expose: true });
    this.scope = scope;
  }
}
