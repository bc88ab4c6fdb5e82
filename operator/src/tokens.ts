import { createHmac } from 'node:crypto';

// Per-function credentials are derived, not random: HMAC-SHA256 of the purpose
// and the functionId under FNHOST_TOKEN_KEY. Every operator replica computes
// the same token (no fight over a Secret's contents, and secretFor stays pure),
// and the gateway verifies a token with the same key without reading Secrets.
// Rotating the key rotates every token (the Secrets are re-applied and the
// pods roll, because the token Secret's hash is part of the pod template).

export type TokenPurpose = 'runtime' | 'schedule';

export function deriveToken(key: string, purpose: TokenPurpose, functionId: string): string {
  return createHmac('sha256', key).update(`fnhost/${purpose}/${functionId}`).digest('base64url');
}
