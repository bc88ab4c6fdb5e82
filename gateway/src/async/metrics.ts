import type { AsyncStats } from '@fnhost/core';

// The async queue's metrics (docs/async.md "Metrics"): the store's counts
// (every gateway's calls, refreshed every few seconds) and this gateway's own
// attempts in flight, retries and dead letters.

export interface AsyncMetricsSource {
  readonly stats: AsyncStats;
  readonly inFlight: number;
  readonly retried: number;
  readonly deadLettered: number;
}

export function asyncMetricsText(source: AsyncMetricsSource, now: number): string {
  const s = source.stats;
  const age = s.oldestQueuedAt === null ? 0 : Math.max(0, (now - s.oldestQueuedAt) / 1000);
  return [
    '# HELP fnhost_async_queued Async calls waiting in the queue (all gateways).', '# TYPE fnhost_async_queued gauge', `fnhost_async_queued ${s.queued}`,
    '# HELP fnhost_async_running Async calls under a lease (all gateways).', '# TYPE fnhost_async_running gauge', `fnhost_async_running ${s.running}`,
    '# HELP fnhost_async_dead Async calls on the dead-letter list.', '# TYPE fnhost_async_dead gauge', `fnhost_async_dead ${s.dead}`,
    '# HELP fnhost_async_oldest_queued_age_seconds Age of the oldest queued async call.', '# TYPE fnhost_async_oldest_queued_age_seconds gauge', `fnhost_async_oldest_queued_age_seconds ${age.toFixed(3)}`,
    '# HELP fnhost_async_in_flight Async attempts running on this gateway.', '# TYPE fnhost_async_in_flight gauge', `fnhost_async_in_flight ${source.inFlight}`,
    '# HELP fnhost_async_retries_total Async attempts this gateway scheduled a retry after.', '# TYPE fnhost_async_retries_total counter', `fnhost_async_retries_total ${source.retried}`,
    '# HELP fnhost_async_dead_letters_total Async calls this gateway put on the dead-letter list.', '# TYPE fnhost_async_dead_letters_total counter', `fnhost_async_dead_letters_total ${source.deadLettered}`,
  ].join('\n') + '\n';
}
