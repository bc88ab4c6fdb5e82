import { randomBytes } from 'node:crypto';
import { digest, sameSecret } from '../auth.ts';

// One random credential per function for its runtime's calls to the internal
// API (KV, policy check). The token is `<function id>.<secret>`: the id finds
// the function's digest, and the secret is compared in constant time. Tokens
// live in memory: a gateway restart gives new ones, and runtimes restart with it.

/** Maps a runtime's credential to its function (one machine: random tokens; cluster: derived ones). */
export interface RuntimeTokenVerifier {
  verify(presented: string | undefined): string | undefined;
}

export class RuntimeTokens implements RuntimeTokenVerifier {
  readonly #tokens = new Map<string, { token: string; digest: Buffer }>();

  tokenFor(functionId: string): string {
    let entry = this.#tokens.get(functionId);
    if (entry === undefined) {
      const token = `${functionId}.${randomBytes(32).toString('base64url')}`;
      entry = { token, digest: digest(token) };
      this.#tokens.set(functionId, entry);
    }
    return entry.token;
  }

  /** The function a presented token belongs to, or undefined. */
  verify(presented: string | undefined): string | undefined {
    if (presented === undefined) return undefined;
    const dot = presented.indexOf('.');
    if (dot <= 0) return undefined;
    const functionId = presented.slice(0, dot);
    const entry = this.#tokens.get(functionId);
    if (entry === undefined) return undefined;
    return sameSecret(presented, entry.digest) ? functionId : undefined;
  }

  forget(functionId: string): void {
    this.#tokens.delete(functionId);
  }
}
