// Cookies as Express 5 reads and writes them, by the `cookie` package Express uses: req.cookies
// (what cookie-parser gives an Express app), res.cookie's Set-Cookie line and res.clearCookie's.

import { http } from './libraries.ts';

export interface CookieOptions {
  maxAge?: number | null;
  expires?: Date;
  path?: string | null;
  domain?: string;
  secure?: boolean;
  httpOnly?: boolean;
  sameSite?: 'strict' | 'lax' | 'none' | boolean;
  partitioned?: boolean;
  priority?: 'low' | 'medium' | 'high';
  encode?: (s: string) => string;
  signed?: boolean;
  [other: string]: unknown;
}

/** A signed cookie needs a secret, and a handler has none to give (Express asks for cookie-parser's). */
export class SignedCookieError extends Error {
  override name = 'SignedCookieError';
}

/** Cookie header → object; the first occurrence of a name wins, values URI-decoded, quotes removed. */
export function parseCookies(header: string | undefined): Record<string, string> {
  const out: Record<string, string> = Object.create(null);
  if (!header) return out;
  for (const [name, value] of Object.entries(http().cookie.parse(header))) if (value !== undefined) out[name] = value;
  return out;
}

/** The Set-Cookie value of Express's `res.cookie(name, value, options)`; the cookie package throws for an invalid option. */
export function serializeCookie(name: string, value: unknown, options: CookieOptions | undefined): string {
  const opts: CookieOptions = { ...options };
  if (opts.signed) throw new SignedCookieError(`res.cookie("${name}"): signed cookies need a secret, which a function has none of (sign the value yourself, e.g. with node:crypto's createHmac)`);
  const text = typeof value === 'object' ? 'j:' + JSON.stringify(value) : String(value);
  if (opts.maxAge != null) {
    const maxAge = Number(opts.maxAge);
    if (!Number.isNaN(maxAge)) {
      opts.expires = new Date(Date.now() + maxAge);
      opts.maxAge = Math.floor(maxAge / 1000);
    }
  }
  if (opts.path == null) opts.path = '/';
  return http().cookie.serialize(name, text, opts);
}

/** The options of Express's `res.clearCookie`: expired at the epoch, whatever maxAge says. */
export function clearingOptions(options: CookieOptions | undefined): CookieOptions {
  const opts: CookieOptions = { path: '/', ...options, expires: new Date(1) };
  delete opts.maxAge;
  return opts;
}
