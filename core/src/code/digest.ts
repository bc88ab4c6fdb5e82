import { createHash, type Hash } from 'node:crypto';
import { ValidationError } from '../errors.ts';
import * as limits from '../limits.ts';

// Code stored by content (docs/gateway.md "The code store"): a blob's name is the SHA-256 of its
// bytes exactly as stored (the bundle as the CLI makes it), written `sha256:<64 lowercase hex>`
// as OCI and Docker write digests, so one bundle is stored once whoever uploads it.

/** A function's code held apart from its record: the blob's digest and its size in bytes. */
export interface CodeRef {
  digest: string;
  size: number;
}

export const DIGEST_PREFIX = 'sha256:';
const DIGEST = /^sha256:[0-9a-f]{64}$/;

/** Whether `value` is a digest as fnhost writes it. */
export function isDigest(value: unknown): value is string {
  return typeof value === 'string' && DIGEST.test(value);
}

/** The digest, or a ValidationError naming the bad value and the form. */
export function parseDigest(value: unknown, what = 'digest'): string {
  if (isDigest(value)) return value;
  const shown = typeof value === 'string' ? JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value) : JSON.stringify(value) ?? String(value);
  throw new ValidationError(`${what} ${shown} is malformed: expected "sha256:" and 64 lowercase hex digits`);
}

/** The 64 hex digits of a digest (a file or GridFS name part). */
export function digestHex(digest: string): string {
  return parseDigest(digest).slice(DIGEST_PREFIX.length);
}

/** The digest of bytes in hand. */
export function digestOf(bytes: string | Uint8Array): string {
  return DIGEST_PREFIX + createHash('sha256').update(bytes).digest('hex');
}

/** Hashes bytes as they stream by (an upload), with their count. */
export class DigestCounter {
  readonly #hash: Hash = createHash('sha256');
  #size = 0;
  update(chunk: Uint8Array): void {
    this.#hash.update(chunk);
    this.#size += chunk.byteLength;
  }
  get size(): number {
    return this.#size;
  }
  /** Once only (the hash is finished). */
  digest(): string {
    return DIGEST_PREFIX + this.#hash.digest('hex');
  }
}

/** A `code_ref` as the API takes it: `{digest, size}`, the size 1 to MAX_CODE_REF_BYTES. */
export function validateCodeRef(raw: unknown): CodeRef {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new ValidationError(`code_ref must be an object {digest, size}, got ${JSON.stringify(raw)}`);
  }
  const { digest, size, ...rest } = raw as Record<string, unknown>;
  const unknown = Object.keys(rest);
  if (unknown.length > 0) throw new ValidationError(`code_ref takes digest and size only, got ${unknown.map((k) => JSON.stringify(k)).join(', ')}`);
  const d = parseDigest(digest, 'code_ref.digest');
  if (typeof size !== 'number' || !Number.isInteger(size) || size < 1 || size > limits.MAX_CODE_REF_BYTES) {
    throw new ValidationError(`code_ref.size must be an integer from 1 to ${limits.MAX_CODE_REF_BYTES} (bytes), got ${JSON.stringify(size)}`);
  }
  return { digest: d, size };
}
