import { createHash, timingSafeEqual } from 'node:crypto';

// Bearer credentials shared by the gateway and the operator: the token out of
// an Authorization header, and a comparison on SHA-256 digests with
// timingSafeEqual, so neither the length nor the content of a secret leaks
// through timing. A secret is kept only as its digest.

export function secretDigest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

export function sameSecret(presented: string, expectedDigest: Buffer): boolean {
  return timingSafeEqual(secretDigest(presented), expectedDigest);
}

export function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
}

/** Why a request to a guarded endpoint is refused, or null when its bearer token is right (or none is required). */
export function bearerRefusal(header: string | undefined, expectedDigest: Buffer | undefined): 'missing' | 'wrong' | null {
  if (expectedDigest === undefined) return null;
  const presented = bearerToken(header);
  if (presented === undefined) return 'missing';
  return sameSecret(presented, expectedDigest) ? null : 'wrong';
}
