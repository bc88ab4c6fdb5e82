import { isIP } from 'node:net';
import { decisionOf, deniedAddress, denialMessage, listenerDenial, type Denial, type Policies } from './decision.ts';

// The decision about one outbound connection, as the egress proxy makes it for
// a function and the async callbacks make it for the gateway's own POSTs
// (async/callback-sender.ts): the name first (not resolved when denied), then
// every address it resolves to (protected ones: the machine, link-local and
// metadata, the platform's ranges, unless a rule names them), then the
// platform's own listeners. The caller dials only the addresses returned, so
// a DNS answer that changes between the check and the connection (a rebind)
// cannot swap in an address that was not checked.

/** The platform's own listeners on this machine, never reached (decision.ts listenerDenial). */
export interface ListenerGuard {
  isMachine(address: string): boolean;
  ports: readonly number[];
}

export type TargetCheck =
  | { ok: true; addresses: string[] }
  | { ok: false; reason: 'denied'; denial: Denial; message: string }
  | { ok: false; reason: 'dns'; error: unknown }
  | { ok: false; reason: 'no_address' };

/** Checks `host:port` under the policies; `lookup` resolves a name to its addresses (the system's order). */
export async function checkTarget(host: string, port: number, policies: Policies, lookup: (name: string) => Promise<string[]>, listener: ListenerGuard): Promise<TargetCheck> {
  const what = `connection to ${host}:${port}`;
  const denied = (denial: Denial): TargetCheck => ({ ok: false, reason: 'denied', denial, message: denialMessage(what, host, denial) });
  const byName = decisionOf(host, policies, port);
  if (!byName.allowed) return denied({ scope: byName.scope, rule: byName.rule, subject: host });
  let addresses: string[];
  if (isIP(host) !== 0) addresses = [host];
  else {
    try {
      addresses = await lookup(host);
    } catch (error) {
      return { ok: false, reason: 'dns', error };
    }
    if (addresses.length === 0) return { ok: false, reason: 'no_address' };
    const byAddress = deniedAddress(addresses, policies, byName, port);
    if (byAddress !== undefined) return denied(byAddress);
  }
  for (const address of addresses) {
    const l = listenerDenial(address, port, (a) => listener.isMachine(a), listener.ports);
    if (l !== undefined) return denied(l);
  }
  return { ok: true, addresses };
}
