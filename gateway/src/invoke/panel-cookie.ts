// The admin panel's session cookie must never reach function code, nor be set
// by it: a handler that read it could act as the admin, and one that set it
// could fix a session on the admin's browser. The gateway therefore takes the
// cookie out of every Cookie header it forwards to a function and drops every
// Set-Cookie a function answers for that name.
//
// Cookie names are case-sensitive (RFC 6265 §5.3 compares them exactly), so
// `FNHOST_ADMIN` is another cookie, which the panel never reads. The
// `__Host-` and `__Secure-` prefixes are matched case-insensitively, as
// browsers do (RFC 6265bis §4.1.3), so a prefixed variant of the name is
// removed too. A nameless Set-Cookie (`=fnhost_admin=x`, or one with no `=`
// at all) is sent back by browsers as `fnhost_admin=x`: it is dropped too.

const PREFIXES = ['__host-', '__secure-'];

/** The cookie's name without a `__Host-`/`__Secure-` prefix. */
function unprefixed(name: string): string {
  const lower = name.slice(0, 9).toLowerCase();
  for (const prefix of PREFIXES) if (lower.startsWith(prefix)) return name.slice(prefix.length);
  return name;
}

/**
 * The Cookie header without the cookie `name` (and its prefixed variants),
 * other cookies kept as sent; undefined when nothing is left.
 */
export function withoutCookie(header: string, name: string): string | undefined {
  const kept: string[] = [];
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    const cookieName = (eq < 0 ? part : part.slice(0, eq)).trim();
    if (unprefixed(cookieName) === name) continue;
    if (part.trim() !== '') kept.push(part.trim());
  }
  return kept.length === 0 ? undefined : kept.join('; ');
}

/** Would a browser store this Set-Cookie value under the name `name` (or a prefixed variant)? */
export function setsCookie(setCookie: string, name: string): boolean {
  const semicolon = setCookie.indexOf(';');
  const pair = semicolon < 0 ? setCookie : setCookie.slice(0, semicolon);
  const eq = pair.indexOf('=');
  let cookieName = (eq < 0 ? '' : pair.slice(0, eq)).trim();
  if (cookieName === '') {
    // Nameless: the browser sends the value alone, which then reads as name=value.
    const value = eq < 0 ? pair : pair.slice(eq + 1);
    const inner = value.indexOf('=');
    cookieName = (inner < 0 ? value : value.slice(0, inner)).trim();
  }
  return unprefixed(cookieName) === name;
}
