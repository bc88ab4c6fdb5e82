// @fnhost/core: the model, validation and the store and executor seams.
export * from './model.ts';
export * from './errors.ts';
export * from './ids.ts';
export * from './status.ts';
export * from './insight.ts';
export * from './validation.ts';
export * from './code/index.ts';
export * from './cron.ts';
export * from './schedule-ledger.ts';
export * as limits from './limits.ts';
export * from './instances.ts';
export * from './recording.ts';
export * from './kv-quota.ts';
export * from './replay-diff.ts';
export * from './async-call.ts';
export * from './async-recount.ts';
export type * from './stores.ts';
export type * from './executor.ts';
