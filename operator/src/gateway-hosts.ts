import { isIP } from 'node:net';
import type { Settings } from './types.ts';

// Function pods get no DNS (their NetworkPolicy lets them reach the gateway's pods
// only), so the names in the gateway and egress-proxy URLs they are given are
// resolved here, once at the operator's start, and written into the pods'
// /etc/hosts. A Service's cluster IP lasts as long as the Service; a reinstall
// that makes a new one restarts the operator too.

export type Lookup = (host: string) => Promise<string>;

/** The host names of the URLs function pods are given, without those that are addresses already. */
export function gatewayHostNames(settings: Pick<Settings, 'gatewayUrl' | 'egressProxyUrl'>): string[] {
  const hosts = [settings.gatewayUrl, settings.egressProxyUrl]
    .filter((u): u is string => u !== undefined)
    .map((u) => new URL(u).hostname.replace(/^\[|\]$/g, ''));
  return [...new Set(hosts.filter((h) => isIP(h) === 0))];
}

/** hostAliases entries, one per address, for the names that resolved; `failed` names those that did not. */
export async function resolveGatewayHostAliases(
  settings: Pick<Settings, 'gatewayUrl' | 'egressProxyUrl'>,
  lookup: Lookup,
): Promise<{ aliases: Array<{ ip: string; hostnames: string[] }>; failed: Array<{ host: string; error: string }> }> {
  const byIp = new Map<string, string[]>();
  const failed: Array<{ host: string; error: string }> = [];
  for (const host of gatewayHostNames(settings)) {
    try {
      const ip = await lookup(host);
      byIp.set(ip, [...(byIp.get(ip) ?? []), host]);
    } catch (err) {
      failed.push({ host, error: (err as Error).message });
    }
  }
  return { aliases: [...byIp].map(([ip, hostnames]) => ({ ip, hostnames })), failed };
}
