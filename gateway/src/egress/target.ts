import { isIP } from 'node:net';

// The pure parts of the egress proxy's requests: the CONNECT target and the
// Proxy-Authorization credential. Each bad value is refused with a message that
// names it (cut to a printable length), never with the credential.

export interface ConnectTarget {
  /** A host name (lower case, no trailing dot) or an IP address (IPv6 without brackets). */
  host: string;
  port: number;
}

export class TargetError extends Error {
  override name = 'TargetError';
}

const MAX_HOST_LENGTH = 253;
const LABEL = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/;

const shown = (raw: string) => JSON.stringify(raw.length > 100 ? raw.slice(0, 100) + '…' : raw);

/** `host:port` or `[v6]:port` (RFC 9110 authority-form), port 1-65535. */
export function parseConnectTarget(raw: string | undefined): ConnectTarget {
  if (raw === undefined || raw === '') throw new TargetError('CONNECT needs a target host:port');
  let host: string;
  let portText: string;
  if (raw.startsWith('[')) {
    const close = raw.indexOf(']');
    if (close < 0 || raw[close + 1] !== ':') throw new TargetError(`CONNECT target ${shown(raw)} must be [IPv6]:port`);
    host = raw.slice(1, close);
    portText = raw.slice(close + 2);
    if (isIP(host) !== 6) throw new TargetError(`CONNECT target ${shown(raw)}: ${shown(host)} is not an IPv6 address`);
  } else {
    const colon = raw.lastIndexOf(':');
    if (colon <= 0) throw new TargetError(`CONNECT target ${shown(raw)} must be host:port`);
    host = raw.slice(0, colon);
    portText = raw.slice(colon + 1);
    if (host.includes(':')) throw new TargetError(`CONNECT target ${shown(raw)}: write an IPv6 address in brackets, [addr]:port`);
    host = validHostName(host, raw);
  }
  return { host, port: parsePort(portText, raw) };
}

export function parsePort(text: string, raw: string = text): number {
  if (!/^\d{1,5}$/.test(text)) throw new TargetError(`CONNECT target ${shown(raw)}: the port must be a number from 1 to 65535`);
  const port = Number(text);
  if (port < 1 || port > 65535) throw new TargetError(`CONNECT target ${shown(raw)}: port ${port} is out of range 1-65535`);
  return port;
}

/** An IPv4 address or a DNS name (letters, digits, `-`, `_` for SRV-style labels), lower-cased, without a trailing dot. */
export function validHostName(host: string, raw: string = host): string {
  if (isIP(host) === 4) return host;
  const name = host.toLowerCase().replace(/\.$/, '');
  if (name === '' || name.length > MAX_HOST_LENGTH || !name.split('.').every((label) => LABEL.test(label))) {
    throw new TargetError(`${shown(raw)} is not a host name or an IP address`);
  }
  return name;
}

/**
 * The runtime's credential from `Proxy-Authorization`: `Bearer <token>`, or
 * `Basic base64(<anything>:<token>)` (what a proxy URL `http://fn:<token>@host:port`
 * makes curl and most clients send). Undefined when absent or malformed.
 */
export function proxyCredential(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const space = header.indexOf(' ');
  if (space < 0) return undefined;
  const scheme = header.slice(0, space).toLowerCase();
  const value = header.slice(space + 1).trim();
  if (value === '') return undefined;
  if (scheme === 'bearer') return value;
  if (scheme === 'basic') {
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    return colon < 0 || colon === decoded.length - 1 ? undefined : decoded.slice(colon + 1);
  }
  return undefined;
}
