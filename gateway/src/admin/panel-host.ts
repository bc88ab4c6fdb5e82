import type { IncomingMessage, ServerResponse } from 'node:http';

// The panel's host name of its own on one machine (docs/security.md "The panel's cookie jar").
// Browsers keep cookies per host name, not per port (RFC 6265 section 8.5), and a page may push
// cookies into its host's jar until the browser evicts older ones (Chromium: 180 per domain, the
// least recently used go first, HttpOnly or not). A function page on the panel's host name, on
// any port, could so evict or hide the panel's session. So the panel's default address is
// http://fnhost-admin.localhost:<admin port>/admin/: browsers resolve every *.localhost name to
// loopback themselves (RFC 6761; Chromium and Firefox do), its cookies are a jar of their own,
// and a name under .localhost can set no Domain cookie for another (it has no registrable domain),
// and the main listener refuses to serve anything on that name or below it. The panel still answers
// on any host name (the CLI, scripts, a proxy); only the browser's jar needs the name.

export const PANEL_HOST_NAME = 'fnhost-admin.localhost';

/** The host name of a Host header: lower case, without port or trailing dot; IPv6 literals keep their brackets. */
export function hostNameOf(host: string | undefined): string {
  if (host === undefined) return '';
  let name = host.trim().toLowerCase();
  if (name.startsWith('[')) return name.slice(0, name.indexOf(']') + 1);
  const colon = name.lastIndexOf(':');
  if (colon >= 0) name = name.slice(0, colon);
  while (name.endsWith('.')) name = name.slice(0, -1);
  return name;
}

/** Is this Host the panel's host name, or a name below it (whose pages could share its cookie domain)? */
export function isPanelHost(host: string | undefined): boolean {
  // Asked on every request of the main listener, whose callers mostly send one Host: the last answer is kept.
  if (host === lastHost && host !== undefined) return lastAnswer;
  const name = hostNameOf(host);
  const answer = name === PANEL_HOST_NAME || name.endsWith(PANEL_HOST_SUFFIX);
  lastHost = host;
  lastAnswer = answer;
  return answer;
}

const PANEL_HOST_SUFFIX = `.${PANEL_HOST_NAME}`;
let lastHost: string | undefined;
let lastAnswer = false;

/** Does a listener bound to `address` take connections to loopback (so the panel's .localhost name reaches it)? */
export function acceptsLoopback(address: string): boolean {
  const a = address.trim().toLowerCase().replace(/^\[|\]$/g, '');
  return a === '' || a === 'localhost' || a === '0.0.0.0' || a === '::' || a === '::1' || /^127\./.test(a) || a === '::ffff:127.0.0.1';
}

/**
 * The address to open the panel at: on the panel's host name when its listener takes loopback
 * connections, else the listener's own URL (a host that is not this machine's loopback).
 */
export function panelUrl(adminUrl: string, adminHost: string): string {
  if (!acceptsLoopback(adminHost)) return `${adminUrl}/admin/`;
  const u = new URL(adminUrl);
  return `${u.protocol}//${PANEL_HOST_NAME}:${u.port}/admin/`;
}

/**
 * The main listener, before anything else: a request on the panel's host name is refused with
 * 421 Misdirected Request, so no function page (nor any other answer) ever comes from the panel's
 * cookie jar. Returns true when it answered.
 */
export function refusePanelHost(req: IncomingMessage, res: ServerResponse): boolean {
  if (!isPanelHost(req.headers.host)) return false;
  const body = JSON.stringify({ error: 'misdirected_request', message: `${PANEL_HOST_NAME} is the admin panel's host name: this listener serves nothing there (docs/security.md)` });
  res.writeHead(421, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), connection: 'close' });
  res.end(body);
  return true;
}
