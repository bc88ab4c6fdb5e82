import { BlockList, isIP } from 'node:net';
import { ValidationError, limits, type NetworkPolicy } from '@fnhost/core';

// Pure network-policy matching, used by the internal check endpoint that the
// runtime calls before each outbound fetch.
//
// Patterns: `example.com` (that host exactly), `*.example.com` (any host below
// example.com, not example.com itself), an IP address, or a CIDR.
// Precedence, first match wins:
//   function deny > function allow > global deny > global allow >
//   protected addresses (link-local, cloud metadata: denied) > function default > global default.
// A protected address is allowed only by an allow pattern that names it
// specifically: catch-alls (`*`, `0.0.0.0/0`, `::/0`) do not count.

export interface PolicyDecision {
  allowed: boolean;
  /** The pattern that decided, or `default`, or `protected`. */
  rule: string;
  scope: 'global' | 'function';
}

const HOST_LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
const CATCH_ALL = new Set(['*', '0.0.0.0/0', '::/0']);
const PROTECTED_NAMES = new Set(['metadata.google.internal', 'metadata.google.internal.', 'metadata']);

const protectedAddresses = new BlockList();
protectedAddresses.addSubnet('169.254.0.0', 16, 'ipv4');
protectedAddresses.addSubnet('fe80::', 10, 'ipv6');
protectedAddresses.addAddress('fd00:ec2::254', 'ipv6');

/** Lower-cases, strips brackets of an IPv6 literal and a trailing dot. */
export function normaliseHost(host: string): string {
  let h = host.trim().toLowerCase();
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  if (h.endsWith('.') && isIP(h) === 0) h = h.slice(0, -1);
  // IPv4-mapped IPv6 (::ffff:169.254.169.254) is checked as the IPv4 address.
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(h);
  if (mapped) h = mapped[1]!;
  return h;
}

export function isProtectedHost(host: string): boolean {
  const h = normaliseHost(host);
  const family = isIP(h);
  if (family === 4) return protectedAddresses.check(h, 'ipv4');
  if (family === 6) return protectedAddresses.check(h, 'ipv6');
  return PROTECTED_NAMES.has(h);
}

/** Throws ValidationError naming the pattern when it is not one of the accepted forms. */
export function validatePattern(raw: unknown): string {
  if (typeof raw !== 'string' || raw.trim() === '') throw new ValidationError(`network policy pattern ${JSON.stringify(raw)} is invalid: use a host (example.com), a wildcard (*.example.com), an IP or a CIDR (10.0.0.0/8)`);
  const p = normaliseHost(raw);
  if (p === '*') return p;
  const slash = p.indexOf('/');
  if (slash >= 0) {
    const addr = p.slice(0, slash);
    const bits = p.slice(slash + 1);
    const family = isIP(addr);
    const max = family === 4 ? 32 : 128;
    if (family === 0 || !/^\d{1,3}$/.test(bits) || Number(bits) > max) throw new ValidationError(`network policy pattern "${raw}" is not a valid CIDR such as 10.0.0.0/8 or fd00::/8`);
    return p;
  }
  if (isIP(p) !== 0) return p;
  const name = p.startsWith('*.') ? p.slice(2) : p;
  if (name.length > 253 || !name.split('.').every((label) => HOST_LABEL.test(label))) {
    throw new ValidationError(`network policy pattern "${raw}" is invalid: use a host (example.com), a wildcard (*.example.com), an IP or a CIDR (10.0.0.0/8)`);
  }
  return p;
}

export function validatePolicy(raw: unknown): NetworkPolicy {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new ValidationError('network policy must be an object {default: "allow"|"deny", allow: [...], deny: [...]}');
  const { default: def, allow, deny, ...rest } = raw as Record<string, unknown>;
  const extra = Object.keys(rest);
  if (extra.length > 0) throw new ValidationError(`network policy has unknown field "${extra[0]}"; the fields are default, allow, deny`);
  if (def !== 'allow' && def !== 'deny') throw new ValidationError(`network policy default must be "allow" or "deny", got ${JSON.stringify(def)}`);
  const list = (value: unknown, what: string): string[] => {
    if (value === undefined) return [];
    if (!Array.isArray(value)) throw new ValidationError(`network policy ${what} must be an array of patterns`);
    if (value.length > limits.MAX_POLICY_PATTERNS) throw new ValidationError(`network policy ${what} has ${value.length} patterns; at most ${limits.MAX_POLICY_PATTERNS} are allowed`);
    return value.map(validatePattern);
  };
  return { default: def, allow: list(allow, 'allow'), deny: list(deny, 'deny') };
}

/** Does one (validated) pattern match the host (a name or an IP)? */
export function patternMatches(pattern: string, host: string): boolean {
  const h = normaliseHost(host);
  if (pattern === '*') return true;
  const slash = pattern.indexOf('/');
  if (slash >= 0) {
    const family = isIP(h);
    const net = pattern.slice(0, slash);
    const netFamily = isIP(net);
    if (family === 0 || family !== netFamily) return false;
    const list = new BlockList();
    const type = family === 4 ? 'ipv4' : 'ipv6';
    list.addSubnet(net, Number(pattern.slice(slash + 1)), type);
    return list.check(h, type);
  }
  if (isIP(pattern) !== 0) {
    if (isIP(h) !== isIP(pattern)) return false;
    if (isIP(h) === 4) return h === pattern;
    const list = new BlockList();
    list.addAddress(pattern, 'ipv6');
    return list.check(h, 'ipv6');
  }
  if (pattern.startsWith('*.')) return h.endsWith(pattern.slice(1)) && h.length > pattern.length - 1;
  return h === pattern;
}

function firstMatch(patterns: readonly string[], host: string, specificOnly = false): string | undefined {
  for (const p of patterns) {
    if (specificOnly && CATCH_ALL.has(p)) continue;
    if (patternMatches(p, host)) return p;
  }
  return undefined;
}

export function decide(host: string, global: NetworkPolicy | null, fn: NetworkPolicy | null): PolicyDecision {
  const protectedHost = isProtectedHost(host);
  if (fn !== null) {
    const denied = firstMatch(fn.deny, host);
    if (denied !== undefined) return { allowed: false, rule: denied, scope: 'function' };
    const allowed = firstMatch(fn.allow, host, protectedHost);
    if (allowed !== undefined) return { allowed: true, rule: allowed, scope: 'function' };
  }
  if (global !== null) {
    const denied = firstMatch(global.deny, host);
    if (denied !== undefined) return { allowed: false, rule: denied, scope: 'global' };
    const allowed = firstMatch(global.allow, host, protectedHost);
    if (allowed !== undefined) return { allowed: true, rule: allowed, scope: 'global' };
  }
  if (protectedHost) return { allowed: false, rule: 'protected', scope: 'global' };
  if (fn !== null) return { allowed: fn.default === 'allow', rule: 'default', scope: 'function' };
  return { allowed: (global?.default ?? 'allow') === 'allow', rule: 'default', scope: 'global' };
}
