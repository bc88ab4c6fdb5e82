import type { AsyncCallStore, CounterStore, LogStore, ScheduleRunStore } from '@fnhost/core';

// Cleanup outside the cluster when a Function is deleted: its execution logs,
// its execution counter, its ledger of scheduled runs and its async calls (queued, running, finished,
// dead: docs/async.md) in the platform's store. The finalizer holds the
// Function until this succeeds; a failure is retried with backoff, so a store
// outage delays a deletion instead of leaving records nobody can reach.
// main.ts wires NoopLogCleaner until the MongoDB stores exist; then it passes
// their LogStore and CounterStore to StoreLogCleaner.

export interface LogCleaner {
  readonly name: string;
  deleteFunctionLogs(functionId: string, owner: { namespace: string; name: string }): Promise<void>;
}

export class NoopLogCleaner implements LogCleaner {
  readonly name = 'noop';
  async deleteFunctionLogs(_functionId: string, _owner: { namespace: string; name: string }): Promise<void> {}
}

export class StoreLogCleaner implements LogCleaner {
  readonly name = 'store';
  readonly #logs: Pick<LogStore, 'deleteFunction'>;
  readonly #counters: Pick<CounterStore, 'delete'>;
  readonly #scheduleRuns: Pick<ScheduleRunStore, 'deleteFunction'> | undefined;
  readonly #asyncCalls: Pick<AsyncCallStore, 'deleteFunction'> | undefined;
  constructor(
    logs: Pick<LogStore, 'deleteFunction'>, counters: Pick<CounterStore, 'delete'>,
    scheduleRuns?: Pick<ScheduleRunStore, 'deleteFunction'>, asyncCalls?: Pick<AsyncCallStore, 'deleteFunction'>,
  ) {
    this.#logs = logs;
    this.#counters = counters;
    this.#scheduleRuns = scheduleRuns;
    this.#asyncCalls = asyncCalls;
  }
  async deleteFunctionLogs(functionId: string, _owner: { namespace: string; name: string }): Promise<void> {
    await this.#logs.deleteFunction(functionId);
    await this.#counters.delete(functionId);
    await this.#scheduleRuns?.deleteFunction(functionId);
    // The finalizer, not a gateway: it runs exactly when the Function goes, holds it until the store
    // answered (retried with backoff), and no gateway replica need be up or see the delete.
    await this.#asyncCalls?.deleteFunction(functionId);
  }
}
