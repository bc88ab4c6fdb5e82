import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { SessionStore, StoredSession } from '@fnhost/core';

// Server-side sessions of the admin panel. The browser holds only a random
// session id in an HttpOnly cookie; the store (core/src/stores.ts
// SessionStore: SQLite on one machine, MongoDB when several gateways share
// one database) keeps, per session, the SHA-256 of that id, its CSRF token
// and its times. A session ends after idleMs without use, after maxAgeMs in
// all, or on sign-out. Every gateway sharing the store sees the same
// sessions, so nothing is cached here: a sign-out through one gateway must
// hold on the next request to another.

/** The cookie's name over plain HTTP; over TLS SECURE_SESSION_COOKIE (see sessionCookie). */
export const SESSION_COOKIE = 'fnhost_admin';
export const SECURE_SESSION_COOKIE = '__Host-fnhost_admin';
/** The plain-HTTP cookie's path: the admin listener's pages and API, never /invoke. */
export const PLAIN_COOKIE_PATH = '/admin';
/** Session cookies looked at per request, so a jar stuffed with planted ones costs little. */
export const MAX_PRESENTED_IDS = 4;
export const CSRF_HEADER = 'x-fnhost-csrf';
export const DEFAULT_IDLE_MS = 30 * 60_000;
export const DEFAULT_MAX_AGE_MS = 8 * 3_600_000;
/** Oldest sessions are dropped beyond this many, so sign-ins cannot fill the store. */
export const MAX_SESSIONS = 1000;
/** A cookie value longer than this is no session id of ours (ours are 43 characters). */
const MAX_ID_LENGTH = 128;
/**
 * Last-seen is written at most once per this fraction of the idle window
 * (3 minutes of the default 30). Writing it on every request would make
 * every panel request a database write (and in cluster mode a MongoDB
 * round trip more); the price is that the stored last-seen may lag the true
 * last use by up to idleMs / TOUCH_FRACTION, so an idle session ends between
 * 90 % and 100 % of the idle time after its last use, never later.
 */
export const TOUCH_FRACTION = 10;

export type Session = StoredSession;

export interface SessionTimes {
  idleMs: number;
  maxAgeMs: number;
}

/** The SHA-256 (hex) of a session id: what the store keeps instead of the id. */
export function sessionIdHash(id: string): string {
  return createHash('sha256').update(id).digest('hex');
}

/** Constant-time equality of two strings (compared as SHA-256 digests, so lengths do not leak). */
export function sameToken(presented: string, expected: string): boolean {
  return timingSafeEqual(createHash('sha256').update(presented).digest(), createHash('sha256').update(expected).digest());
}

/** When a session ends unless used again: idle time after its last use, capped by its maximum age. */
export function expiresAt(session: Pick<Session, 'createdAt' | 'lastSeenAt'>, times: SessionTimes): number {
  return Math.min(session.lastSeenAt + times.idleMs, session.createdAt + times.maxAgeMs);
}

/** The least time between two writes of a session's last-seen (see TOUCH_FRACTION). */
export function touchIntervalMs(times: SessionTimes): number {
  return Math.floor(times.idleMs / TOUCH_FRACTION);
}

/**
 * Should a use at `now` be written to the store? Only when the stored
 * last-seen is at least touchIntervalMs old, and only when it would move the
 * session's end (near its maximum age the end is fixed, so a write changes
 * nothing).
 */
export function shouldTouch(session: Pick<Session, 'createdAt' | 'lastSeenAt'>, now: number, times: SessionTimes): boolean {
  if (now - session.lastSeenAt < touchIntervalMs(times)) return false;
  return expiresAt({ createdAt: session.createdAt, lastSeenAt: now }, times) > expiresAt(session, times);
}

/** The sessions of the panel over a SessionStore, with the gateway's clock and lifetimes. */
export class PanelSessions {
  readonly #store: SessionStore;
  readonly #now: () => number;
  readonly times: SessionTimes;

  constructor(options: { store: SessionStore; now: () => number; idleMs?: number; maxAgeMs?: number }) {
    this.#store = options.store;
    this.#now = options.now;
    this.times = { idleMs: options.idleMs ?? DEFAULT_IDLE_MS, maxAgeMs: options.maxAgeMs ?? DEFAULT_MAX_AGE_MS };
  }

  /** A new session; the returned id goes into the cookie and is not kept anywhere. */
  async create(): Promise<{ id: string; session: Session }> {
    const id = randomBytes(32).toString('base64url');
    const t = this.#now();
    const times = { createdAt: t, lastSeenAt: t };
    const session: Session = {
      idHash: sessionIdHash(id),
      label: randomBytes(4).toString('hex'),
      csrf: randomBytes(32).toString('base64url'),
      ...times,
      expiresAt: expiresAt(times, this.times),
    };
    await this.#store.create(session, MAX_SESSIONS);
    return { id, session };
  }

  /**
   * The live session for a cookie value, or undefined. A use is written
   * back only as shouldTouch allows; an expired session found is removed.
   */
  async get(id: string | undefined): Promise<Session | undefined> {
    if (id === undefined || id === '' || id.length > MAX_ID_LENGTH) return undefined;
    const idHash = sessionIdHash(id);
    const t = this.#now();
    const session = await this.#store.get(idHash, t);
    if (session === null) return undefined;
    // The store hides sessions past their stored end; this gateway's own
    // lifetimes apply too (another gateway may have been started with longer ones).
    if (t >= expiresAt(session, this.times)) {
      await this.#store.delete(idHash);
      return undefined;
    }
    if (shouldTouch(session, t, this.times)) {
      const end = expiresAt({ createdAt: session.createdAt, lastSeenAt: t }, this.times);
      if (!(await this.#store.touch(idHash, t, end))) return undefined; // signed out meanwhile
      session.lastSeenAt = t;
      session.expiresAt = end;
    }
    return session;
  }

  async destroy(id: string | undefined): Promise<void> {
    if (id === undefined || id === '' || id.length > MAX_ID_LENGTH) return;
    await this.#store.delete(sessionIdHash(id));
  }

  /** Removes expired sessions from the store (reads already refuse them). */
  sweep(): Promise<number> {
    return this.#store.sweep(this.#now());
  }
}

/**
 * The session cookie: HttpOnly, SameSite=Strict. Over TLS it is
 * `__Host-fnhost_admin` (Secure, Path=/, no Domain): the browser accepts it
 * only from a secure page of this very host, so a function page on a sibling
 * host (fn.example.com beside admin.example.com) cannot set or shadow it. Over
 * plain HTTP (one machine) it is `fnhost_admin` with Path=/admin: browsers do
 * not separate cookies by port (RFC 6265 section 8.5), so this path keeps the
 * cookie off /invoke on the main port of the same host. docs/security.md.
 */
export function sessionCookie(id: string, options: { secure: boolean; maxAgeSeconds: number }): string {
  const maxAge = `Max-Age=${Math.max(0, Math.floor(options.maxAgeSeconds))}`;
  if (options.secure) return [`${SECURE_SESSION_COOKIE}=${id}`, 'Path=/', 'HttpOnly', 'SameSite=Strict', maxAge, 'Secure'].join('; ');
  return [`${SESSION_COOKIE}=${id}`, `Path=${PLAIN_COOKIE_PATH}`, 'HttpOnly', 'SameSite=Strict', maxAge].join('; ');
}

export function clearedCookie(secure: boolean): string {
  return sessionCookie('', { secure, maxAgeSeconds: 0 });
}

/**
 * Removes the cookie that gateways before the origin split set (`fnhost_admin`,
 * Path=/): left in the browser, it would keep going to /invoke on this host.
 */
export const LEGACY_COOKIE_REMOVAL = `${SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0`;

/** Is this cookie name one of the panel's (what the invocation path strips)? */
export function isPanelCookieName(name: string): boolean {
  return name === SESSION_COOKIE || name === SECURE_SESSION_COOKIE;
}

/**
 * Every panel session id in a Cookie header, in order, at most
 * MAX_PRESENTED_IDS. There can be several: a page of another port of the same
 * host can add a cookie of the same name with a longer path, which the
 * browser sends first. Each is checked; a planted one is no live session and
 * so can neither authenticate nor hide the real one.
 */
export function readSessionCookies(header: string | undefined): string[] {
  if (header === undefined) return [];
  const ids: string[] = [];
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (!isPanelCookieName(part.slice(0, eq).trim())) continue;
    ids.push(part.slice(eq + 1).trim());
    if (ids.length === MAX_PRESENTED_IDS) break;
  }
  return ids;
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
