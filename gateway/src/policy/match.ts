import { BlockList } from 'node:net';
import type { NetworkPolicy } from '@fnhost/core';
import { splitPatternPort } from '@fnhost/core/netpattern.ts';
import { LOOPBACK_SPELLINGS, canonicalCidr, canonicalHost, canonicalIp, isLoopbackClass } from './address.ts';

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
//   protected addresses (the machine itself: the loopback class and the host's own
//   addresses; link-local and cloud metadata; the platform's ranges: denied) >
//   function default > global default.
// A protected address is allowed only by an allow pattern that names it
// specifically: catch-alls (`*`, `0.0.0.0/0`, `::/0`) do not count, and neither
// does an allowed name that resolves to it (egress/decision.ts).
// Hosts and patterns are compared as canonical addresses (address.ts), and a
// deny rule for any loopback address denies the whole loopback class.

export interface PolicyDecision {
  allowed: boolean;
  /** The pattern that decided, or `default`, or a protected class: `host`, `protected`, `platform`. */
  rule: string;
  scope: 'global' | 'function';
}

/**
 * Addresses protected beyond the built-in ones (the loopback class, link-local, metadata): the
 * rule that protects a host, or undefined. PlatformRanges (the platform's CIDRs) and the
 * machine's own interface addresses (policy/machine.ts) are ones.
 */
export interface Protection {
  ruleFor(host: string): string | undefined;
}

const CATCH_ALL = new Set(['*', '0.0.0.0/0', '::/0']);
const PROTECTED_NAMES = new Set(['metadata.google.internal', 'metadata.google.internal.', 'metadata']);

const protectedAddresses = new BlockList();
protectedAddresses.addSubnet('169.254.0.0', 16, 'ipv4');
protectedAddresses.addSubnet('fe80::', 10, 'ipv6');
protectedAddresses.addAddress('fd00:ec2::254', 'ipv6');

/**
 * The platform's own address ranges (FNHOST_EGRESS_PLATFORM_CIDRS: in cluster mode
 * the pod and Service CIDRs, the nodes, the API server): protected as link-local
 * is, under the rule name `platform`. A function reaches one only through an allow
 * pattern that names it specifically.
 */
export class PlatformRanges {
  readonly cidrs: readonly string[];
  readonly #list = new BlockList();
  constructor(cidrs: readonly string[]) {
    this.cidrs = cidrs;
    for (const cidr of cidrs) {
      const parsed = canonicalCidr(cidr.includes('/') ? cidr : `${cidr}/${cidr.includes(':') ? 128 : 32}`);
      const bits = parsed === null ? 0 : parsed[0].kind() === 'ipv4' ? 32 : 128;
      if (parsed === null || !Number.isInteger(parsed[1]) || parsed[1] < 0 || parsed[1] > bits) {
        throw new Error(`${JSON.stringify(cidr)} is not a CIDR or an IP address`);
      }
      this.#list.addSubnet(parsed[0].toString(), parsed[1], parsed[0].kind());
    }
  }
  has(host: string): boolean {
    const ip = canonicalIp(host);
    return ip !== null && this.#list.check(ip.toString(), ip.kind());
  }
  ruleFor(host: string): string | undefined {
    return this.has(host) ? 'platform' : undefined;
  }
}

/** The rule that protects a host with no configuration at all: `host` for the loopback class, `protected` for link-local and metadata. */
export function builtInProtection(host: string): string | undefined {
  const ip = canonicalIp(host);
  if (ip !== null && isLoopbackClass(ip)) return 'host';
  return isProtectedHost(host) ? 'protected' : undefined;
}

export function isProtectedHost(host: string): boolean {
  const ip = canonicalIp(host);
  if (ip === null) return PROTECTED_NAMES.has(canonicalHost(host));
  return protectedAddresses.check(ip.toString(), ip.kind());
}

/**
 * Does one (validated) pattern match the host (a name or an IP) and port? Both are compared in
 * canonical form (address.ts). A pattern with a port (`127.0.0.1:3000`) matches that port only;
 * asked with no port (a DNS question, which has none), it matches as an allow would need it to:
 * `port` undefined and `portless` 'any' (allow: resolving a name allowed on one port is allowed),
 * 'none' (deny: a deny of one port does not deny resolving the name).
 */
export function patternMatches(rawPattern: string, host: string, port?: number, portless: 'any' | 'none' = 'any'): boolean {
  const [pattern, patternPort] = splitPatternPort(rawPattern);
  if (patternPort !== undefined && (port === undefined ? portless === 'none' : port !== patternPort)) return false;
  if (pattern === '*') return true;
  const ip = canonicalIp(host);
  if (pattern.includes('/')) {
    const cidr = canonicalCidr(pattern);
    return ip !== null && cidr !== null && ip.kind() === cidr[0].kind() && ip.match(cidr as [typeof ip, number]);
  }
  const patternIp = canonicalIp(pattern);
  if (patternIp !== null) return ip !== null && ip.kind() === patternIp.kind() && ip.toString() === patternIp.toString();
  if (ip !== null) return false;
  const h = canonicalHost(host);
  if (pattern.startsWith('*.')) return h.endsWith(pattern.slice(1)) && h.length > pattern.length - 1;
  return h === pattern;
}

/**
 * A deny pattern's match. The loopback class is one destination, so a deny
 * rule that matches any of its members (127.0.0.0/8, ::1, 0.0.0.0, ::)
 * denies every member: denying 127.0.0.0/8 denies 0.0.0.0 and ::1 too.
 */
function denies(pattern: string, host: string, port: number | undefined): boolean {
  if (patternMatches(pattern, host, port, 'none')) return true;
  const ip = canonicalIp(host);
  return ip !== null && isLoopbackClass(ip) && LOOPBACK_SPELLINGS.some((spelling) => patternMatches(pattern, spelling, port, 'none'));
}

function firstAllow(patterns: readonly string[], host: string, port: number | undefined, specificOnly: boolean): string | undefined {
  return patterns.find((p) => !(specificOnly && CATCH_ALL.has(p)) && patternMatches(p, host, port, 'any'));
}

function firstDeny(patterns: readonly string[], host: string, port: number | undefined): string | undefined {
  return patterns.find((p) => denies(p, host, port));
}

/** The decision about a host (and the port, when known: patterns may name one) under the global and the function's policy. */
export function decide(host: string, global: NetworkPolicy | null, fn: NetworkPolicy | null, protection?: Protection, port?: number): PolicyDecision {
  const protectedBy = builtInProtection(host) ?? protection?.ruleFor(host);
  const protectedHost = protectedBy !== undefined;
  if (fn !== null) {
    const denied = firstDeny(fn.deny, host, port);
    if (denied !== undefined) return { allowed: false, rule: denied, scope: 'function' };
    const allowed = firstAllow(fn.allow, host, port, protectedHost);
    if (allowed !== undefined) return { allowed: true, rule: allowed, scope: 'function' };
  }
  if (global !== null) {
    const denied = firstDeny(global.deny, host, port);
    if (denied !== undefined) return { allowed: false, rule: denied, scope: 'global' };
    const allowed = firstAllow(global.allow, host, port, protectedHost);
    if (allowed !== undefined) return { allowed: true, rule: allowed, scope: 'global' };
  }
  if (protectedHost) return { allowed: false, rule: protectedBy, scope: 'global' };
  if (fn !== null) return { allowed: fn.default === 'allow', rule: 'default', scope: 'function' };
  return { allowed: (global?.default ?? 'allow') === 'allow', rule: 'default', scope: 'global' };
}
