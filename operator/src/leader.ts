import { sleep } from './clock.ts';
import type { Clock } from '@fnhost/core/clock.ts';
import { KubeClient, isConflict, paths } from './kube.ts';
import type { Logger } from './log.ts';

// Leader election on a coordination.k8s.io/v1 Lease, in the manner of
// client-go's leaderelection: a candidate takes the Lease only when its holder
// has not renewed it for leaseDuration *as observed by this candidate's own
// clock* (so clock skew between machines does not matter), every write carries
// the resourceVersion it read (so two candidates cannot both win), and a
// leader that cannot renew within renewDeadline stops leading.

export interface LeaseRecord {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

export interface ElectionOptions {
  namespace: string;
  name: string;
  identity: string;
  leaseDurationSeconds: number;
  renewDeadlineSeconds: number;
  retryPeriodSeconds: number;
}

/** Kubernetes MicroTime: RFC 3339 with microseconds. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

/** What a candidate should write, or null when someone else validly holds the lease. Pure. */
export function nextLease(current: LeaseRecord | undefined, opts: ElectionOptions, now: number, observedAt: number): LeaseRecord | null {
  const holder = current?.holderIdentity ?? '';
  const duration = (current?.leaseDurationSeconds ?? opts.leaseDurationSeconds) * 1000;
  if (holder && holder !== opts.identity && observedAt + duration > now) return null;
  const mine = holder === opts.identity;
  return {
    holderIdentity: opts.identity,
    leaseDurationSeconds: opts.leaseDurationSeconds,
    acquireTime: mine && current?.acquireTime ? current.acquireTime : microTime(now),
    renewTime: microTime(now),
    leaseTransitions: mine ? (current?.leaseTransitions ?? 0) : (current?.leaseTransitions ?? 0) + (holder ? 1 : 0),
  };
}

export class LeaderElector {
  readonly #client: KubeClient;
  readonly #opts: ElectionOptions;
  readonly #clock: Clock;
  readonly #log: Logger;
  #observed: { holder: string; renewTime: string; at: number } | null = null;
  #leading = false;
  #stopped = false;

  constructor(client: KubeClient, opts: ElectionOptions, clock: Clock, log: Logger) {
    this.#client = client;
    this.#opts = opts;
    this.#clock = clock;
    this.#log = log;
  }

  get isLeader(): boolean {
    return this.#leading;
  }

  /** One attempt to take or renew the Lease. */
  async tryAcquireOrRenew(): Promise<boolean> {
    const path = paths.lease(this.#opts.namespace, this.#opts.name);
    const now = this.#clock.now();
    const lease = await this.#client.getOrNull<{ metadata: { resourceVersion: string }; spec?: LeaseRecord }>(path);
    if (!lease) {
      const spec = nextLease(undefined, this.#opts, now, now)!;
      try {
        await this.#client.request('POST', paths.lease(this.#opts.namespace), {
          body: { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: this.#opts.name, namespace: this.#opts.namespace }, spec },
        });
        return true;
      } catch (err) {
        if (isConflict(err)) return false;
        throw err;
      }
    }
    const holder = lease.spec?.holderIdentity ?? '';
    const renewTime = lease.spec?.renewTime ?? '';
    if (!this.#observed || this.#observed.holder !== holder || this.#observed.renewTime !== renewTime) {
      this.#observed = { holder, renewTime, at: now };
    }
    const spec = nextLease(lease.spec, this.#opts, now, this.#observed.at);
    if (!spec) return false;
    try {
      await this.#client.request('PUT', path, {
        body: { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: this.#opts.name, namespace: this.#opts.namespace, resourceVersion: lease.metadata.resourceVersion }, spec },
      });
      return true;
    } catch (err) {
      if (isConflict(err)) return false;
      throw err;
    }
  }

  /**
   * Waits to become leader, calls onStarted, renews until stopped or the
   * lease is lost; then calls onStopped (the operator exits: a process that
   * may have lost the lease must not keep reconciling).
   */
  async run(onStarted: () => Promise<void> | void, onStopped: (reason: string) => void): Promise<void> {
    const retryMs = this.#opts.retryPeriodSeconds * 1000;
    while (!this.#stopped && !this.#leading) {
      try {
        if (await this.tryAcquireOrRenew()) this.#leading = true;
      } catch (err) {
        this.#log.warn('lease acquire failed', { error: (err as Error).message });
      }
      if (!this.#leading) await sleep(this.#clock, retryMs);
    }
    if (this.#stopped) return;
    this.#log.info('became leader', { lease: `${this.#opts.namespace}/${this.#opts.name}`, identity: this.#opts.identity });
    await onStarted();
    let lastRenew = this.#clock.now();
    while (!this.#stopped) {
      await sleep(this.#clock, retryMs);
      if (this.#stopped) break;
      try {
        if (await this.tryAcquireOrRenew()) lastRenew = this.#clock.now();
      } catch (err) {
        this.#log.warn('lease renew failed', { error: (err as Error).message });
      }
      if (this.#clock.now() - lastRenew > this.#opts.renewDeadlineSeconds * 1000) {
        this.#leading = false;
        onStopped('lease not renewed within the renew deadline');
        return;
      }
    }
  }

  /** Gives the Lease up so that a standby takes over at once instead of after leaseDuration. */
  async release(): Promise<void> {
    this.#stopped = true;
    if (!this.#leading) return;
    this.#leading = false;
    const path = paths.lease(this.#opts.namespace, this.#opts.name);
    try {
      const lease = await this.#client.get(path);
      if (lease.spec?.holderIdentity !== this.#opts.identity) return;
      await this.#client.request('PUT', path, {
        body: { ...lease, spec: { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: microTime(this.#clock.now()) } },
      });
    } catch (err) {
      this.#log.warn('lease release failed', { error: (err as Error).message });
    }
  }
}
