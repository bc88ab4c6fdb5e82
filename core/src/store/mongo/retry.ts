import { MongoNetworkError, MongoServerSelectionError, MongoNotConnectedError, MongoTopologyClosedError, MongoError } from 'mongodb';
import { FnhostError, StoreError } from '../../errors.ts';

// Every store call runs through `runWithRetry`: an operation that failed
// because the server could not be reached is retried with exponential
// backoff (and each failure logged), up to a deadline; then, or at once for
// any other failure, it surfaces as StoreError with the driver's error as
// `cause`. Domain errors (ConflictError, NotFoundError) pass through.
//
// Writes that are not idempotent ($inc) are retried only when the driver says
// the command never reached a server (server selection failed); a network
// error in the middle of such a write may or may not have applied it, and a
// counter counted twice is worse than a batch reported as failed.

export interface RetryOptions {
  /** Total time spent retrying one operation before giving up (ms). */
  retryForMs: number;
  /** First backoff delay (ms); doubles up to maxDelayMs. */
  initialDelayMs: number;
  maxDelayMs: number;
  /** One log record per retry (the gateway and the operator pass their JSON logger's warn). */
  log: (msg: string, fields: Record<string, unknown>) => void;
  sleep: (ms: number) => Promise<void>;
  now: () => number;
}

export const DEFAULT_RETRY: RetryOptions = {
  retryForMs: 15_000,
  initialDelayMs: 100,
  maxDelayMs: 2_000,
  // The same JSON line shape as the gateway's and the operator's loggers, for a store opened without one.
  log: (msg, fields) => process.stdout.write(JSON.stringify({ time: new Date().toISOString(), level: 'warn', msg, ...fields }) + '\n'),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  now: () => Date.now(),
};

/** A failure to reach the server, after which the operation may be sent again. */
export function isConnectionError(err: unknown, idempotent: boolean): boolean {
  if (err instanceof MongoServerSelectionError) return true;
  if (!idempotent) return false;
  if (err instanceof MongoNetworkError || err instanceof MongoNotConnectedError) return true;
  if (err instanceof MongoError && (err.hasErrorLabel('RetryableWriteError') || err.hasErrorLabel('TransientTransactionError'))) return true;
  return false;
}

/** The backoff before attempt `attempt` (1-based retries): initial * 2^(attempt-1), capped. */
export function backoffDelay(attempt: number, options: Pick<RetryOptions, 'initialDelayMs' | 'maxDelayMs'>): number {
  return Math.min(options.maxDelayMs, options.initialDelayMs * 2 ** Math.max(0, attempt - 1));
}

export async function runWithRetry<T>(what: string, idempotent: boolean, operation: () => Promise<T>, options: RetryOptions): Promise<T> {
  const started = options.now();
  for (let attempt = 1; ; attempt++) {
    try {
      return await operation();
    } catch (err) {
      if (err instanceof FnhostError) throw err;
      if (err instanceof MongoTopologyClosedError) throw new StoreError(`MongoDB ${what} failed: the store is closed`, { cause: err });
      const retryable = isConnectionError(err, idempotent);
      const elapsed = options.now() - started;
      if (!retryable || elapsed >= options.retryForMs) {
        throw new StoreError(`MongoDB ${what} failed${retryable ? ` after ${attempt} attempts over ${elapsed} ms` : ''}: ${(err as Error).message}`, { cause: err });
      }
      const delay = backoffDelay(attempt, options);
      options.log('MongoDB unreachable; retrying', { operation: what, error: `${(err as Error).name}: ${(err as Error).message}`, retry: attempt, retry_in_ms: delay });
      await options.sleep(delay);
    }
  }
}
