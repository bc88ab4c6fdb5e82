import type { Change } from './reflector.ts';

// Where a function's ready pods are, from the EndpointSlices of its Service
// (fn-<name>), kept by a watch. The gateway sends each call straight to a
// ready pod's address (as Knative's activator and Fission's router do): no
// extra hop through the Service's virtual IP, and a pod that stops being ready
// (or starts terminating) leaves the rotation as soon as its slice says so.

export const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';
export const RUNTIME_PORT_NAME = 'http';

export interface EndpointSlice {
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; resourceVersion?: string };
  addressType?: string;
  ports?: Array<{ name?: string; port?: number; protocol?: string }> | null;
  endpoints?: Array<{
    addresses: string[];
    conditions?: { ready?: boolean | null; serving?: boolean | null; terminating?: boolean | null };
  }> | null;
}

/** `http://ip:port` of every endpoint of the slice that may take calls: ready and not terminating. */
export function readyOrigins(slice: EndpointSlice): string[] {
  const ports = slice.ports ?? [];
  const port = (ports.find((p) => p.name === RUNTIME_PORT_NAME) ?? (ports.length === 1 ? ports[0] : undefined))?.port;
  if (port === undefined || (slice.addressType !== undefined && slice.addressType !== 'IPv4' && slice.addressType !== 'IPv6')) return [];
  const out: string[] = [];
  for (const e of slice.endpoints ?? []) {
    // An unset `ready` means unknown, which consumers treat as ready (the API's own advice).
    if (e.conditions?.ready === false || e.conditions?.terminating === true) continue;
    const address = e.addresses[0];
    if (address === undefined) continue;
    out.push(address.includes(':') ? `http://[${address}]:${port}` : `http://${address}:${port}`);
  }
  return out;
}

/** `namespace/service` of the Service a slice belongs to, or undefined. */
export function serviceKeyOf(slice: EndpointSlice): string | undefined {
  const service = slice.metadata.labels?.[SERVICE_NAME_LABEL];
  return service === undefined ? undefined : `${slice.metadata.namespace ?? ''}/${service}`;
}

/** Ready origins per Service, with round-robin picking and waiters for a Service that has none yet. */
export class EndpointIndex {
  /** service key → slice name → origins */
  readonly #slices = new Map<string, Map<string, string[]>>();
  readonly #origins = new Map<string, string[]>();
  readonly #next = new Map<string, number>();
  readonly #sliceService = new Map<string, string>();
  readonly #waiters = new Map<string, Set<() => void>>();

  apply(change: Change<EndpointSlice>): void {
    const sliceKey = change.key;
    const previous = this.#sliceService.get(sliceKey);
    if (change.object === undefined) {
      if (previous !== undefined) this.#set(previous, sliceKey, undefined);
      this.#sliceService.delete(sliceKey);
      return;
    }
    const service = serviceKeyOf(change.object);
    if (previous !== undefined && previous !== service) this.#set(previous, sliceKey, undefined);
    if (service === undefined) {
      this.#sliceService.delete(sliceKey);
      return;
    }
    this.#sliceService.set(sliceKey, service);
    this.#set(service, sliceKey, readyOrigins(change.object));
  }

  #set(service: string, sliceKey: string, origins: string[] | undefined): void {
    let slices = this.#slices.get(service);
    if (origins === undefined) {
      slices?.delete(sliceKey);
    } else {
      if (slices === undefined) this.#slices.set(service, (slices = new Map()));
      slices.set(sliceKey, origins);
    }
    const all: string[] = [];
    for (const list of slices?.values() ?? []) for (const o of list) if (!all.includes(o)) all.push(o);
    if (all.length === 0) {
      this.#origins.delete(service);
      if (slices !== undefined && slices.size === 0) this.#slices.delete(service);
      return;
    }
    this.#origins.set(service, all);
    const waiters = this.#waiters.get(service);
    if (waiters !== undefined) {
      this.#waiters.delete(service);
      for (const wake of waiters) wake();
    }
  }

  origins(service: string): readonly string[] {
    return this.#origins.get(service) ?? [];
  }

  /** The next ready origin of the Service, round robin; undefined when it has none. */
  pick(service: string): string | undefined {
    const all = this.#origins.get(service);
    if (all === undefined || all.length === 0) return undefined;
    const i = (this.#next.get(service) ?? 0) % all.length;
    this.#next.set(service, i + 1);
    return all[i];
  }

  /** Calls `wake` once the Service has a ready origin; returns how to stop waiting. */
  whenReady(service: string, wake: () => void): () => void {
    let set = this.#waiters.get(service);
    if (set === undefined) this.#waiters.set(service, (set = new Set()));
    set.add(wake);
    return () => {
      const s = this.#waiters.get(service);
      s?.delete(wake);
      if (s !== undefined && s.size === 0) this.#waiters.delete(service);
    };
  }
}
