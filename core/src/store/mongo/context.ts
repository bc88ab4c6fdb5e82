import { runWithRetry, type RetryOptions } from './retry.ts';

/** What every Mongo store class shares: the retry policy around each operation. */
export class MongoContext {
  readonly retry: RetryOptions;
  constructor(retry: RetryOptions) {
    this.retry = retry;
  }

  /** Runs one operation with retries on lost connections; failures become StoreError. */
  run<T>(what: string, idempotent: boolean, operation: () => Promise<T>): Promise<T> {
    return runWithRetry(what, idempotent, operation, this.retry);
  }
}
