import type { NetworkPolicy } from '@fnhost/core';
import { canonicalIp } from '../policy/address.ts';
import { decide, type PolicyDecision, type Protection } from '../policy/match.ts';

// What the egress proxy asks the network policies (policy/match.ts decides; this
// file only says what is asked): first the name a function gave, before any DNS
// query is made for it, then every address the name resolves to.
//
// Allowing a name allows what it resolves to at that moment (the proxy dials
// exactly the addresses it checked, so there is no rebinding window): an address
// that no rule names takes the name's allow instead of the default. An address
// that a deny rule matches, or that is protected (the machine, link-local,
// metadata, the platform's ranges), is refused all the same: one denied address
// denies the connection, so a name cannot smuggle a denied address in among
// allowed ones, and a name that an outsider's DNS answers cannot open the machine.

export interface PolicySource {
  get(scope: string): Promise<NetworkPolicy | null>;
  /** Changes written through this gateway (open connections are checked again). */
  onChange?(listener: (scope: string) => Promise<void> | void): void;
}

export interface Policies {
  global: NetworkPolicy | null;
  fn: NetworkPolicy | null;
  /** What is protected beyond the built-in classes: the machine's addresses, the platform's ranges. */
  platform?: Protection;
}

export interface Denial {
  scope: 'global' | 'function';
  /** The pattern that denied, or `default`, `host`, `protected`, `platform` or `listener`. */
  rule: string;
  /** The name or address that was denied. */
  subject: string;
}

export async function policiesFor(source: PolicySource, functionId: string, platform?: Protection): Promise<Policies> {
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
const decided = new WeakMap<object, WeakMap<object, WeakMap<object, Map<string, PolicyDecision>>>>();
/** Stands for "no policy" (null) as a WeakMap key. */
const NO_POLICY = {};
/** Subjects remembered per pair of policies; the map starts over when full. */
export const MAX_DECISIONS_PER_POLICY = 1024;

function decisionsFor(policies: Policies): Map<string, PolicyDecision> {
  // The protection is one object per reading of the machine's addresses (a change is a new one), a key like the policies.
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

/** The policies' decision about one name or address on its own, at a port when known (remembered, see `decided`). */
export function decisionOf(subject: string, policies: Policies, port?: number): PolicyDecision {
  const known = decisionsFor(policies);
  const key = port === undefined ? subject : `${subject} ${port}`;
  const seen = known.get(key);
  if (seen !== undefined) return seen;
  const d = Object.freeze(decide(subject, policies.global, policies.fn, policies.platform, port));
  if (known.size >= MAX_DECISIONS_PER_POLICY) known.clear();
  known.set(key, d);
  return d;
}

/**
 * An address reached through a name: the address's own decision, except that an address no rule
 * names (it fell to a default) takes the allow of the name when a rule allowed the name.
 */
export function addressDecision(address: string, policies: Policies, byName?: PolicyDecision, port?: number): PolicyDecision {
  const own = decisionOf(address, policies, port);
  if (own.rule === 'default' && !own.allowed && byName !== undefined && byName.allowed && byName.rule !== 'default') return byName;
  return own;
}

const denial = (d: PolicyDecision, subject: string): Denial | undefined => (d.allowed ? undefined : Object.freeze({ scope: d.scope, rule: d.rule, subject }));

/** The denial of one name or address, or undefined when the policies allow it. */
export function denialOf(subject: string, policies: Policies, port?: number): Denial | undefined {
  return denial(decisionOf(subject, policies, port), subject);
}

/** The first denied address among those a name (allowed as `byName` says) resolved to. */
export function deniedAddress(addresses: readonly string[], policies: Policies, byName?: PolicyDecision, port?: number): Denial | undefined {
  for (const address of new Set(addresses)) {
    const d = denial(addressDecision(address, policies, byName, port), address);
    if (d !== undefined) return d;
  }
  return undefined;
}

/**
 * The platform's own listeners (the admin panel, the gateway's main listener with the internal
 * and management APIs, the egress proxy's TCP listener) are never reached through the egress
 * path, whatever a policy allows: a port of theirs on an address of the machine.
 */
export function listenerDenial(address: string, port: number, isMachine: (address: string) => boolean, ports: readonly number[]): Denial | undefined {
  if (!ports.includes(port)) return undefined;
  const ip = canonicalIp(address);
  if (ip === null) return undefined;
  const range = ip.range();
  const machine = range === 'loopback' || range === 'unspecified' || (ip.kind() === 'ipv4' && ip.toString().startsWith('0.')) || isMachine(address);
  return machine ? Object.freeze({ scope: 'global' as const, rule: 'listener', subject: address }) : undefined;
}

/** What `policy:check` answers: the decision about a connection and why, rule by rule. */
export interface Explanation {
  allowed: boolean;
  scope: 'global' | 'function';
  rule: string;
  /** The name or address that decided (for a denial, the one denied). */
  subject: string;
  /** The name's own decision, for a name. */
  name?: { allowed: boolean; scope: 'global' | 'function'; rule: string };
  /** Each address the name resolved to (or the address given) and its decision. */
  addresses: Array<{ address: string; allowed: boolean; scope: 'global' | 'function'; rule: string }>;
}

/** The explanation of a connection to `host` (a name resolved to `addresses`, or an address with `addresses` [host]). */
export function explain(host: string, addresses: readonly string[] | undefined, policies: Policies, listener?: { port: number; isMachine: (a: string) => boolean; ports: readonly number[] }): Explanation {
  const isName = canonicalIp(host) === null;
  const port = listener?.port;
  const byName = decisionOf(host, policies, port);
  if (isName && !byName.allowed) return { allowed: false, scope: byName.scope, rule: byName.rule, subject: host, name: { ...byName }, addresses: [] };
  const list = isName ? [...new Set(addresses ?? [])] : [host];
  const each = list.map((address) => {
    const l = listener === undefined ? undefined : listenerDenial(address, listener.port, listener.isMachine, listener.ports);
    const d = l !== undefined ? { allowed: false, scope: l.scope, rule: l.rule } : addressDecision(address, policies, isName ? byName : undefined, port);
    return { address, allowed: d.allowed, scope: d.scope, rule: d.rule };
  });
  const denied = each.find((a) => !a.allowed);
  if (denied !== undefined) return { allowed: false, scope: denied.scope, rule: denied.rule, subject: denied.address, ...(isName ? { name: { ...byName } } : {}), addresses: each };
  const decided = isName ? byName : each[0]!;
  return { allowed: true, scope: decided.scope, rule: decided.rule, subject: host, ...(isName ? { name: { ...byName } } : {}), addresses: each };
}
/** `connection to db.example:5432 blocked by network policy: it resolves to 10.0.0.5 (global rule 10.0.0.0/8)` */
export function denialMessage(what: string, host: string, denial: Denial): string {
  if (denial.rule === 'listener') return `${what} blocked by network policy: port ${what.slice(what.lastIndexOf(':') + 1)} of ${denial.subject} is the platform's own listener, never reachable from a function (${denial.scope} rule listener)`;
  const via = denial.subject === host ? '' : `: it resolves to ${denial.subject}`;
  return `${what} blocked by network policy${via} (${denial.scope} rule ${denial.rule})`;
}
