import { StoreError } from '../../errors.ts';
import type { Stores } from '../../stores.ts';
import { openMongoStores, redactUrl, type MongoStoreOptions } from './index.ts';

// A platform process on Kubernetes (gateway, operator) cannot do anything
// useful without its MongoDB, and exiting only turns "MongoDB is not there
// yet" (a volume still Pending, a wrong URL, a NetworkPolicy) into a
// crash loop whose last line is a driver error. So it waits: every failed
// attempt is one JSON error record naming the (redacted) URL and where to
// look, and `onWaiting` lets the process say why it is not ready.

export interface PatientOpenOptions extends MongoStoreOptions {
  log: {
    warn(msg: string, fields?: Record<string, unknown>): void;
    error(msg: string, fields?: Record<string, unknown>): void;
    info(msg: string, fields?: Record<string, unknown>): void;
  };
  /** The reason to report (readiness) while waiting; undefined once connected. */
  onWaiting?(reason: string | undefined): void;
  /** Pause between attempts (each attempt already retries for `retry.retryForMs`). */
  pauseMs?: number;
  sleep?(ms: number): Promise<void>;
  /** Stops waiting (shutdown): the pending attempt's failure is thrown. */
  signal?: AbortSignal;
}

export const MONGODB_UNREACHABLE_HINT =
  'check that MongoDB runs and is reachable: with mongodb.internal, kubectl get pods,pvc -l app.kubernetes.io/component=mongodb (a Pending claim needs a StorageClass); ' +
  'with mongodb.url, its address and credentials, and platformNetworkPolicy.mongodb';

export async function openMongoStoresPatiently(options: PatientOpenOptions): Promise<Stores> {
  const { log, onWaiting, pauseMs = 5_000, sleep = (ms) => new Promise((r) => setTimeout(r, ms)), signal, ...storeOptions } = options;
  const mongodb = redactUrl(storeOptions.url);
  for (let attempt = 1; ; attempt++) {
    try {
      const stores = await openMongoStores({ ...storeOptions, retry: { log: (msg, fields) => log.warn(msg, fields), ...storeOptions.retry } });
      if (attempt > 1) log.info('MongoDB reachable', { mongodb, attempts: attempt });
      onWaiting?.(undefined);
      return stores;
    } catch (err) {
      if (!(err instanceof StoreError) || signal?.aborted) throw err;
      const reason = `MongoDB unreachable at ${mongodb}: ${err.message}`;
      log.error('cannot reach MongoDB; waiting for it', { mongodb, attempt, error: err.message, hint: MONGODB_UNREACHABLE_HINT, retry_in_ms: pauseMs });
      onWaiting?.(reason);
      await sleep(pauseMs);
    }
  }
}
