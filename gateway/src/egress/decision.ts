import type { NetworkPolicy } from '@fnhost/core';
import { decide, type PlatformRanges } from '../policy/match.ts';

// What the egress proxy asks the network policies (policy/match.ts decides; this
// file only says what is asked): first the name a function gave, before any DNS
// query is made for it, then every address the name resolves to. One denied
// address denies the connection, so a name cannot smuggle a denied address in
// among allowed ones.

export interface PolicySource {
  get(scope: string): Promise<NetworkPolicy | null>;
  /** Changes written through this gateway (open connections are checked again). */
  onChange?(listener: (scope: string) => Promise<void> | void): void;
}

export interface Policies {
  global: NetworkPolicy | null;
  fn: NetworkPolicy | null;
  /** The platform's own ranges (FNHOST_EGRESS_PLATFORM_CIDRS), protected. */
  platform?: PlatformRanges;
}

export interface Denial {
  scope: 'global' | 'function';
  /** The pattern that denied, or `default`, `protected` or `platform`. */
  rule: string;
  /** The name or address that was denied. */
  subject: string;
}

export async function policiesFor(source: PolicySource, functionId: string, platform?: PlatformRanges): Promise<Policies> {
  const [global, fn] = await Promise.all([source.get('global'), source.get(functionId)]);
  return { global, fn, platform };
}

/** The denial of one name or address, or undefined when the policies allow it. */
export function denialOf(subject: string, policies: Policies): Denial | undefined {
  const d = decide(subject, policies.global, policies.fn, policies.platform);
  return d.allowed ? undefined : { scope: d.scope, rule: d.rule, subject };
}

/** The first denied address among those a name resolved to. */
export function deniedAddress(addresses: readonly string[], policies: Policies): Denial | undefined {
  for (const address of new Set(addresses)) {
    const denial = denialOf(address, policies);
    if (denial !== undefined) return denial;
  }
  return undefined;
}

/** `connection to db.example:5432 blocked by network policy: it resolves to 10.0.0.5 (global rule 10.0.0.0/8)` */
export function denialMessage(what: string, host: string, denial: Denial): string {
  const via = denial.subject === host ? '' : `: it resolves to ${denial.subject}`;
  return `${what} blocked by network policy${via} (${denial.scope} rule ${denial.rule})`;
}
