import type { Change } from './reflector.ts';

// Where a function's ready pods are, from the EndpointSlices of its Service
// (fn-<name>), kept by a watch. The gateway sends each call straight to a
// ready pod's address (as Knative's activator and Fission's router do): no
// extra hop through the Service's virtual IP, and a pod that stops being ready
// (or starts terminating) leaves the rotation as soon as its slice says so.
// The index also keeps each Service's *starting* pods (an address, not ready
// yet, not terminating), which the executor probes itself while calls wait.

export const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';
export const RUNTIME_PORT_NAME = 'http';

export interface EndpointSlice {
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; resourceVersion?: string };
  addressType?: string;
  ports?: Array<{ name?: string; port?: number; protocol?: string }> | null;
  endpoints?: Array<{
    addresses: string[];
    conditions?: { ready?: boolean | null; serving?: boolean | null; terminating?: boolean | null };
    /** The pod behind the endpoint (the load watch names it in the Function's status: load-watch.ts). */
    targetRef?: { kind?: string; name?: string } | null;
  }> | null;
}

/** The runtime port of a slice (named `http`, or its only port), or undefined when it has none or no IP addresses. */
function runtimePort(slice: EndpointSlice): number | undefined {
  const ports = slice.ports ?? [];
  const port = (ports.find((p) => p.name === RUNTIME_PORT_NAME) ?? (ports.length === 1 ? ports[0] : undefined))?.port;
  if (slice.addressType !== undefined && slice.addressType !== 'IPv4' && slice.addressType !== 'IPv6') return undefined;
  return port;
}

type SliceEndpoint = NonNullable<EndpointSlice['endpoints']>[number];

function originsWhere(slice: EndpointSlice, take: (e: SliceEndpoint) => boolean): string[] {
  const port = runtimePort(slice);
  if (port === undefined) return [];
  const out: string[] = [];
  for (const e of slice.endpoints ?? []) {
    if (!take(e)) continue;
    const address = e.addresses[0];
    if (address === undefined) continue;
    out.push(address.includes(':') ? `http://[${address}]:${port}` : `http://${address}:${port}`);
  }
  return out;
}

/** `http://ip:port` of every endpoint of the slice that may take calls: ready and not terminating. */
export function readyOrigins(slice: EndpointSlice): string[] {
  // An unset `ready` means unknown, which consumers treat as ready (the API's own advice).
  return originsWhere(slice, (e) => e.conditions?.ready !== false && e.conditions?.terminating !== true);
}

/**
 * `http://ip:port` of every endpoint of the slice that is starting: it has an
 * address, `ready` is explicitly false and it is not terminating. The
 * EndpointSlice controller lists a pod, not ready, as soon as it has an IP,
 * long before the kubelet's readiness probe passes; the gateway probes these
 * itself while calls are held (ClusterExecutor). A pod that was ready and failed its
 * readiness probe looks the same, which is harmless: it is only used if its
 * /healthz answers 200 to the gateway.
 */
export function startingOrigins(slice: EndpointSlice): string[] {
  return originsWhere(slice, (e) => e.conditions?.ready === false && e.conditions?.terminating !== true);
}

/** `http://ip:port` → pod name of the slice's starting endpoints whose targetRef names a Pod. */
export function startingPodNames(slice: EndpointSlice): Map<string, string> {
  const out = new Map<string, string>();
  const port = runtimePort(slice);
  if (port === undefined) return out;
  for (const e of slice.endpoints ?? []) {
    const address = e.addresses[0];
    if (address === undefined || e.targetRef?.kind !== 'Pod' || typeof e.targetRef.name !== 'string') continue;
    if (e.conditions?.ready !== false || e.conditions?.terminating === true) continue;
    out.set(address.includes(':') ? `http://[${address}]:${port}` : `http://${address}:${port}`, e.targetRef.name);
  }
  return out;
}

/** `namespace/service` of the Service a slice belongs to, or undefined. */
export function serviceKeyOf(slice: EndpointSlice): string | undefined {
  const service = slice.metadata.labels?.[SERVICE_NAME_LABEL];
  return service === undefined ? undefined : `${slice.metadata.namespace ?? ''}/${service}`;
}

/**
 * Ready and starting origins per Service, with round-robin picking, waiters
 * for a Service that has no ready origin yet, and listeners told of every
 * change of a Service's origins (the executor's probers follow them).
 */
export class EndpointIndex {
  /** service key → slice name → its origins */
  readonly #slices = new Map<string, Map<string, { ready: string[]; starting: string[]; pods?: Map<string, string> }>>();
  readonly #origins = new Map<string, string[]>();
  readonly #starting = new Map<string, string[]>();
  readonly #next = new Map<string, number>();
  readonly #sliceService = new Map<string, string>();
  readonly #waiters = new Map<string, Set<() => void>>();
  readonly #listeners = new Set<(service: string) => void>();

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
    this.#set(service, sliceKey, { ready: readyOrigins(change.object), starting: startingOrigins(change.object), pods: startingPodNames(change.object) });
  }

  #set(service: string, sliceKey: string, origins: { ready: string[]; starting: string[]; pods?: Map<string, string> } | undefined): void {
    let slices = this.#slices.get(service);
    if (origins === undefined) {
      slices?.delete(sliceKey);
    } else {
      if (slices === undefined) this.#slices.set(service, (slices = new Map()));
      slices.set(sliceKey, origins);
    }
    const all: string[] = [];
    for (const list of slices?.values() ?? []) for (const o of list.ready) if (!all.includes(o)) all.push(o);
    // Ready in one slice wins over starting in another (a pod listed twice while slices are rewritten).
    const starting: string[] = [];
    for (const list of slices?.values() ?? []) for (const o of list.starting) if (!all.includes(o) && !starting.includes(o)) starting.push(o);
    if (starting.length === 0) this.#starting.delete(service);
    else this.#starting.set(service, starting);
    if (all.length === 0) {
      this.#origins.delete(service);
      if (slices !== undefined && slices.size === 0) this.#slices.delete(service);
    } else {
      this.#origins.set(service, all);
      const waiters = this.#waiters.get(service);
      if (waiters !== undefined) {
        this.#waiters.delete(service);
        for (const wake of waiters) wake();
      }
    }
    for (const listener of this.#listeners) listener(service);
  }

  origins(service: string): readonly string[] {
    return this.#origins.get(service) ?? [];
  }

  /**
   * `namespace/service` of the Service whose ready or starting pod has this address, or undefined:
   * which function a pod's connection comes from (the refusal log of the bound on runtimes'
   * connections, internal/connection-bound.ts). A scan: called only for a rate-limited log line.
   */
  serviceOfAddress(address: string): string | undefined {
    const host = (origin: string) => new URL(origin).hostname.replace(/^\[|\]$/g, '');
    for (const map of [this.#origins, this.#starting]) {
      for (const [service, origins] of map) if (origins.some((o) => host(o) === address)) return service;
    }
    return undefined;
  }

  /** Origins of the Service's starting pods (an address, not ready, not terminating). */
  starting(service: string): readonly string[] {
    return this.#starting.get(service) ?? [];
  }

  /** The starting pods of the Service with their names (from the slices' targetRef); those without a name are left out. */
  startingPods(service: string): Array<{ origin: string; pod: string }> {
    const out: Array<{ origin: string; pod: string }> = [];
    const starting = this.#starting.get(service) ?? [];
    for (const list of this.#slices.get(service)?.values() ?? []) {
      for (const [origin, pod] of list.pods ?? []) if (starting.includes(origin) && !out.some((p) => p.origin === origin)) out.push({ origin, pod });
    }
    return out;
  }

  /**
   * The next ready origin of the Service, round robin, passing over those
   * `skip` names (the executor's refused origins); undefined when none is left.
   */
  pick(service: string, skip?: (origin: string) => boolean): string | undefined {
    const all = this.#origins.get(service);
    if (all === undefined || all.length === 0) return undefined;
    const start = this.#next.get(service) ?? 0;
    for (let k = 0; k < all.length; k++) {
      const i = (start + k) % all.length;
      if (skip?.(all[i]!) === true) continue;
      this.#next.set(service, i + 1);
      return all[i];
    }
    return undefined;
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

  /** Calls `listener(service)` after every change of a Service's slices (ready or starting origins); returns how to stop. */
  subscribe(listener: (service: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}
