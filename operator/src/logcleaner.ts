import type { CounterStore, LogStore, ScheduleRunStore } from '@fnhost/core';

// Cleanup outside the cluster when a Function is deleted: its execution logs,
// its execution counter and its ledger of scheduled runs in the platform's store. The finalizer holds the
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
  constructor(logs: Pick<LogStore, 'deleteFunction'>, counters: Pick<CounterStore, 'delete'>, scheduleRuns?: Pick<ScheduleRunStore, 'deleteFunction'>) {
    this.#logs = logs;
    this.#counters = counters;
    this.#scheduleRuns = scheduleRuns;
  }
  async deleteFunctionLogs(functionId: string, _owner: { namespace: string; name: string }): Promise<void> {
    await this.#logs.deleteFunction(functionId);
    await this.#counters.delete(functionId);
    await this.#scheduleRuns?.deleteFunction(functionId);
  }
}
