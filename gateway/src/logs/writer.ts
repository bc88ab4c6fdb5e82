import { recordedBodyChars, withoutBodies, type CounterStore, type LogStore, type RecordedExchange, type RetentionPolicy, type StoredLog, type ExecutionLog, type InsertResult, type WriterProgress } from '@fnhost/core';
import type { Logger } from '../log.ts';

// Execution records and total-execution increments leave the request path
// through this bounded queue and reach the stores in batches, every
// `intervalMs` or as soon as `batchSize` records wait. When the queue is full
// a writer waits (bounded by `fullWaitMs`) for a flush to make room; after
// that the record is dropped and counted in `dropped` (exported as a metric),
// never silently. A failing store keeps records queued and retries; `close()`
// flushes everything that is left.
//
// With a progress tracker (gateway/src/logs/instance.ts), every batch also
// carries the writer's cumulative counts (`owed`: records queued plus
// executions running whose record is to come; `written` once the batch is
// stored), which the store records with the batch: what a SIGKILL takes with
// the queue and the running executions is then counted by another gateway.
// Such a batch also counts its records' executions in the store, with the
// batch (LogStore.insert), so total executions never miss a stored record even
// when the gateway is killed mid-batch; the writer adds only the executions
// of records it drops. A failed batch is resent unchanged (same records, same
// progress), which is what lets the store apply a batch's counts once.
//
// Recorded requests (docs/replay.md) ride with their records, up to 64 KiB
// per body: the queue's bound in records does not bound their memory, so the
// bodies queued are bounded too (`maxRecordedChars`). Past it a record is
// still queued, its exchange without bodies (`omitted` says why, a replay of
// it answers 422), counted in `recordedBodiesDropped` (exported as a metric).

export interface WriterTimers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const realTimers: WriterTimers = {
  setTimeout: (fn, ms) => {
    const t = setTimeout(fn, ms);
    t.unref?.();
    return t;
  },
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

/** Where the writer's progress goes (InstanceTracker). Counts are the writer's own, since it started. */
export interface ProgressTracker {
  progress(accepted: number, written: number): WriterProgress;
  stored(result: InsertResult, progress: WriterProgress): void;
  /** An execution began (no I/O here: the tracker coalesces these into one write per interval). */
  touch?(): void;
}

export interface LogWriterOptions {
  logs: LogStore;
  counters: CounterStore;
  tracker?: ProgressTracker;
  intervalMs?: number;
  batchSize?: number;
  maxQueue?: number;
  fullWaitMs?: number;
  /** Characters of recorded bodies the queue may hold (default 64 Mi: about 64-128 MiB of strings). */
  maxRecordedChars?: number;
  timers?: WriterTimers;
  logger?: Logger;
  /** Each failed batch is counted here too (fnhost_background_failures_total{task="log_writer"}); the writer logs it and retries. */
  countFailure?: () => void;
}

/** expires_at (ms) for a record executed at `executedAtMs` under `retention`. */
export function expiresAt(retention: RetentionPolicy, executedAtMs: number): number | null {
  return retention.type === 'time' ? executedAtMs + retention.days * 86_400_000 : null;
}

export class LogWriter {
  readonly #logs: LogStore;
  readonly #counters: CounterStore;
  readonly #intervalMs: number;
  readonly #batchSize: number;
  readonly #maxQueue: number;
  readonly #fullWaitMs: number;
  readonly #maxRecordedChars: number;
  readonly #timers: WriterTimers;
  readonly #logger: Logger | undefined;
  readonly #tracker: ProgressTracker | undefined;
  readonly #countBackground: (() => void) | undefined;
  #queue: StoredLog[] = [];
  /** Characters of recorded bodies held by the queued records. */
  #recordedChars = 0;
  #lastBodiesDroppedLog = -Infinity;
  /** Executions to add through the CounterStore: dropped records, and queued ones when there is no tracker. */
  #increments = new Map<string, number>();
  /** With a tracker: queued records per function, whose executions the store counts with their batch. */
  #queuedBy = new Map<string, number>();
  /** The size of a batch that failed: the next attempt sends exactly those records again. */
  #resend: number | undefined;
  #timer: unknown = undefined;
  #flushing: Promise<void> | undefined;
  #spaceWaiters: Array<() => void> = [];
  #closed = false;
  dropped = 0;
  /** Records queued without their recorded bodies: the queue held maxRecordedChars of them already. */
  recordedBodiesDropped = 0;
  /** Records taken into the queue (dropped ones are not). */
  accepted = 0;
  /** Executions begun (begin()) whose record() has not come yet. */
  #running = 0;
  written = 0;
  failures = 0;

  constructor(options: LogWriterOptions) {
    this.#logs = options.logs;
    this.#counters = options.counters;
    this.#intervalMs = options.intervalMs ?? 50;
    this.#batchSize = options.batchSize ?? 500;
    this.#maxQueue = options.maxQueue ?? 20_000;
    this.#fullWaitMs = options.fullWaitMs ?? 2_000;
    this.#maxRecordedChars = options.maxRecordedChars ?? 64 * 1024 * 1024;
    this.#timers = options.timers ?? realTimers;
    this.#logger = options.logger;
    this.#tracker = options.tracker;
    this.#countBackground = options.countFailure;
  }

  get depth(): number {
    return this.#queue.length;
  }

  /** Executions not yet counted in the store, so total_executions is exact before a flush. */
  pendingCount(functionId: string): number {
    return (this.#increments.get(functionId) ?? 0) + (this.#queuedBy.get(functionId) ?? 0);
  }

  /** An execution began whose record() will come: counted in `owed` from now on. */
  begin(): void {
    this.#running++;
    this.#tracker?.touch?.();
  }

  /**
   * Records this writer owes: those queued so far plus executions running
   * whose record is still to come (a dropped record leaves both). This, not
   * `accepted`, is the progress sent to the store, so that a kill while
   * executions run, or between a response's last byte and its record, still
   * counts them.
   */
  get owed(): number {
    return this.accepted + this.#running;
  }

  /** Queues one record (and its counter increment). Resolves once queued or dropped. */
  record(log: ExecutionLog & Pick<StoredLog, 'exchange'>, retention: RetentionPolicy): void | Promise<void> {
    if (this.#running > 0) this.#running--;
    // executed_at is parsed only when the retention needs it (a count-based one, the default, does not).
    const stored: StoredLog = { ...log, expires_at: retention.type === 'time' ? expiresAt(retention, Date.parse(log.executed_at)) : null };
    if (this.#closed) {
      // After the last flush nothing would write it: say so, never lose it silently.
      this.dropped++;
      this.#logger?.error('execution log dropped: it arrived after the shutdown flush', { function_id: stored.function_id, log_id: stored.id });
      return;
    }
    if (this.#queue.length < this.#maxQueue) {
      this.#enqueue(stored);
      return;
    }
    return this.#recordWhenRoom(stored);
  }

  async #recordWhenRoom(stored: StoredLog): Promise<void> {
    // One bounded wait (timed by the injected timers), woken by each flush that makes room.
    let timedOut = false;
    let wake: () => void = () => undefined;
    const timer = this.#timers.setTimeout(() => {
      timedOut = true;
      wake();
    }, this.#fullWaitMs);
    while (this.#queue.length >= this.#maxQueue && !this.#closed && !timedOut) {
      this.#kick(0);
      await new Promise<void>((resolve) => {
        wake = resolve;
        this.#spaceWaiters.push(resolve);
      });
    }
    this.#timers.clearTimeout(timer);
    if (this.#queue.length >= this.#maxQueue && !this.#closed) {
      this.dropped++;
      this.#logger?.error('execution log dropped: the log queue stayed full', { function_id: stored.function_id, log_id: stored.id });
      // The execution still happened: count it even when its record is lost.
      add(this.#increments, stored.function_id, 1);
      return;
    }
    this.#enqueue(stored);
  }

  #enqueue(stored: StoredLog): void {
    if (stored.exchange !== undefined) this.#holdBodies(stored, stored.exchange);
    this.#queue.push(stored);
    this.accepted++;
    add(this.#tracker === undefined ? this.#increments : this.#queuedBy, stored.function_id, 1);
    this.#kick(this.#queue.length >= this.#batchSize ? 0 : this.#intervalMs);
  }

  /** Counts a queued record's recorded bodies, or drops them (keeping the rest of the exchange) when the queue holds its bound already. */
  #holdBodies(stored: StoredLog, exchange: RecordedExchange): void {
    const chars = recordedBodyChars(exchange);
    if (this.#recordedChars + chars <= this.#maxRecordedChars) {
      this.#recordedChars += chars;
      return;
    }
    stored.exchange = withoutBodies(exchange, `the gateway's log queue already held ${this.#maxRecordedChars} characters of recorded bodies (the store is slow or failing), so this body was not kept`);
    this.recordedBodiesDropped++;
    const now = performance.now();
    if (now - this.#lastBodiesDroppedLog >= 10_000) {
      this.#lastBodiesDroppedLog = now;
      this.#logger?.error('recorded bodies dropped: the log queue holds its bound of recorded bodies', { function_id: stored.function_id, log_id: stored.id, dropped_so_far: this.recordedBodiesDropped });
    }
  }

  /** Takes the first `n` records (written) off the queue, and their bodies off the count. */
  #dequeue(n: number): void {
    for (const record of this.#queue.splice(0, n)) {
      if (record.exchange !== undefined) this.#recordedChars -= recordedBodyChars(record.exchange);
    }
  }

  #kick(delay: number): void {
    if (this.#flushing !== undefined) return; // the running flush re-arms itself
    if (this.#timer !== undefined) {
      if (delay > 0) return;
      this.#timers.clearTimeout(this.#timer);
    }
    this.#timer = this.#timers.setTimeout(() => {
      this.#timer = undefined;
      void this.flush();
    }, delay);
  }

  /** Writes everything queued now (and what arrives meanwhile, batch by batch). */
  flush(): Promise<void> {
    if (this.#flushing !== undefined) return this.#flushing;
    if (this.#timer !== undefined) {
      this.#timers.clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    this.#flushing = this.#drain().finally(() => {
      this.#flushing = undefined;
      if (this.#queue.length > 0 || this.#increments.size > 0) this.#kick(this.#intervalMs);
    });
    return this.#flushing;
  }

  async #drain(): Promise<void> {
    while (this.#queue.length > 0 || this.#increments.size > 0) {
      const batch = this.#queue.slice(0, this.#resend ?? this.#batchSize);
      const increments = this.#increments;
      this.#increments = new Map();
      // With a tracker the store counts these executions with the batch: taken
      // out of pendingCount while it is sent (as the increments are), put back on failure.
      const executions = this.#tracker === undefined ? null : countByFunction(batch);
      if (executions !== null) for (const [id, n] of executions) add(this.#queuedBy, id, -n);
      try {
        if (batch.length > 0) {
          // Built just before sending, so `accepted` is as fresh as it can be.
          const progress = this.#tracker?.progress(this.owed, this.written + batch.length);
          const result = await this.#logs.insert(batch, progress);
          this.#dequeue(batch.length);
          this.written += batch.length;
          this.#resend = undefined;
          if (progress !== undefined) this.#tracker!.stored(result, progress);
        }
      } catch (err) {
        this.failures++;
        this.#resend = batch.length;
        this.#mergeBack(increments);
        if (executions !== null) for (const [id, n] of executions) add(this.#queuedBy, id, n);
        this.#logger?.error('writing execution logs failed; will retry', { error: (err as Error).message, records: batch.length });
        this.#countFailure(err);
        return;
      }
      try {
        if (increments.size > 0) await this.#counters.add(increments);
      } catch (err) {
        this.failures++;
        this.#mergeBack(increments);
        this.#logger?.error('adding execution counts failed; will retry', { error: (err as Error).message });
        this.#countFailure(err);
        return;
      } finally {
        const waiters = this.#spaceWaiters;
        this.#spaceWaiters = [];
        for (const wake of waiters) wake();
      }
    }
  }

  /** Counted only: the writer logs its own failures above, one line per failed batch as before. */
  #countFailure(err: unknown): void {
    void err;
    this.#countBackground?.();
  }

  #mergeBack(increments: Map<string, number>): void {
    for (const [id, n] of increments) add(this.#increments, id, n);
  }

  /** Flushes until empty (retrying a failing store up to `attempts` times). */
  async close(attempts = 5): Promise<void> {
    this.#closed = true;
    for (let i = 0; i < attempts && (this.#queue.length > 0 || this.#increments.size > 0); i++) {
      await this.flush();
    }
    if (this.#timer !== undefined) this.#timers.clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#queue.length > 0) {
      this.dropped += this.#queue.length;
      this.#logger?.error('execution logs lost at shutdown: the store kept failing', { records: this.#queue.length });
    }
  }
}

/** Adds n to a per-function count, dropping it at 0. */
function add(counts: Map<string, number>, functionId: string, n: number): void {
  const next = (counts.get(functionId) ?? 0) + n;
  if (next === 0) counts.delete(functionId);
  else counts.set(functionId, next);
}

function countByFunction(batch: readonly StoredLog[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const record of batch) add(counts, record.function_id, 1);
  return counts;
}
