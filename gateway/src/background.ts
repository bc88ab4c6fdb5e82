import type { Logger } from './log.ts';

// Background work (timers, the warm pool's refills, sweeps, watches, writers) runs
// with no caller to take its error: a throw there is an uncaught exception and
// ends the gateway (issue 27: the warm pool's refill met EMFILE inside a timer
// and the gateway exited). Every such task reports its failure here instead: one
// counter per task (fnhost_background_failures_total{task}), one log line per
// task per LOG_EVERY_MS at most (a failure repeating every few milliseconds
// must not flood the log), and the task retries with backoff (backoffMs).

/** The tasks that report here: a fixed vocabulary, so the metric's labels stay bounded. */
export const BACKGROUND_TASKS = [
  'warm_pool_refill', 'idle_stop', 'runtime_stop', 'scheduler', 'log_writer', 'retention_sweep',
  'instance_progress', 'instance_scan', 'admin_session_sweep', 'watch', 'status_feedback', 'throwaway_sweep',
  'compile_cache', 'code_gc', 'uncaught', 'async_dispatch', 'async_callback', 'async_recount', 'policy_follow',
] as const;
export type BackgroundTask = (typeof BACKGROUND_TASKS)[number];

/** At most one log line per task in this long; the lines in between are counted in the next one. */
export const LOG_EVERY_MS = 10_000;

/** Retry delay after `failures` consecutive failures: base, doubling, capped (0 failures: base). */
export function backoffMs(failures: number, baseMs: number, maxMs: number): number {
  const n = Math.max(0, Math.min(30, failures - 1));
  return Math.min(maxMs, baseMs * 2 ** n);
}

/** Whether a log line is due for a task that last logged at `lastAt` (undefined: never). */
export function logDue(lastAt: number | undefined, now: number, everyMs = LOG_EVERY_MS): boolean {
  return lastAt === undefined || now - lastAt >= everyMs;
}

/** What a background task needs to report a caught failure (the Background class; a fake in unit tests). */
export interface BackgroundFailures {
  failed(task: BackgroundTask, err: unknown, fields?: Record<string, unknown>): void;
}

export interface BackgroundOptions {
  /** The metric: metrics.backgroundFailed(task). */
  count(task: BackgroundTask): void;
  logger: Logger;
  now?: () => number;
}

export class Background implements BackgroundFailures {
  readonly #o: BackgroundOptions;
  readonly #lastLogAt = new Map<BackgroundTask, number>();
  readonly #suppressed = new Map<BackgroundTask, number>();

  constructor(options: BackgroundOptions) {
    this.#o = options;
  }

  failed(task: BackgroundTask, err: unknown, fields: Record<string, unknown> = {}): void {
    // Reporting must never throw itself: it is the last catch of its task.
    try {
      this.#o.count(task);
      const now = (this.#o.now ?? Date.now)();
      if (!logDue(this.#lastLogAt.get(task), now)) {
        this.#suppressed.set(task, (this.#suppressed.get(task) ?? 0) + 1);
        return;
      }
      const suppressed = this.#suppressed.get(task) ?? 0;
      this.#suppressed.delete(task);
      this.#lastLogAt.set(task, now);
      const e = err as { message?: unknown; code?: unknown };
      this.#o.logger.error('a background task failed; it will retry', {
        task,
        error: typeof e?.message === 'string' ? e.message : String(err),
        ...(typeof e?.code === 'string' ? { code: e.code } : {}),
        ...(suppressed > 0 ? { failures_not_logged: suppressed } : {}),
        ...fields,
      });
    } catch {
      // nothing left to tell
    }
  }

  /** Wraps a timer's callback: a throw or a rejection is reported, never uncaught. */
  guard(task: BackgroundTask, fn: () => unknown): () => void {
    return () => {
      try {
        const result = fn();
        if (result instanceof Promise) result.catch((err: unknown) => this.failed(task, err));
      } catch (err) {
        this.failed(task, err);
      }
    };
  }
}

/** A reporter that only logs (for parts constructed without the gateway's Background, e.g. in unit tests). */
export function loggingOnly(logger: Logger): BackgroundFailures {
  return new Background({ count: () => undefined, logger });
}
