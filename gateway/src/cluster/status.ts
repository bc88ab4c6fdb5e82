import type { Clock } from '@fnhost/core/clock.ts';
import type { RecentCounts } from '@fnhost/core/stores.ts';
import type { Logger } from '../log.ts';
import type { ConcurrencyReport } from '@fnhost/core/function-resource.ts';
import type { ConcurrencyAverages, ConcurrencyMeter } from './concurrency.ts';

// Invocation feedback onto each Function's status: the last invocation time
// and the error rate, shown by `kubectl get fn` as printer columns, and read
// by the operator to scale an idle function to zero. Executions are counted in
// memory on the request path (a map update); the API server sees at most one
// status write per function per interval, and none for a function that was
// not invoked since its last write. A call held for a function with no ready
// pod asks for an early write (wake), still within the one-per-interval rule,
// so that the operator scales it back up.
//
// The error rate covers a fixed window, the last 5 minutes, over every
// gateway replica: at each write it is counted from the log store (all
// replicas' records), never from what this replica saw since its last write.
// One more write when the window has passed a function's last call sets it
// to 0% (no call, no error), so the figure never outlives its window.

export const DEFAULT_STATUS_INTERVAL_MS = 10_000;
/** The window of status.errorRate (the ERRORS-5MIN column). */
export const ERROR_WINDOW_MS = 5 * 60_000;
/** The closing write waits this long past the window, so the last records are surely stored. */
const WINDOW_CLOSE_SLACK_MS = 2_000;

/** Where the window's counts come from (the log store: LogStore.recentCounts). */
export interface ErrorWindow {
  ms: number;
  counts(functionId: string, since: number): Promise<RecentCounts>;
}
/**
 * While this gateway sees a burst (the panic window's calls in flight at least
 * PANIC_THRESHOLD times what the function's ready pods are meant to carry), its
 * concurrency report may be written this soon after the last write instead of
 * a whole interval: the operator scales up on the panic window within seconds.
 */
export const PANIC_WRITE_INTERVAL_MS = 2_000;
export const PANIC_THRESHOLD = 2;

export interface Pending {
  /** Executions since the last write. */
  total: number;
  errors: number;
  /** ms of the newest execution (or wake request). */
  last: number;
  /** A held call waits for this function to scale up: write as soon as allowed. */
  wake: boolean;
  /** Calls were in flight within the stable window: the write carries this gateway's concurrency report. */
  load?: boolean;
  /** This gateway sees a burst: due PANIC_WRITE_INTERVAL_MS after the last write instead of the interval. */
  burst?: boolean;
}

export interface StatusFields {
  /** Left out by the write that closes the error window (no new call). */
  lastInvocationTime?: string;
  /** Errors (status ≥ 400) among the executions of the window (ERROR_WINDOW_MS), as a percentage. */
  errorRate?: string;
  /** This gateway's report under its own key (docs/cluster-mode.md, Autoscaling). */
  concurrency?: Record<string, ConcurrencyReport>;
}

/** A report's averages to two decimals (what the API server stores and the operator sums). */
export function reportOf(averages: ConcurrencyAverages, now: number): ConcurrencyReport {
  return { stable: Math.round(averages.stable * 100) / 100, panic: Math.round(averages.panic * 100) / 100, at: new Date(now).toISOString() };
}

/** RFC 3339 to the second, as Kubernetes writes times. */
export function rfc3339(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export function errorRate(errors: number, total: number): string {
  if (total === 0) return '0%';
  const pct = (errors / total) * 100;
  return `${pct >= 10 || pct === 0 ? Math.round(pct) : pct.toFixed(1)}%`;
}

/** The status fields to write for what happened since the last write; null when nothing did. */
export function statusFieldsFor(p: Pending | undefined): StatusFields | null {
  if (p === undefined || (p.total === 0 && !p.wake)) return null;
  const fields: StatusFields = { lastInvocationTime: rfc3339(p.last) };
  if (p.total > 0) fields.errorRate = errorRate(p.errors, p.total);
  return fields;
}

/** When a function's next write may happen: one per interval; a wake or due pending work as soon as allowed. */
export function dueAt(lastWrite: number | undefined, intervalMs: number): number {
  return lastWrite === undefined ? 0 : lastWrite + intervalMs;
}

export interface StatusWriter {
  /** Writes the fields onto the function's status; false when the function is unknown (nothing to write). */
  write(functionId: string, fields: StatusFields): Promise<boolean>;
}

export interface ConcurrencyOptions {
  meter: ConcurrencyMeter;
  /** This replica's key in status.concurrency (its pod name). */
  gatewayId: string;
  /** Calls in flight the function's ready pods are meant to carry (targetConcurrency × ready pods); undefined: the function does not autoscale. */
  capacity(functionId: string): number | undefined;
}

export class StatusFeedback {
  readonly #writer: StatusWriter;
  readonly #concurrency: ConcurrencyOptions | undefined;
  readonly #clock: Clock;
  readonly #intervalMs: number;
  readonly #logger: Logger;
  readonly #pending = new Map<string, Pending>();
  readonly #lastWrite = new Map<string, number>();
  readonly #window: ErrorWindow | undefined;
  /** When each function's error window has passed its last call (then one write sets 0%). */
  readonly #closeAt = new Map<string, number>();
  #timer: unknown;
  #timerAt = Infinity;
  #writing: Promise<void> | undefined;
  #stopped = false;
  writes = 0;
  failures = 0;

  constructor(options: { writer: StatusWriter; clock: Clock; intervalMs?: number; logger: Logger; window?: ErrorWindow; concurrency?: ConcurrencyOptions }) {
    this.#writer = options.writer;
    this.#window = options.window;
    this.#concurrency = options.concurrency;
    this.#clock = options.clock;
    this.#intervalMs = options.intervalMs ?? DEFAULT_STATUS_INTERVAL_MS;
    this.#logger = options.logger;
  }

  /** One execution finished (cheap: the request path calls this). */
  record(functionId: string, statusCode: number): void {
    const now = this.#clock.now();
    let p = this.#pending.get(functionId);
    if (p === undefined) {
      this.#pending.set(functionId, (p = { total: 0, errors: 0, last: now, wake: false }));
      this.#arm(dueAt(this.#lastWrite.get(functionId), this.#intervalMs));
    }
    p.total++;
    if (statusCode >= 400) p.errors++;
    p.last = now;
  }

  /** A call of the function began (autoscaling: its calls in flight). */
  callStarted(functionId: string): void {
    const c = this.#concurrency;
    if (c === undefined) return;
    const capacity = c.capacity(functionId);
    // Only functions with spec.scaling are measured.
    if (capacity === undefined) return;
    const now = this.#clock.now();
    c.meter.started(functionId, now);
    this.#loaded(functionId, now);
    const { panic } = c.meter.averages(functionId, now);
    const p = this.#pending.get(functionId)!;
    // A burst is reported sooner than the interval (still at most one write per PANIC_WRITE_INTERVAL_MS).
    if (panic >= PANIC_THRESHOLD * Math.max(capacity, 1) && p.burst !== true) {
      p.burst = true;
      this.#arm(this.#dueOf(functionId, p));
    }
  }

  #dueOf(functionId: string, p: Pending): number {
    return dueAt(this.#lastWrite.get(functionId), p.burst === true ? Math.min(PANIC_WRITE_INTERVAL_MS, this.#intervalMs) : this.#intervalMs);
  }

  callEnded(functionId: string): void {
    this.#concurrency?.meter.ended(functionId, this.#clock.now());
  }

  /** The function has calls in the stable window: its next write carries the report. */
  #loaded(functionId: string, now: number): void {
    let p = this.#pending.get(functionId);
    if (p === undefined) {
      this.#pending.set(functionId, (p = { total: 0, errors: 0, last: now, wake: false, load: true }));
      this.#arm(dueAt(this.#lastWrite.get(functionId), this.#intervalMs));
    }
    p.load = true;
  }

  /** The fields of one write: the invocation feedback, plus this gateway's concurrency report while calls are in its window. */
  #fieldsFor(functionId: string, p: Pending, now: number): StatusFields | null {
    const fields = statusFieldsFor(p) ?? {};
    const c = this.#concurrency;
    if (p.load === true && c !== undefined) {
      const averages = c.meter.averages(functionId, now);
      fields.concurrency = { [c.gatewayId]: reportOf(averages, now) };
      // A call in flight is an invocation going on: the function is not idle.
      if (averages.inFlight > 0) fields.lastInvocationTime = rfc3339(now);
    }
    return Object.keys(fields).length === 0 ? null : fields;
  }

  /** A call is held until the function has a ready pod: tell the operator now (within the write rate). */
  wake(functionId: string): void {
    const now = this.#clock.now();
    let p = this.#pending.get(functionId);
    if (p === undefined) this.#pending.set(functionId, (p = { total: 0, errors: 0, last: now, wake: true }));
    p.wake = true;
    p.last = Math.max(p.last, now);
    this.#arm(dueAt(this.#lastWrite.get(functionId), this.#intervalMs));
  }

  #arm(at: number): void {
    if (this.#stopped || at >= this.#timerAt) return;
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timerAt = at;
    this.#timer = this.#clock.setTimeout(() => {
      this.#timer = undefined;
      this.#timerAt = Infinity;
      // A timer has no caller to take an error (a failed read of the window's counts): kept here, never
      // an unhandled rejection that ends the gateway; what was due is written with the next call's flush.
      this.flush(false).catch((err: unknown) => {
        this.failures++;
        this.#logger.warn('writing invocation status failed; will retry', { error: (err as Error).message });
      });
    }, Math.max(0, at - this.#clock.now()));
  }

  /** Writes every function that is due (all of them with `all`, at shutdown). */
  flush(all: boolean): Promise<void> {
    if (this.#writing !== undefined) return this.#writing.then(() => this.flush(all));
    this.#writing = this.#flush(all).finally(() => {
      this.#writing = undefined;
    });
    return this.#writing;
  }

  async #flush(all: boolean): Promise<void> {
    const now = this.#clock.now();
    let nextDue = Infinity;
    const due: Array<[string, Pending]> = [];
    for (const [id, p] of this.#pending) {
      const at = this.#dueOf(id, p);
      if (all || at <= now) due.push([id, p]);
      else nextDue = Math.min(nextDue, at);
    }
    const closing = [...this.#closeAt].filter(([id, at]) => at <= now && !this.#pending.has(id)).map(([id]) => id);
    for (const [id, p] of due) {
      this.#pending.delete(id);
      const fields = this.#fieldsFor(id, p, now);
      // Calls still in the window: report again next interval, down to a last report of zero.
      if (p.load === true && this.#concurrency?.meter.active(id, now) === true) this.#pending.set(id, { total: 0, errors: 0, last: now, wake: false, load: true });
      if (fields === null) continue;
      if (this.#window !== undefined && p.total > 0) {
        fields.errorRate = await this.#windowRate(id, now, p);
        this.#closeAt.set(id, p.last + this.#window.ms + WINDOW_CLOSE_SLACK_MS);
      }
      this.#lastWrite.set(id, now);
      try {
        if (await this.#writer.write(id, fields)) this.writes++;
      } catch (err) {
        this.failures++;
        this.#logger.warn('writing invocation status failed; will retry', { function_id: id, error: (err as Error).message });
        // Put it back (merged with what came meanwhile) for the next interval.
        const again = this.#pending.get(id);
        if (again === undefined) this.#pending.set(id, p);
        else {
          again.total += p.total;
          again.errors += p.errors;
          again.wake ||= p.wake;
          again.load ||= p.load;
          again.last = Math.max(again.last, p.last);
        }
        nextDue = Math.min(nextDue, now + this.#intervalMs);
      }
    }
    for (const id of closing) {
      this.#closeAt.delete(id);
      try {
        if (await this.#writer.write(id, { errorRate: await this.#windowRate(id, now, undefined) })) this.writes++;
      } catch (err) {
        this.failures++;
        this.#logger.warn('writing invocation status failed', { function_id: id, error: (err as Error).message });
      }
    }
    for (const [id, p] of this.#pending) nextDue = Math.min(nextDue, this.#dueOf(id, p));
    for (const [, at] of this.#closeAt) nextDue = Math.min(nextDue, at);
    if (nextDue !== Infinity) this.#arm(nextDue);
  }

  /** The error rate of the window ending now, from every replica's stored records; what this replica saw is the floor (its last records may not be stored yet). */
  async #windowRate(functionId: string, now: number, own: Pending | undefined): Promise<string> {
    let counts: RecentCounts = { total: 0, errors: 0 };
    try {
      counts = await this.#window!.counts(functionId, now - this.#window!.ms);
    } catch (err) {
      this.#logger.warn('counting the error window failed; the rate covers this gateway\'s calls only', { function_id: functionId, error: (err as Error).message });
    }
    return errorRate(Math.max(counts.errors, own?.errors ?? 0), Math.max(counts.total, own?.total ?? 0));
  }

  /** Drops what a deleted function had pending. */
  forget(functionId: string): void {
    this.#concurrency?.meter.forget(functionId);
    this.#pending.delete(functionId);
    this.#lastWrite.delete(functionId);
    this.#closeAt.delete(functionId);
  }

  async close(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.flush(true).catch(() => undefined);
  }
}
