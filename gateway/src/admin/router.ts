import type { BackgroundFailures } from '../background.ts';
import { readFile, stat } from 'node:fs/promises';
import { extname, join, normalize, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Context } from 'koa';
import Router from '@koa/router';
import { FnhostError, ValidationError, type SessionStore } from '@fnhost/core';
import { UnauthorizedError, sameSecret, type AdminToken } from '../auth.ts';
import { readJson } from '../api/body.ts';
import { ConfigError } from '../config.ts';
import type { Logger } from '../log.ts';
import { CSRF_HEADER, PanelSessions, SAFE_METHODS, LEGACY_COOKIE_REMOVAL, clearedCookie, expiresAt, originAllowed, readSessionCookies, sameToken, sessionCookie, type Session } from './session.ts';

// The admin panel: the built page (admin/dist) at /admin, the sign-in and
// sign-out endpoints at /admin/api/session, and the session check that
// guards the panel's way into the management API (/admin/api/v1 on the admin
// listener, ./listener.ts). Security model: docs/admin-panel.md, docs/security.md.

export const DEFAULT_ADMIN_DIST = fileURLToPath(new URL('../../../admin/dist/', import.meta.url));

/** No inline script or style, nothing from another host, no framing. */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.txt': 'text/plain; charset=utf-8',
};

export class ForbiddenError extends FnhostError {
  constructor(message: string) {
    super('forbidden', 403, message);
  }
}

export class PanelNotBuiltError extends FnhostError {
  constructor(file: string) {
    super('admin_not_built', 503, `the admin panel is not built (no ${file}): run npm run build -w admin`, { expose: true });
  }
}

export interface AdminPanel {
  router: Router;
  sessions: PanelSessions;
  /**
   * For /admin/api/v1: true when the request carries a live panel session
   * (and, for a state change, a matching CSRF header and an allowed Origin; a
   * mismatch throws 403). False when no cookie names a live session.
   */
  authenticate(ctx: Context): Promise<boolean>;
  /** Stops the sweeper of expired sessions (before the stores close). */
  close(): void;
}

/** The panel's response headers: its CSP, no sniffing, no framing, no referrer, no cross-origin reads. */
export function setSecurityHeaders(ctx: Context): void {
  ctx.set('content-security-policy', CONTENT_SECURITY_POLICY);
  ctx.set('x-content-type-options', 'nosniff');
  ctx.set('x-frame-options', 'DENY');
  ctx.set('referrer-policy', 'no-referrer');
  ctx.set('cross-origin-opener-policy', 'same-origin');
  ctx.set('cross-origin-resource-policy', 'same-origin');
}

/**
 * Session lifetimes from FNHOST_ADMIN_SESSION_IDLE_SECONDS (default 1800) and
 * FNHOST_ADMIN_SESSION_MAX_SECONDS (default 28800); a bad value stops the start.
 */
export function sessionTimesFromEnv(env: Record<string, string | undefined>): { idleMs?: number; maxAgeMs?: number } {
  const read = (name: string): number | undefined => {
    const raw = env[name]?.trim();
    if (raw === undefined || raw === '') return undefined;
    if (!/^\d{1,7}$/.test(raw) || Number(raw) < 1) throw new ConfigError(`${name}="${raw}" is not a number of seconds from 1 to 9999999`);
    return Number(raw) * 1000;
  };
  return { idleMs: read('FNHOST_ADMIN_SESSION_IDLE_SECONDS'), maxAgeMs: read('FNHOST_ADMIN_SESSION_MAX_SECONDS') };
}

export interface AdminPanelOptions {
  token: AdminToken;
  now: () => number;
  /** Where sessions live: the gateway's stores (shared by every gateway on the same database). */
  sessionStore: SessionStore;
  logger?: Logger;
  distDir?: string;
  idleMs?: number;
  maxAgeMs?: number;
  /** How often expired sessions are deleted (default a minute; MongoDB's TTL index also does it). */
  sweepIntervalMs?: number;
  /** A failed sweep is reported (counted, logged) here; the next interval tries again. */
  background?: BackgroundFailures;
}

export function adminPanel(options: AdminPanelOptions): AdminPanel {
  const dist = resolve(options.distDir ?? DEFAULT_ADMIN_DIST);
  const fromEnv = sessionTimesFromEnv(process.env);
  const sessions = new PanelSessions({ store: options.sessionStore, now: options.now, idleMs: options.idleMs ?? fromEnv.idleMs, maxAgeMs: options.maxAgeMs ?? fromEnv.maxAgeMs });
  const sweeper = setInterval(() => {
    sessions.sweep().catch((err: unknown) => {
      if (options.background !== undefined) options.background.failed('admin_session_sweep', err);
      else options.logger?.error('admin session sweep failed', { error: (err as Error).message });
    });
  }, options.sweepIntervalMs ?? 60_000);
  sweeper.unref();

  const checkOrigin = (ctx: Context): void => {
    const origin = ctx.get('origin') || undefined;
    if (!originAllowed(origin, ctx.protocol, ctx.host)) throw new ForbiddenError(`request Origin "${(origin ?? '').slice(0, 200)}" is not this gateway (${ctx.protocol}://${ctx.host})`);
  };

  /** The first cookie that names a live session (a planted one names none). */
  const sessionOf = async (ctx: Context): Promise<{ id: string; session: Session } | undefined> => {
    for (const id of readSessionCookies(ctx.get('cookie') || undefined)) {
      const session = await sessions.get(id);
      if (session !== undefined) return { id, session };
    }
    return undefined;
  };

  /** CSRF defence for a state change made with the session cookie. */
  const checkStateChange = (ctx: Context, session: Session): void => {
    checkOrigin(ctx);
    const presented = ctx.get(CSRF_HEADER);
    if (presented === '' || !sameToken(presented, session.csrf)) throw new ForbiddenError(`a state change with the panel session needs the ${CSRF_HEADER} header of this session`);
  };

  const sessionBody = (session: Session) => ({
    csrf_token: session.csrf,
    expires_at: new Date(expiresAt(session, sessions.times)).toISOString(),
    idle_timeout_seconds: Math.round(sessions.times.idleMs / 1000),
  });

  const router = new Router();

  router.use('/admin', async (ctx, next) => {
    setSecurityHeaders(ctx);
    await next();
  });

  router.get('/admin/api/session', async (ctx) => {
    ctx.set('cache-control', 'no-store');
    const found = await sessionOf(ctx);
    if (found === undefined) throw new UnauthorizedError('no panel session, or it has expired: sign in again');
    ctx.body = sessionBody(found.session);
  });

  router.post('/admin/api/session', async (ctx) => {
    ctx.set('cache-control', 'no-store');
    // Sign-in is a state change too (login CSRF): only from a page of this gateway.
    checkOrigin(ctx);
    const body = await readJson(ctx, 4096);
    const token = (body as { token?: unknown } | undefined)?.token;
    if (typeof token !== 'string' || token === '') throw new ValidationError('sign-in needs a JSON body {"token": "<admin token>"}');
    if (!sameSecret(token, options.token.digest)) throw new UnauthorizedError('the admin token is wrong');
    for (const old of readSessionCookies(ctx.get('cookie') || undefined)) await sessions.destroy(old);
    const { id, session } = await sessions.create();
    ctx.set('set-cookie', [sessionCookie(id, { secure: ctx.secure, maxAgeSeconds: sessions.times.maxAgeMs / 1000 }), LEGACY_COOKIE_REMOVAL]);
    ctx.status = 201;
    ctx.body = sessionBody(session);
  });

  router.delete('/admin/api/session', async (ctx) => {
    ctx.set('cache-control', 'no-store');
    const found = await sessionOf(ctx);
    if (found !== undefined) {
      checkStateChange(ctx, found.session);
      // Deleted from the shared store: every gateway refuses the cookie from now on.
      await sessions.destroy(found.id);
    }
    ctx.set('set-cookie', clearedCookie(ctx.secure));
    ctx.status = 204;
  });

  router.get('/admin{/*rest}', async (ctx) => {
    const rest = ctx.path === '/admin' ? '' : ctx.path.slice('/admin/'.length);
    if (rest.startsWith('api/')) return; // unknown API path: the 404 of the error middleware
    let relative: string;
    try {
      relative = normalize(decodeURIComponent(rest));
    } catch {
      throw new ValidationError(`path "${ctx.path.slice(0, 200)}" is not valid percent-encoding`);
    }
    let file = join(dist, relative);
    if ((file !== dist && !file.startsWith(dist + sep)) || relative.split(sep).includes('..')) return;
    let info = await stat(file).catch(() => undefined);
    const asset = rest.startsWith('assets/');
    if (info === undefined || !info.isFile()) {
      // A page path of the single-page app (/admin/functions/x) gets index.html; a missing asset a 404.
      if (asset || extname(rest) !== '') return;
      file = join(dist, 'index.html');
      info = await stat(file).catch(() => undefined);
      if (info === undefined) throw new PanelNotBuiltError(join(dist, 'index.html'));
    }
    ctx.type = TYPES[extname(file)] ?? 'application/octet-stream';
    // Built assets carry a content hash in their names; the page itself is always fetched again.
    ctx.set('cache-control', asset ? 'public, max-age=31536000, immutable' : 'no-store');
    ctx.body = await readFile(file);
  });

  return {
    router,
    sessions,
    async authenticate(ctx) {
      const found = await sessionOf(ctx);
      if (found === undefined) return false;
      if (!SAFE_METHODS.has(ctx.method)) checkStateChange(ctx, found.session);
      ctx.state.actor = `admin (panel session ${found.session.label})`;
      return true;
    },
    close() {
      clearInterval(sweeper);
    },
  };
}
