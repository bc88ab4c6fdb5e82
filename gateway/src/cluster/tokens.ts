import { createHash } from 'node:crypto';
import { digest, sameSecret } from '../auth.ts';
import type { FunctionCache } from './functions.ts';
import { deriveToken } from './resource.ts';

// Per-function credentials in cluster mode are derived, not stored: the
// operator writes HMAC-SHA256(FNHOST_TOKEN_KEY, "fnhost/<purpose>/<id>") into
// each function's Secret, and the gateway, holding the same key, recomputes
// them instead of reading Secrets (docs/operator.md "Tokens").
//
// A runtime token does not name its function, so the gateway keeps an index
// from the SHA-256 of each function's runtime token to the function, rebuilt
// when the set of functions changes. The index is looked up by the digest of
// what was presented, and the match is then confirmed with timingSafeEqual on
// digests (auth.ts), so no comparison of secret bytes depends on timing.

export class DerivedTokens {
  readonly #key: string;
  readonly #cache: FunctionCache;
  #byDigest = new Map<string, string>();
  #builtAt = -1;

  constructor(key: string, cache: FunctionCache) {
    this.#key = key;
    this.#cache = cache;
  }

  tokenFor(functionId: string): string {
    return deriveToken(this.#key, 'runtime', functionId);
  }

  #rebuild(): void {
    const next = new Map<string, string>();
    for (const fn of this.#cache.all()) next.set(digest(this.tokenFor(fn.function_id)).toString('hex'), fn.function_id);
    this.#byDigest = next;
    this.#builtAt = this.#cache.version;
  }

  /** The function a runtime token belongs to, or undefined. */
  verify(presented: string | undefined): string | undefined {
    if (presented === undefined || presented.length > 512) return undefined;
    const presentedDigest = createHash('sha256').update(presented).digest();
    let id = this.#byDigest.get(presentedDigest.toString('hex'));
    if (id === undefined && this.#builtAt !== this.#cache.version) {
      this.#rebuild();
      id = this.#byDigest.get(presentedDigest.toString('hex'));
    }
    if (id === undefined) return undefined;
    return sameSecret(presented, digest(this.tokenFor(id))) ? id : undefined;
  }

  /** True when `presented` is the function's scheduled-trigger token (held only by its CronJob's pods). */
  verifySchedule(functionId: string, presented: string): boolean {
    if (presented.length > 512) return false;
    return sameSecret(presented, digest(deriveToken(this.#key, 'schedule', functionId)));
  }
}
