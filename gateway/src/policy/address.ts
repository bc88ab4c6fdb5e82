import ipaddr from 'ipaddr.js';
import { normaliseHostText } from '@fnhost/core/netpattern.ts';

// Canonical addresses for the policy matcher. One destination has many
// spellings: the WHATWG URL parser turns `127.1`, `0x7f.1`, `0177.0.0.1`
// and `2130706433` into 127.0.0.1, and IPv6 can carry an IPv4 address
// (`::ffff:127.0.0.1` = `[::ffff:7f00:1]`, which the kernel connects to
// 127.0.0.1). A rule must match the destination, not the spelling, so both
// the host and the pattern are brought to one form before they are compared.
//
// Parsing is ipaddr.js's (what Express's proxy-addr uses): it reads every
// IPv4 form inet_aton and the URL parser accept (hex, octal, 1 to 4 parts)
// and IPv6 with an embedded dotted quad.

/** IPv6 ranges whose last 32 bits are an IPv4 address the packet goes to. */
const EMBEDS_IPV4 = new Set(['ipv4Mapped', 'rfc6145', 'rfc6052']);

function withoutZone(text: string): string {
  const zone = text.indexOf('%');
  return zone < 0 ? text : text.slice(0, zone);
}

function lastFour(address: ipaddr.IPv6): ipaddr.IPv4 {
  const bytes = address.toByteArray();
  return new ipaddr.IPv4(bytes.slice(12));
}

/** An IPv4-compatible address (::a.b.c.d, deprecated by RFC 4291 but still parsed): the first 96 bits zero, not :: or ::1. */
function isIpv4Compatible(address: ipaddr.IPv6): boolean {
  const p = address.parts;
  return p[0] === 0 && p[1] === 0 && p[2] === 0 && p[3] === 0 && p[4] === 0 && p[5] === 0 && (p[6] !== 0 || p[7]! > 1);
}

/**
 * The address an IP literal names, in one spelling: IPv4 as a dotted quad,
 * IPv6 in RFC 5952 form without a zone, IPv6 that carries an IPv4 address
 * (mapped, compatible, translated, NAT64 64:ff9b::/96) as that IPv4. Null
 * for a host name.
 */
export function canonicalIp(host: string): ipaddr.IPv4 | ipaddr.IPv6 | null {
  const text = withoutZone(normaliseHostText(host));
  if (!ipaddr.isValid(text)) return null;
  const address = ipaddr.parse(text);
  if (address.kind() === 'ipv4') return address;
  const v6 = address as ipaddr.IPv6;
  if (EMBEDS_IPV4.has(v6.range()) || isIpv4Compatible(v6)) return lastFour(v6);
  return v6;
}

/** The host as the matcher compares it: a canonical address, or the lower-cased name without a trailing dot. */
export function canonicalHost(host: string): string {
  const ip = canonicalIp(host);
  return ip === null ? normaliseHostText(host) : ip.toString();
}

/**
 * 0.0.0.0/8 and :: (a connection to the unspecified address goes to this
 * machine), 127.0.0.0/8 and ::1. They are one destination, the machine's own
 * loopback: a server bound to :: answers on ::1 and 127.0.0.1 alike.
 */
export function isLoopbackClass(ip: ipaddr.IPv4 | ipaddr.IPv6): boolean {
  const range = ip.range();
  if (ip.kind() === 'ipv4') return range === 'loopback' || (ip as ipaddr.IPv4).octets[0] === 0;
  return range === 'loopback' || range === 'unspecified';
}

/** One spelling of each member of the loopback class, against which a deny rule is tried for any of them. */
export const LOOPBACK_SPELLINGS: readonly string[] = ['127.0.0.1', '::1', '0.0.0.0', '::'];

/** A CIDR pattern's network and prefix length, IPv6 nets inside an IPv4-carrying /96 turned into IPv4 nets. */
export function canonicalCidr(pattern: string): [ipaddr.IPv4 | ipaddr.IPv6, number] | null {
  const slash = pattern.indexOf('/');
  const net = canonicalIp(pattern.slice(0, slash));
  const bits = Number(pattern.slice(slash + 1));
  if (net === null || !Number.isInteger(bits)) return null;
  const text = withoutZone(normaliseHostText(pattern.slice(0, slash)));
  if (pattern.includes(':') && net.kind() === 'ipv4') {
    // ::ffff:127.0.0.0/104 is 127.0.0.0/8; a shorter prefix spans more than the IPv4 space and stays IPv6.
    return bits >= 96 ? [net, bits - 96] : [ipaddr.IPv6.parse(text.includes(':') ? text : `::ffff:${text}`), bits];
  }
  return [net, bits];
}
