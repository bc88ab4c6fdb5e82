import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { InsertResult, InstanceState, InstanceStore, WriterProgress } from '@fnhost/core';
import type { Logger } from '../log.ts';

// Counting the execution records a killed gateway lost. A killed process
// cannot count its own loss, so this gateway's log writer keeps its progress
// in the store, outside the process, as it goes: each batch carries the
// writer's cumulative `accepted` and `written` (stored with the batch, no
// write per invocation), and a heartbeat refreshes them when no batch did for
// a while. Every gateway, at start and then every deadAfterMs / 2, claims the
// instances whose progress is older than deadAfterMs and that did not end
// themselves, counts accepted - written as lost (core/src/instances.ts), logs
// one warning per instance, and reads the totals the /metrics page shows.
// docs/mongodb.md ("Counting what a killed gateway lost") states the bound.
//
// A gateway taken for dead while alive (it could not reach the store for
// longer than deadAfterMs, or its clock is far behind) learns it when its
// progress is refused. It then goes on under a new instance id, counting from
// where the claim judged it, and as it writes the records that the claim
// counted lost, it raises that claim's `recovered`, so the loss reported is
// corrected rather than silently wrong.

export interface InstanceTrackerOptions {
  store: InstanceStore;
  /** An instance whose progress is older than this is taken for dead. */
  deadAfterMs: number;
  /** The writer's cumulative counts (records accepted into its queue, records written). */
  counts: () => { accepted: number; written: number };
  logger?: Logger;
  /** Each failed progress write or scan is counted here (fnhost_background_failures_total); the tracker logs once per outage and retries on its next beat. */
  countFailure?: (task: 'instance_progress' | 'instance_scan') => void;
  now?: () => number;
  newId?: () => string;
  host?: string;
  pid?: number;
  /**
   * While executions begin, their count reaches the store at most this long
   * after (one small write per interval at most, coalesced, none when idle).
   */
  progressIntervalMs?: number;
  /** Heartbeats, progress writes and scans run on timers; off (tests call beat(), tick() and scan()) when false. */
  timers?: boolean;
}

/** A claim of this gateway, while it was alive, counted the records in (from, to] lost (absolute writer counts). */
export interface OwedClaim {
  id: string;
  from: number;
  to: number;
  /** recovered already recorded on the claim. */
  reported: number;
}

/** The counts of the instance id in use, whose first record is the writer's record number base + 1. */
export function eraCounts(base: number, accepted: number, written: number): { accepted: number; written: number } {
  return { accepted: Math.max(0, accepted - base), written: Math.max(0, written - base) };
}

/** Of the records a claim counted lost, those written by now (the queue is written in order). */
export function recoveredBy(claim: Pick<OwedClaim, 'from' | 'to'>, written: number): number {
  return Math.max(0, Math.min(written, claim.to) - claim.from);
}

/**
 * Where the writer goes on after a claim of its instance: `claimed` is the
 * instance as the claim left it (null when it is gone), `base` the writer's
 * count where that instance started. The new instance starts after the last
 * record the claim judged; the records the claim counted lost are owed back.
 */
export function afterClaim(claimed: InstanceState | null, base: number, written: number): { base: number; owed: Omit<OwedClaim, 'reported'> | null } {
  if (claimed === null || claimed.ended === null) return { base: Math.max(base, written), owed: null };
  const from = base + claimed.written;
  const to = base + claimed.accepted;
  return { base: to, owed: to > from && claimed.ended.how === 'claimed' ? { id: claimed.id, from, to } : null };
}

export class InstanceTracker {
  readonly #store: InstanceStore;
  readonly #deadAfterMs: number;
  readonly #counts: () => { accepted: number; written: number };
  readonly #logger: Logger | undefined;
  readonly #countFailure: ((task: 'instance_progress' | 'instance_scan') => void) | undefined;
  readonly #now: () => number;
  readonly #newId: () => string;
  readonly #host: string;
  readonly #pid: number;
  readonly #useTimers: boolean;
  readonly #progressIntervalMs: number;
  #tickArmed = false;
  #ticking = false;
  #dirty = false;
  #id: string;
  #base = 0;
  #lastProgressAt = 0;
  #reviving: Promise<void> | undefined;
  #owed: OwedClaim[] = [];
  #timers: NodeJS.Timeout[] = [];
  #scanning: Promise<void> | undefined;
  #closed = false;
  #failing = false;
  /** The store's totals as of the last scan (undefined until one succeeded). */
  totals: { lost: number; recovered: number; dead: number } | undefined;

  constructor(options: InstanceTrackerOptions) {
    this.#store = options.store;
    this.#deadAfterMs = options.deadAfterMs;
    this.#counts = options.counts;
    this.#logger = options.logger;
    this.#countFailure = options.countFailure;
    this.#now = options.now ?? Date.now;
    this.#newId = options.newId ?? (() => 'gw_' + randomUUID());
    this.#host = options.host ?? hostname();
    this.#pid = options.pid ?? process.pid;
    this.#useTimers = options.timers ?? true;
    this.#progressIntervalMs = options.progressIntervalMs ?? 20;
    this.#id = this.#newId();
  }

  get id(): string {
    return this.#id;
  }

  /** Registers this instance and starts the heartbeat and the scans (the first scan at once, not awaited). */
  async start(): Promise<void> {
    const now = this.#now();
    await this.#store.register({ id: this.#id, host: this.#host, pid: this.#pid, startedAt: now }, now);
    this.#lastProgressAt = now;
    if (this.#useTimers) {
      const beat = setInterval(() => void this.beat(), this.beatIntervalMs);
      const scan = setInterval(() => void this.scan(), this.scanIntervalMs);
      beat.unref();
      scan.unref();
      this.#timers.push(beat, scan);
      void this.scan();
    }
  }

  /** How often an idle writer's progress is refreshed. */
  get beatIntervalMs(): number {
    return Math.max(50, Math.floor(this.#deadAfterMs / 5));
  }

  get scanIntervalMs(): number {
    return Math.max(100, Math.floor(this.#deadAfterMs / 2));
  }

  /** The progress to store with a batch: `accepted` so far, `written` once the batch is stored (the writer's counts). */
  progress(accepted: number, written: number): WriterProgress {
    return { instance: this.#id, ...eraCounts(this.#base, accepted, written), at: this.#now() };
  }

  /** What the store answered for a batch sent with `progress`. */
  stored(result: InsertResult, progress: WriterProgress): void {
    if (result !== undefined && !result.instanceLive) {
      // Not awaited (the writer's batch is done): a failure is reported here, never left unhandled.
      this.#revive(progress.instance).catch((err: unknown) => this.#reportFailure('registering this gateway again after it was taken for dead failed; will retry', err, 'instance_progress'));
      return;
    }
    if (progress.instance === this.#id) this.#lastProgressAt = Math.max(this.#lastProgressAt, progress.at);
  }

  /**
   * An execution began: its count goes to the store within the progress
   * interval (the writer calls this per execution; it only arms a timer).
   */
  touch(): void {
    if (!this.#useTimers || this.#closed) return;
    if (this.#ticking) {
      this.#dirty = true;
      return;
    }
    if (this.#tickArmed) return;
    this.#tickArmed = true;
    setTimeout(() => {
      this.#tickArmed = false;
      void this.tick();
    }, this.#progressIntervalMs).unref();
  }

  /** Writes the current progress (one write in flight at most; a touch meanwhile writes again after it). */
  async tick(): Promise<void> {
    if (this.#closed || this.#ticking) return;
    this.#ticking = true;
    this.#dirty = false;
    try {
      if (this.#reviving !== undefined) await this.#reviving;
      const { accepted, written } = this.#counts();
      const progress = this.progress(accepted, written);
      if (await this.#store.heartbeat(progress)) this.#lastProgressAt = Math.max(this.#lastProgressAt, progress.at);
      else await this.#revive(progress.instance);
    } catch (err) {
      this.#reportFailure('recording this gateway\'s log progress failed; will retry', err, 'instance_progress');
    } finally {
      this.#ticking = false;
    }
    if (this.#dirty) this.touch();
  }

  /** Refreshes the progress when nothing did for a beat interval, and reports what owed claims got back. */
  async beat(): Promise<void> {
    if (this.#closed) return;
    try {
      if (this.#reviving !== undefined) await this.#reviving;
      if (this.#now() - this.#lastProgressAt >= this.beatIntervalMs) {
        const { accepted, written } = this.#counts();
        const progress = this.progress(accepted, written);
        if (await this.#store.heartbeat(progress)) this.#lastProgressAt = Math.max(this.#lastProgressAt, progress.at);
        else await this.#revive(progress.instance);
      }
      await this.#settleOwed();
      this.#failing = false;
    } catch (err) {
      this.#reportFailure('recording this gateway\'s log progress failed; will retry', err, 'instance_progress');
    }
  }

  /** Claims dead instances (one warning each) and reads the totals. */
  scan(): Promise<void> {
    this.#scanning ??= (async () => {
      try {
        const claimed = await this.#store.claimStale(this.#id, this.#deadAfterMs, this.#now());
        for (const dead of claimed) {
          this.#logger?.warn('gateway instance found dead: the execution records it had not written are counted lost', {
            instance: dead.id,
            host: dead.host,
            pid: dead.pid,
            started_at: new Date(dead.startedAt).toISOString(),
            last_progress_at: new Date(dead.heartbeatAt).toISOString(),
            accepted: dead.accepted,
            written: dead.written,
            lost: dead.ended?.lost ?? 0,
          });
        }
        this.totals = await this.#store.lossTotals();
        this.#failing = false;
      } catch (err) {
        this.#reportFailure('looking for dead gateway instances failed; will retry', err, 'instance_scan');
      } finally {
        this.#scanning = undefined;
      }
    })();
    return this.#scanning;
  }

  /** After the writer's last flush: ends the instance (removed when it wrote all it accepted, else kept with its loss). */
  async close(): Promise<void> {
    this.#closed = true;
    for (const timer of this.#timers) clearInterval(timer);
    this.#timers = [];
    try {
      if (this.#reviving !== undefined) await this.#reviving;
      if (this.#scanning !== undefined) await this.#scanning;
      const { accepted, written } = this.#counts();
      const progress = this.progress(accepted, written);
      await this.#store.end(progress, this.#now());
      if (progress.accepted > progress.written) {
        this.#logger?.error('execution records this gateway accepted were not written before it stopped; they are counted lost', { instance: this.#id, lost: progress.accepted - progress.written });
      }
      await this.#settleOwed();
    } catch (err) {
      this.#logger?.error('ending this gateway instance in the store failed; another gateway will find it dead and count what it did not write', { instance: this.#id, error: (err as Error).message });
    }
  }

  /** Claims this gateway was wrongly counted in, and what they got back so far. */
  get owed(): readonly OwedClaim[] {
    return this.#owed;
  }

  #revive(claimedId: string): Promise<void> {
    if (claimedId !== this.#id) return this.#reviving ?? Promise.resolve();
    // After close() nothing is written any more: a progress write that was in
    // flight and refused because the clean end removed the instance must not
    // register a new one (it would stay live and be claimed as dead later).
    if (this.#closed) return this.#reviving ?? Promise.resolve();
    this.#reviving ??= (async () => {
      try {
        const claimed = await this.#store.get(claimedId);
        if (claimed !== null && claimed.ended === null) return; // still live: a race, nothing to do
        const { written } = this.#counts();
        const next = afterClaim(claimed, this.#base, written);
        const id = this.#newId();
        const now = this.#now();
        await this.#store.register({ id, host: this.#host, pid: this.#pid, startedAt: now }, now);
        if (next.owed !== null) this.#owed.push({ ...next.owed, reported: 0 });
        this.#base = next.base;
        this.#id = id;
        this.#lastProgressAt = 0; // the new instance's first heartbeat carries the counts at once
        this.#logger?.warn('this gateway was taken for dead by another one (its log progress was not recorded for longer than the bound: the store was unreachable from here, or the clocks disagree); it goes on as a new instance, and the records counted lost that it writes after all are counted back in fnhost_log_records_lost_recovered_total', {
          instance: claimedId,
          new_instance: id,
          claimed_by: claimed?.ended?.by ?? null,
          counted_lost: claimed?.ended?.lost ?? 0,
        });
      } finally {
        this.#reviving = undefined;
      }
    })();
    return this.#reviving;
  }

  async #settleOwed(): Promise<void> {
    if (this.#owed.length === 0) return;
    const { written } = this.#counts();
    for (const claim of this.#owed) {
      const recovered = recoveredBy(claim, written);
      if (recovered > claim.reported) {
        await this.#store.recover(claim.id, recovered);
        claim.reported = recovered;
      }
    }
    this.#owed = this.#owed.filter((claim) => claim.reported < claim.to - claim.from);
  }

  #reportFailure(message: string, err: unknown, task: 'instance_progress' | 'instance_scan'): void {
    this.#countFailure?.(task);
    // One line per outage, not one per tick (the store's own retries log each attempt).
    if (this.#failing) return;
    this.#failing = true;
    this.#logger?.warn(message, { error: (err as Error).message });
  }
}
