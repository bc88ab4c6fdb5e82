import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { FnhostError } from '@fnhost/core';
import { API_GROUP, type AccessAttributes } from './attributes.ts';
import type { KubeUser } from './caller.ts';

// Kubernetes bearer tokens on the management API: a TokenReview asks the API
// server who a token belongs to, a SubjectAccessReview whether that identity
// may do one thing. Both answers are cached briefly (KUBE_REVIEW_TTL_MS) in
// bounded LRU caches (lru-cache: TTL, size bound and one request in flight
// per key, which a burst of calls with one token needs), so a CLI command
// costs one or two reviews, not one per request. The token is kept only as
// its SHA-256 digest (the cache key) and never logged; a review the API
// server could not give (unreachable, 5xx) is not cached and answers 503.
// A revoked token or a removed RoleBinding holds for at most the TTL, as in
// the API server's own webhook caches (which default to minutes).

export const KUBE_REVIEW_TTL_MS = 10_000;
export const KUBE_REVIEW_CACHE_ENTRIES = 4096;

/** The API server could not review a token or an access: not the caller's fault, and not cached. */
export class AccessReviewUnavailableError extends FnhostError {
  constructor(what: string, cause: unknown) {
    super('access_review_unavailable', 503, `the Kubernetes API server could not ${what} just now; try again`, { cause });
  }
}

/** Sends one review (a POST of the object to its path) and returns the API server's answer. */
export type ReviewSender = (path: string, body: unknown) => Promise<unknown>;

interface TokenReviewStatus {
  authenticated?: boolean;
  user?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> };
}

export const TOKEN_REVIEW_PATH = '/apis/authentication.k8s.io/v1/tokenreviews';
export const ACCESS_REVIEW_PATH = '/apis/authorization.k8s.io/v1/subjectaccessreviews';

/** The TokenReview of a token (pure: what is sent). */
export function tokenReview(token: string): unknown {
  return { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } };
}

/** The user a TokenReview's answer names, or undefined when the token is not authenticated. */
export function userFromTokenReview(answer: unknown): KubeUser | undefined {
  const status = (answer as { status?: TokenReviewStatus } | undefined)?.status;
  if (status?.authenticated !== true || typeof status.user?.username !== 'string' || status.user.username === '') return undefined;
  const user: KubeUser = { username: status.user.username, groups: Array.isArray(status.user.groups) ? status.user.groups.filter((g) => typeof g === 'string') : [] };
  if (typeof status.user.uid === 'string' && status.user.uid !== '') user.uid = status.user.uid;
  if (status.user.extra !== undefined && typeof status.user.extra === 'object') user.extra = status.user.extra;
  return user;
}

/** The SubjectAccessReview of one call (pure: what is sent). */
export function accessReview(user: KubeUser, a: AccessAttributes): unknown {
  return {
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SubjectAccessReview',
    spec: {
      user: user.username,
      ...(user.uid === undefined ? {} : { uid: user.uid }),
      groups: user.groups,
      ...(user.extra === undefined ? {} : { extra: user.extra }),
      resourceAttributes: {
        group: API_GROUP,
        resource: a.resource,
        verb: a.verb,
        namespace: a.namespace,
        ...(a.subresource === undefined ? {} : { subresource: a.subresource }),
        ...(a.name === undefined ? {} : { name: a.name }),
      },
    },
  };
}

/** The cache key of one access question: who (all of it) and what. */
export function accessKey(user: KubeUser, a: AccessAttributes): string {
  return JSON.stringify([user.username, user.uid ?? '', [...user.groups].sort(), user.extra ?? {}, a.verb, a.resource, a.subresource ?? '', a.namespace, a.name ?? '']);
}

export function tokenKey(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

export interface KubeAccessOptions {
  send: ReviewSender;
  ttlMs?: number;
  maxEntries?: number;
  /** The clock the TTLs run on (tests); default performance.now. */
  now?: () => number;
}

export class KubeAccess {
  readonly #users: LRUCache<string, { user: KubeUser | null }, string>;
  readonly #decisions: LRUCache<string, { allowed: boolean }, { user: KubeUser; attributes: AccessAttributes }>;
  tokenReviews = 0;
  accessReviews = 0;

  constructor(options: KubeAccessOptions) {
    const { send } = options;
    const common = {
      max: options.maxEntries ?? KUBE_REVIEW_CACHE_ENTRIES,
      ttl: options.ttlMs ?? KUBE_REVIEW_TTL_MS,
      ...(options.now === undefined ? {} : { perf: { now: options.now }, ttlResolution: 0 }),
    };
    this.#users = new LRUCache({
      ...common,
      // The token travels in fetch's context, never in the key.
      fetchMethod: async (_key, _stale, { context: token }) => {
        this.tokenReviews++;
        let answer: unknown;
        try {
          answer = await send(TOKEN_REVIEW_PATH, tokenReview(token));
        } catch (err) {
          throw new AccessReviewUnavailableError('check the Kubernetes token', err);
        }
        return { user: userFromTokenReview(answer) ?? null };
      },
    });
    this.#decisions = new LRUCache({
      ...common,
      fetchMethod: async (_key, _stale, { context }) => {
        this.accessReviews++;
        let answer: unknown;
        try {
          answer = await send(ACCESS_REVIEW_PATH, accessReview(context.user, context.attributes));
        } catch (err) {
          throw new AccessReviewUnavailableError('review the access', err);
        }
        return { allowed: (answer as { status?: { allowed?: unknown } } | undefined)?.status?.allowed === true };
      },
    });
  }

  /** The identity of a Kubernetes token, or undefined when the API server does not accept it. */
  async authenticate(token: string): Promise<KubeUser | undefined> {
    const found = await this.#users.fetch(tokenKey(token), { context: token });
    return found?.user ?? undefined;
  }

  async allowed(user: KubeUser, attributes: AccessAttributes): Promise<boolean> {
    const found = await this.#decisions.fetch(accessKey(user, attributes), { context: { user, attributes } });
    return found?.allowed === true;
  }
}
