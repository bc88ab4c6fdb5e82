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

/**
 * Decisions already made, by the policy objects they were made under, then by subject: a
 * function's connections go to the same few names and addresses, and deciding one parses the
 * subject and every pattern again (measured: a tenth of the egress proxy's CPU per new
 * connection, bench/egress.ts). A policy source hands out snapshots that a change replaces and
 * never edits (PolicyCache: the object of the write; a shared one reads new objects each time),
 * so a change is a new key and no decision outlives its policy.
 */
const decided = new WeakMap<object, WeakMap<object, WeakMap<object, Map<string, Denial | undefined>>>>();
/** Stands for "no policy" (null) as a WeakMap key. */
const NO_POLICY = {};
/** Subjects remembered per pair of policies; the map starts over when full. */
export const MAX_DECISIONS_PER_POLICY = 1024;

function decisionsFor(policies: Policies): Map<string, Denial | undefined> {
  // The platform's ranges are one object per gateway (its configuration), a key like the policies.
  const p = policies.platform ?? NO_POLICY;
  const g = policies.global ?? NO_POLICY;
  const f = policies.fn ?? NO_POLICY;
  let byGlobal = decided.get(p);
  if (byGlobal === undefined) decided.set(p, (byGlobal = new WeakMap()));
  let byFunction = byGlobal.get(g);
  if (byFunction === undefined) byGlobal.set(g, (byFunction = new WeakMap()));
  let bySubject = byFunction.get(f);
  if (bySubject === undefined) byFunction.set(f, (bySubject = new Map()));
  return bySubject;
}

/** The denial of one name or address, or undefined when the policies allow it. */
export function denialOf(subject: string, policies: Policies): Denial | undefined {
  const known = decisionsFor(policies);
  if (known.has(subject)) return known.get(subject);
  const d = decide(subject, policies.global, policies.fn, policies.platform);
  const denial: Denial | undefined = d.allowed ? undefined : Object.freeze({ scope: d.scope, rule: d.rule, subject });
  if (known.size >= MAX_DECISIONS_PER_POLICY) known.clear();
  known.set(subject, denial);
  return denial;
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
