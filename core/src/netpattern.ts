import { ValidationError } from './errors.ts';
import { MAX_POLICY_PATTERNS } from './limits.ts';
import type { NetworkPolicy } from './model.ts';

// Network-policy host patterns, validated without node:net so that the same
// module runs in the gateway and in the admin panel's browser bundle (the
// panel validates as you type, the server again with these same rules).
// test/admin/netpattern.unit.test.ts checks that it agrees with node:net's
// isIP and with gateway/src/policy/match.ts validatePattern on a table.
//
// Patterns: `example.com`, `*.example.com`, `*`, an IP address, or a CIDR; a host, a
// wildcard or an address may name one port (`127.0.0.1:3000`, `[::1]:3000`,
// `db.example.com:5432`), which narrows the pattern to that port (issue 29: a dev server on
// the host is opened port by port). Without a port a pattern covers every port.

const HOST_LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
const HEX_GROUP = /^[0-9a-f]{1,4}$/i;

function isIpv6(text: string): boolean {
  let s = text;
  const zone = s.indexOf('%');
  if (zone >= 0) {
    if (zone === s.length - 1) return false;
    s = s.slice(0, zone);
  }
  let groupsNeeded = 8;
  const lastColon = s.lastIndexOf(':');
  if (lastColon >= 0 && s.slice(lastColon + 1).includes('.')) {
    if (!IPV4.test(s.slice(lastColon + 1))) return false;
    s = s.slice(0, lastColon + 1) + '0';
    groupsNeeded = 7;
  }
  const halves = s.split('::');
  if (halves.length > 2) return false;
  const parts = (half: string) => (half === '' ? [] : half.split(':'));
  if (halves.length === 2) {
    const left = parts(halves[0]!);
    const right = parts(halves[1]!);
    if (![...left, ...right].every((g) => HEX_GROUP.test(g))) return false;
    return left.length + right.length < groupsNeeded;
  }
  const groups = parts(s);
  return groups.length === groupsNeeded && groups.every((g) => HEX_GROUP.test(g));
}

/** 4 or 6 when the text is an IP address literal, 0 otherwise (as node:net isIP). */
export function ipFamily(text: string): 0 | 4 | 6 {
  if (IPV4.test(text)) return 4;
  if (text.includes(':') && isIpv6(text)) return 6;
  return 0;
}

/** Lower-cases, strips brackets of an IPv6 literal, a trailing dot, and the ::ffff: prefix of a mapped IPv4. */
export function normaliseHostText(host: string): string {
  let h = host.trim().toLowerCase();
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  if (h.endsWith('.') && ipFamily(h) === 0) h = h.slice(0, -1);
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(h);
  if (mapped) h = mapped[1]!;
  return h;
}

const FORMS = 'use a host (example.com), a wildcard (*.example.com), an IP or a CIDR (10.0.0.0/8)';
const HOST_OR_CIDR = 'give a host name (example.com) or a CIDR (10.0.0.0/8)';
/** Longer than any host name (253) with room for a CIDR: longer input is refused before it is looked at. */
export const MAX_PATTERN_LENGTH = 300;
/** How much of a refused pattern a message repeats. */
const SHOWN = 60;

/** The pattern as a message quotes it: at most SHOWN characters, and its length when cut. */
export function quotePattern(raw: string): string {
  if (raw.length <= SHOWN) return JSON.stringify(raw);
  return `${JSON.stringify(raw.slice(0, SHOWN))}… (${raw.length} characters)`;
}

function refuse(raw: string, why: string): never {
  throw new ValidationError(`network policy pattern ${quotePattern(raw)} is invalid: ${why}`);
}

/** Why a pattern with a slash is no CIDR: a URL, a host with a path, or a bad prefix. */
function cidrProblem(raw: string, addr: string, bits: string): string {
  const family = ipFamily(addr);
  if (family === 0) {
    if (/^[\d.]+$/.test(addr)) return `not a valid CIDR: ${JSON.stringify(addr.slice(0, SHOWN))} is not an IP address`;
    return `a host with a path; give the host alone (${addr.slice(0, SHOWN) || 'example.com'}) or a CIDR (10.0.0.0/8)`;
  }
  const max = family === 4 ? 32 : 128;
  return `not a valid CIDR: the prefix length of an IPv${family} network is a number from 0 to ${max}, got ${JSON.stringify(bits.slice(0, SHOWN))}`;
}

/** A pattern's host part and port (undefined: every port). `[::1]:3000` → ['::1', 3000]; `::1` → ['::1', undefined]. */
export function splitPatternPort(pattern: string): [string, number | undefined] {
  const bracketed = /^\[([^\]]+)\]:(\d{1,5})$/.exec(pattern);
  if (bracketed !== null) return [bracketed[1]!, Number(bracketed[2])];
  const plain = /^([^:[\]]+):(\d{1,5})$/.exec(pattern);
  if (plain !== null) return [plain[1]!, Number(plain[2])];
  return [pattern, undefined];
}

/** The normalised pattern, or a ValidationError that says what the text is instead (a URL, a path, markup). */
export function validateHostPattern(raw: unknown): string {
  if (typeof raw === 'string') {
    const text = raw.trim().toLowerCase();
    const withPort = /^\[([^\]]*)\]:(.*)$/.exec(text) ?? /^([^:[\]/]+):([^:]*)$/.exec(text);
    if (withPort !== null && raw.length <= MAX_PATTERN_LENGTH && !/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) return withPortPattern(raw, withPort[1]!, withPort[2]!, text.startsWith('['));
  }
  return validateHostOnly(raw);
}

/** `host:port` or `[v6]:port`: a host, wildcard or address with one port, 1-65535. */
function withPortPattern(raw: string, hostText: string, portText: string, bracketed: boolean): string {
  if (!/^\d{1,5}$/.test(portText) || Number(portText) < 1 || Number(portText) > 65535) refuse(raw, `the port of a pattern is a number from 1 to 65535, got ${JSON.stringify(portText.slice(0, SHOWN))}; without a port a pattern covers every port`);
  if (bracketed && ipFamily(hostText) !== 6) refuse(raw, `brackets hold an IPv6 address ([::1]:3000)`);
  if (!bracketed && ipFamily(hostText) === 6) refuse(raw, `write an IPv6 address with a port in brackets ([::1]:3000)`);
  if (hostText === '*' || hostText.includes('/')) refuse(raw, `a port goes with a host, a wildcard or an address, not with ${hostText === '*' ? 'the catch-all *' : 'a CIDR'}`);
  const host = validateHostOnly(hostText);
  return `${ipFamily(host) === 6 ? `[${host}]` : host}:${Number(portText)}`;
}

function validateHostOnly(raw: unknown): string {
  if (typeof raw !== 'string' || raw.trim() === '') throw new ValidationError(`network policy pattern ${JSON.stringify(raw)} is invalid: ${FORMS}`);
  if (raw.length > MAX_PATTERN_LENGTH) refuse(raw, `longer than ${MAX_PATTERN_LENGTH} characters (a host name has at most 253); ${FORMS}`);
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(raw.trim())) refuse(raw, `a URL; ${HOST_OR_CIDR}`);
  if (/[<>"'`]/.test(raw)) refuse(raw, `markup or a script, not a host; ${FORMS}`);
  const p = normaliseHostText(raw);
  if (p === '*') return p;
  const slash = p.indexOf('/');
  if (slash >= 0) {
    const addr = p.slice(0, slash);
    const bits = p.slice(slash + 1);
    const family = ipFamily(addr);
    const max = family === 4 ? 32 : 128;
    if (family === 0 || !/^\d{1,3}$/.test(bits) || Number(bits) > max) refuse(raw, cidrProblem(raw, addr, bits));
    return p;
  }
  if (ipFamily(p) !== 0) return p;
  const name = p.startsWith('*.') ? p.slice(2) : p;
  if (name.includes('*')) refuse(raw, `a wildcard stands only for the first labels (*.example.com)`);
  const odd = [...new Set(name.replace(/[a-z0-9.-]/g, ''))];
  if (odd.length > 0) refuse(raw, `a host name has letters, digits, '-' and '.' only, not ${odd.slice(0, 5).map((c) => JSON.stringify(c)).join(', ')}; ${FORMS}`);
  if (name.length > 253 || !name.split('.').every((label) => HOST_LABEL.test(label))) refuse(raw, FORMS);
  return p;
}

/** For forms: the error message for a pattern, or null when it is valid. */
export function hostPatternProblem(raw: string): string | null {
  try {
    validateHostPattern(raw);
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}

export function validateNetworkPolicy(raw: unknown): NetworkPolicy {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new ValidationError('network policy must be an object {default: "allow"|"deny", allow: [...], deny: [...]}');
  const { default: def, allow, deny, ...rest } = raw as Record<string, unknown>;
  const extra = Object.keys(rest);
  if (extra.length > 0) throw new ValidationError(`network policy has unknown field "${extra[0]}"; the fields are default, allow, deny`);
  if (def !== 'allow' && def !== 'deny') throw new ValidationError(`network policy default must be "allow" or "deny", got ${JSON.stringify(def)}`);
  const list = (value: unknown, what: string): string[] => {
    if (value === undefined) return [];
    if (!Array.isArray(value)) throw new ValidationError(`network policy ${what} must be an array of patterns`);
    if (value.length > MAX_POLICY_PATTERNS) throw new ValidationError(`network policy ${what} has ${value.length} patterns; at most ${MAX_POLICY_PATTERNS} are allowed`);
    return value.map(validateHostPattern);
  };
  return { default: def, allow: list(allow, 'allow'), deny: list(deny, 'deny') };
}
