import { BlockList, isIP } from 'node:net';
import type { NetworkPolicy } from '@fnhost/core';
import { normaliseHostText as normaliseHost } from '@fnhost/core/netpattern.ts';

// Validation of patterns and policies is core's (core/src/netpattern.ts), shared
// with the admin panel so that the form and the server apply the same rules.
export { validateHostPattern as validatePattern, validateNetworkPolicy as validatePolicy } from '@fnhost/core/netpattern.ts';

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

const CATCH_ALL = new Set(['*', '0.0.0.0/0', '::/0']);
const PROTECTED_NAMES = new Set(['metadata.google.internal', 'metadata.google.internal.', 'metadata']);

const protectedAddresses = new BlockList();
protectedAddresses.addSubnet('169.254.0.0', 16, 'ipv4');
protectedAddresses.addSubnet('fe80::', 10, 'ipv6');
protectedAddresses.addAddress('fd00:ec2::254', 'ipv6');

export function isProtectedHost(host: string): boolean {
  const h = normaliseHost(host);
  const family = isIP(h);
  if (family === 4) return protectedAddresses.check(h, 'ipv4');
  if (family === 6) return protectedAddresses.check(h, 'ipv6');
  return PROTECTED_NAMES.has(h);
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
