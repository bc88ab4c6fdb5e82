// Cleanup outside the cluster when a Function is deleted: its execution logs
// (and counters) in the platform's store. The finalizer holds the Function
// until this succeeds; a failure is retried with backoff. The MongoDB-backed
// cleaner is wired here later (LogStore.deleteFunction + CounterStore.delete);
// until then the no-op cleaner is used and says so in the operator's log.

export interface LogCleaner {
  readonly name: string;
  deleteFunctionLogs(functionId: string, owner: { namespace: string; name: string }): Promise<void>;
}

export class NoopLogCleaner implements LogCleaner {
  readonly name = 'noop';
  async deleteFunctionLogs(): Promise<void> {}
}
