import type { LookupAddress } from 'node:dns';

// How the egress proxy resolves names: the system's resolver (getaddrinfo for
// connections and lookups, so /etc/hosts counts as it would for the function;
// DNS queries for the record types). Tests inject their own.

/** Record types the DNS endpoint answers; LOOKUP is getaddrinfo (what dns.lookup and connections use). */
export const DNS_TYPES = ['LOOKUP', 'A', 'AAAA', 'CNAME', 'MX', 'NS', 'SRV', 'TXT'] as const;
export type DnsType = (typeof DNS_TYPES)[number];

export interface EgressResolver {
  /** Every address of a name, in the system's order. */
  lookup(name: string): Promise<LookupAddress[]>;
  /** The records of one type, in the shape node:dns's resolve<Type> gives them. */
  resolve(name: string, type: Exclude<DnsType, 'LOOKUP'>): Promise<unknown[]>;
}

export function systemResolver(): EgressResolver {
  const dns = process.getBuiltinModule('node:dns/promises');
  const resolver = new dns.Resolver();
  return {
    lookup: (name) => dns.lookup(name, { all: true, order: 'verbatim' }),
    resolve: (name, type) => resolver.resolve(name, type) as Promise<unknown[]>,
  };
}
