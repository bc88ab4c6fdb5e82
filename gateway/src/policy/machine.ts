import type { NetworkInterfaceInfo } from 'node:os';
import { canonicalIp } from './address.ts';
import type { PlatformRanges, Protection } from './match.ts';

// The machine itself, protected by default (docs/gateway.md "Network policies"): besides the
// loopback class (built into match.ts), every address of the host's own interfaces, since a
// server bound to 0.0.0.0 or :: answers on each of them as it does on 127.0.0.1; in cluster
// mode also the node's addresses (FNHOST_EGRESS_NODE_ADDRESSES) and the platform's ranges.
// A function reaches one only through an allow pattern that names it.
//
// Interfaces come and go (a VPN, a container bridge, DHCP): the addresses are read again when
// the last reading is older than REFRESH_MS, at the decision that finds it so (a read of
// os.networkInterfaces() is a getifaddrs call, a few microseconds), never on a timer of its own.

/** How old the reading of the interfaces may be when a decision uses it. */
export const MACHINE_REFRESH_MS = 2_000;

/** One reading: the machine's addresses (canonical) and the platform's ranges. Immutable: a change is a new object. */
export class MachineProtection implements Protection {
  readonly addresses: ReadonlySet<string>;
  readonly platform: PlatformRanges | undefined;
  constructor(addresses: Iterable<string>, platform?: PlatformRanges) {
    const canonical = new Set<string>();
    for (const a of addresses) {
      const ip = canonicalIp(a);
      if (ip !== null) canonical.add(ip.toString());
    }
    this.addresses = canonical;
    this.platform = platform;
  }
  /** `host` for an address of the machine, `platform` for one in the platform's ranges. */
  ruleFor(host: string): string | undefined {
    const ip = canonicalIp(host);
    if (ip !== null && this.addresses.has(ip.toString())) return 'host';
    return this.platform?.ruleFor(host);
  }
  /** Whether an address is one of this machine's (the loopback class is match.ts's). */
  isMachine(host: string): boolean {
    const ip = canonicalIp(host);
    return ip !== null && this.addresses.has(ip.toString());
  }
  sameAs(addresses: ReadonlySet<string>): boolean {
    if (addresses.size !== this.addresses.size) return false;
    for (const a of addresses) if (!this.addresses.has(a)) return false;
    return true;
  }
}

/** Every address of the interfaces os.networkInterfaces() lists (zones dropped by canonicalIp). */
export function interfaceAddresses(interfaces: NodeJS.Dict<NetworkInterfaceInfo[]>): string[] {
  const out: string[] = [];
  for (const list of Object.values(interfaces)) for (const info of list ?? []) out.push(info.address);
  return out;
}

/** The machine's protection, kept current: a new MachineProtection when the interfaces changed, the same object otherwise. */
export class MachineAddresses {
  readonly #read: () => NodeJS.Dict<NetworkInterfaceInfo[]>;
  readonly #now: () => number;
  readonly #extra: readonly string[];
  readonly #platform: PlatformRanges | undefined;
  #current: MachineProtection;
  #readAt: number;
  constructor(options: { platform?: PlatformRanges; extra?: readonly string[]; interfaces?: () => NodeJS.Dict<NetworkInterfaceInfo[]>; now?: () => number }) {
    this.#read = options.interfaces ?? (() => process.getBuiltinModule('node:os').networkInterfaces());
    this.#now = options.now ?? Date.now;
    this.#extra = options.extra ?? [];
    this.#platform = options.platform;
    this.#current = new MachineProtection(this.#reading(), this.#platform);
    this.#readAt = this.#now();
  }
  #reading(): string[] {
    let found: string[];
    try {
      found = interfaceAddresses(this.#read());
    } catch {
      // A failed read keeps the last one rather than opening the machine.
      return [...(this.#current?.addresses ?? [])];
    }
    return [...found, ...this.#extra];
  }
  current(): MachineProtection {
    const t = this.#now();
    if (t - this.#readAt < MACHINE_REFRESH_MS) return this.#current;
    this.#readAt = t;
    const next = new MachineProtection(this.#reading(), this.#platform);
    if (!next.sameAs(this.#current.addresses)) this.#current = next;
    return this.#current;
  }
}
