import type { Trigger } from '@fnhost/core';
import { SESSION_COOKIE } from '../admin/session.ts';
import { setsCookie, withoutCookie } from './panel-cookie.ts';

// What the gateway forwards between a caller and a function, as pure
// functions. Every request header is the caller's to choose, so the rule is:
// nothing that describes the caller's connection to the gateway travels on
// the gateway's own keep-alive connection to the runtime (that connection is
// shared by other callers' calls), and nothing the platform vouches for
// (x-fnhost-*, forwarded client details) is taken from the caller.

/**
 * Never forwarded in either direction. Hop-by-hop headers (RFC 9110 §7.6.1)
 * and the framing headers the gateway sets itself: the body is read whole
 * and sent with a Content-Length undici computes, and `Expect: 100-continue`
 * was answered by the gateway's HTTP server already (undici refuses the
 * header, which used to look like a crashed runtime).
 */
const NOT_FORWARDED = new Set([
  'connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate', 'proxy-authorization',
  'transfer-encoding', 'content-length', 'upgrade', 'te', 'trailer', 'http2-settings', 'expect',
]);

/** Who sent the request and whether the gateway sits behind a proxy it trusts (FNHOST_TRUST_PROXY). */
export interface ForwardContext {
  /** The peer address of the caller's connection. */
  remoteAddress: string;
  trustProxy: boolean;
  executionId: string;
  trigger: Trigger;
}

type Headers = Record<string, string | string[] | undefined>;

function isPlatformHeader(name: string): boolean {
  return name.startsWith('x-fnhost-');
}

/**
 * The headers a function's runtime gets for a caller's request (names
 * lower-case, as node:http gives them). The panel's session cookie is taken
 * out of Cookie, every x-fnhost-* header is dropped and the gateway's own
 * are set. X-Forwarded-For/-Proto/-Host and Forwarded are the caller's
 * only when the operator said a trusted proxy is in front; otherwise
 * X-Forwarded-For and -Proto describe the caller's connection and
 * X-Forwarded-Host and Forwarded are removed, so req.hostname is the Host
 * the caller addressed.
 */
export function headersToFunction(incoming: Headers, ctx: ForwardContext): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const name in incoming) {
    if (NOT_FORWARDED.has(name) || isPlatformHeader(name)) continue;
    const value = incoming[name];
    if (value !== undefined) out[name] = value;
  }
  // Headers the caller named in Connection are for its hop only. Host stays: it is the request's target.
  const connection = incoming.connection;
  if (typeof connection === 'string') {
    for (const token of connection.split(',')) {
      const name = token.trim().toLowerCase();
      if (name !== 'host') delete out[name];
    }
  }
  const cookie = out.cookie;
  if (typeof cookie === 'string') {
    const kept = withoutCookie(cookie, SESSION_COOKIE);
    if (kept === undefined) delete out.cookie;
    else out.cookie = kept;
  }
  const priorFor = incoming['x-forwarded-for'];
  out['x-forwarded-for'] = ctx.trustProxy && typeof priorFor === 'string' && priorFor !== '' ? `${priorFor}, ${ctx.remoteAddress}` : ctx.remoteAddress;
  const priorProto = incoming['x-forwarded-proto'];
  out['x-forwarded-proto'] = ctx.trustProxy && typeof priorProto === 'string' && priorProto !== '' ? priorProto : 'http';
  if (!ctx.trustProxy) {
    delete out['x-forwarded-host'];
    delete out.forwarded;
  }
  out['x-fnhost-execution-id'] = ctx.executionId;
  out['x-fnhost-trigger'] = ctx.trigger;
  return out;
}

/** The headers a caller gets from a function's answer: no hop-by-hop or x-fnhost-* header, no Set-Cookie for the panel's cookie. */
export function headersToCaller(upstream: Headers): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const name in upstream) {
    if ((NOT_FORWARDED.has(name) && name !== 'content-length') || isPlatformHeader(name)) continue;
    const value = upstream[name];
    if (value !== undefined) out[name] = value;
  }
  const setCookie = out['set-cookie'];
  if (setCookie !== undefined) {
    const kept = (Array.isArray(setCookie) ? setCookie : [setCookie]).filter((value) => !setsCookie(value, SESSION_COOKIE));
    if (kept.length === 0) delete out['set-cookie'];
    else out['set-cookie'] = kept;
  }
  return out;
}

/** Lower-cases header names given in any case (a test run's headers come from JSON). */
export function lowerCaseNames(headers: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) out[name.toLowerCase()] = value;
  return out;
}

/** A percent-encoded header value (x-fnhost-error) or path segment; the raw text when it is not valid encoding. */
export function decodeURIComponentSafe(value: string): string {
  // Without a '%' there is nothing to decode (the common case: every call's function id): no try, no copy.
  if (!value.includes('%')) return value;
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}
