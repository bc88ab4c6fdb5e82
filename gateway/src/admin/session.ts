import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

// Server-side sessions of the admin panel. The browser holds only a random
// session id in an HttpOnly cookie; the gateway keeps, per session, the
// digest of that id, its CSRF token, and its times. A session ends after
// IDLE_MS without use, after MAX_AGE_MS in all, on sign-out, or when the
// gateway restarts (sessions live in memory: one-machine mode).

export const SESSION_COOKIE = 'fnhost_admin';
export const CSRF_HEADER = 'x-fnhost-csrf';
export const DEFAULT_IDLE_MS = 30 * 60_000;
export const DEFAULT_MAX_AGE_MS = 8 * 3_600_000;
/** Oldest sessions are dropped beyond this many, so sign-ins cannot fill memory. */
export const MAX_SESSIONS = 1000;

export interface Session {
  /** A short public label for change records ("who"); not the secret id. */
  label: string;
  csrf: string;
  createdAt: number;
  lastSeenAt: number;
}

export interface SessionTimes {
  idleMs: number;
  maxAgeMs: number;
}

function digestHex(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}

/** Constant-time equality of two strings (compared as SHA-256 digests, so lengths do not leak). */
export function sameToken(presented: string, expected: string): boolean {
  return timingSafeEqual(createHash('sha256').update(presented).digest(), createHash('sha256').update(expected).digest());
}

export function expiresAt(session: Session, times: SessionTimes): number {
  return Math.min(session.lastSeenAt + times.idleMs, session.createdAt + times.maxAgeMs);
}

export class SessionStore {
  readonly #sessions = new Map<string, Session>();
  readonly #now: () => number;
  readonly times: SessionTimes;

  constructor(options: { now: () => number; idleMs?: number; maxAgeMs?: number }) {
    this.#now = options.now;
    this.times = { idleMs: options.idleMs ?? DEFAULT_IDLE_MS, maxAgeMs: options.maxAgeMs ?? DEFAULT_MAX_AGE_MS };
  }

  get size(): number {
    return this.#sessions.size;
  }

  /** A new session; the returned id goes into the cookie and is not kept. */
  create(): { id: string; session: Session } {
    const id = randomBytes(32).toString('base64url');
    const t = this.#now();
    const session: Session = { label: randomBytes(4).toString('hex'), csrf: randomBytes(32).toString('base64url'), createdAt: t, lastSeenAt: t };
    while (this.#sessions.size >= MAX_SESSIONS) this.#sessions.delete(this.#sessions.keys().next().value!);
    this.#sessions.set(digestHex(id), session);
    return { id, session };
  }

  /** The live session for a cookie value (and it is touched), or undefined; expired ones are removed. */
  get(id: string | undefined): Session | undefined {
    if (id === undefined || id === '' || id.length > 128) return undefined;
    const key = digestHex(id);
    const session = this.#sessions.get(key);
    if (session === undefined) return undefined;
    const t = this.#now();
    if (t >= expiresAt(session, this.times)) {
      this.#sessions.delete(key);
      return undefined;
    }
    session.lastSeenAt = t;
    return session;
  }

  destroy(id: string | undefined): void {
    if (id !== undefined) this.#sessions.delete(digestHex(id));
  }

  sweep(): void {
    const t = this.#now();
    for (const [key, s] of this.#sessions) if (t >= expiresAt(s, this.times)) this.#sessions.delete(key);
  }
}

/** The Set-Cookie value: HttpOnly, SameSite=Strict, Path=/, Secure when the request came over TLS. */
export function sessionCookie(id: string, options: { secure: boolean; maxAgeSeconds: number }): string {
  const parts = [`${SESSION_COOKIE}=${id}`, 'Path=/', 'HttpOnly', 'SameSite=Strict', `Max-Age=${Math.max(0, Math.floor(options.maxAgeSeconds))}`];
  if (options.secure) parts.push('Secure');
  return parts.join('; ');
}

export function clearedCookie(secure: boolean): string {
  return sessionCookie('', { secure, maxAgeSeconds: 0 });
}

/** The session id from a Cookie header, or undefined. */
export function readSessionCookie(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === SESSION_COOKIE) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/**
 * Does the Origin header (when the browser sent one) name this gateway?
 * Browsers send Origin on every cross-origin request and on same-origin
 * POST/PUT/PATCH/DELETE; a request without it is not from a page of
 * another site, and still needs the CSRF token. (Koa 3's ctx.origin is
 * this header, not the server's own origin, so the own origin is built
 * from the request's protocol and Host.) An https Origin for the same host
 * is accepted on a plain-http request: a TLS proxy in front of a gateway
 * that does not trust X-Forwarded-Proto.
 */
export function originAllowed(origin: string | undefined, protocol: string, host: string): boolean {
  if (origin === undefined || origin === '') return true;
  if (origin === `${protocol}://${host}`) return true;
  return protocol === 'http' && origin === `https://${host}`;
}

export const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
