// Prometheus text exposition, kept by hand: a few counters, one histogram.
// Recording is a couple of array increments, cheap enough for the hot path.

const BUCKETS_SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx'] as const;
const TRIGGERS = ['http', 'schedule', 'test', 'replay', 'async'] as const;

export class Metrics {
  /** invocations[trigger][class] */
  readonly invocations = TRIGGERS.map(() => CLASSES.map(() => 0));
  readonly bucketCounts = new Array<number>(BUCKETS_SECONDS.length + 1).fill(0);
  durationSum = 0;
  durationCount = 0;
  runtimeRestarts = 0;
  runtimeStarts = 0;
  runtimeIdleStops = 0;
  timeouts = 0;
  clientAborts = 0;
  /** Executions that waited for a runtime to start (no per-function label: functions are unbounded). */
  coldStarts = 0;
  /** Refusals at a bound on a shared resource, by reason (a small fixed vocabulary: see REFUSAL_REASONS). */
  private readonly refusals = new Map<RefusalReason, number>();
  /** Failures of background work (timers, pool refills, sweeps, watches) that were caught, logged and retried. */
  private readonly backgroundFailures = new Map<string, number>();

  /** Counts one refusal at a bound: every place that refuses a client or a function at a bound calls this once. */
  refused(reason: RefusalReason): void {
    this.refusals.set(reason, (this.refusals.get(reason) ?? 0) + 1);
  }

  refusedCount(reason: RefusalReason): number {
    return this.refusals.get(reason) ?? 0;
  }

  /** Counts one caught failure of a background task, named by the task (a fixed name per task, never a value). */
  backgroundFailed(task: string): void {
    this.backgroundFailures.set(task, (this.backgroundFailures.get(task) ?? 0) + 1);
  }

  observe(trigger: (typeof TRIGGERS)[number], status: number, ms: number): void {
    const cls = Math.min(4, Math.max(0, Math.floor(status / 100) - 1));
    const t = TRIGGERS.indexOf(trigger);
    this.invocations[t]![cls]!++;
    const seconds = ms / 1000;
    let i = 0;
    while (i < BUCKETS_SECONDS.length && seconds > BUCKETS_SECONDS[i]!) i++;
    this.bucketCounts[i]!++;
    this.durationSum += seconds;
    this.durationCount++;
  }

  render(gauges: {
    logQueueDepth: number;
    logRecordsDropped: number;
    recordedBodiesDropped: number;
    logRecordsWritten: number;
    logWriteFailures: number;
    runningRuntimes: number;
    lostRecords?: { lost: number; recovered: number; dead: number };
  }): string {
    const lines: string[] = [];
    lines.push('# HELP fnhost_invocations_total Executions by trigger and status class.', '# TYPE fnhost_invocations_total counter');
    TRIGGERS.forEach((trigger, t) => CLASSES.forEach((cls, c) => lines.push(`fnhost_invocations_total{trigger="${trigger}",status_class="${cls}"} ${this.invocations[t]![c]}`)));
    lines.push('# HELP fnhost_invocation_duration_seconds Execution time, request arrival to response end.', '# TYPE fnhost_invocation_duration_seconds histogram');
    let cumulative = 0;
    BUCKETS_SECONDS.forEach((le, i) => {
      cumulative += this.bucketCounts[i]!;
      lines.push(`fnhost_invocation_duration_seconds_bucket{le="${le}"} ${cumulative}`);
    });
    cumulative += this.bucketCounts[BUCKETS_SECONDS.length]!;
    lines.push(`fnhost_invocation_duration_seconds_bucket{le="+Inf"} ${cumulative}`);
    lines.push(`fnhost_invocation_duration_seconds_sum ${this.durationSum}`, `fnhost_invocation_duration_seconds_count ${this.durationCount}`);
    const simple: Array<[string, string, string, number]> = [
      ['fnhost_log_queue_depth', 'gauge', 'Execution records waiting to be written.', gauges.logQueueDepth],
      ['fnhost_log_records_dropped_total', 'counter', 'Execution records lost because the queue stayed full or the store kept failing.', gauges.logRecordsDropped],
      ['fnhost_recorded_bodies_dropped_total', 'counter', 'Recorded requests (record_requests) queued without their bodies because the log queue held its bound of recorded bodies.', gauges.recordedBodiesDropped],
      ['fnhost_log_records_written_total', 'counter', 'Execution records written to the log store.', gauges.logRecordsWritten],
      ['fnhost_log_write_failures_total', 'counter', 'Failed batch writes (retried).', gauges.logWriteFailures],
      ['fnhost_runtime_restarts_total', 'counter', 'Runtime processes replaced after a crash, timeout, out-of-memory or change.', this.runtimeRestarts],
      ['fnhost_runtime_starts_total', 'counter', 'Runtime processes started.', this.runtimeStarts],
      ['fnhost_runtime_idle_stops_total', 'counter', 'Runtime processes stopped after FNHOST_RUNTIME_IDLE_SECONDS with no call.', this.runtimeIdleStops],
      ['fnhost_runtimes_running', 'gauge', 'Runtime processes running now.', gauges.runningRuntimes],
      ['fnhost_invocation_timeouts_total', 'counter', 'Executions the gateway ended at the time limit.', this.timeouts],
      ['fnhost_client_aborts_total', 'counter', 'Invocations whose caller disconnected before the response ended.', this.clientAborts],
      ['fnhost_cold_starts_total', 'counter', 'Executions that waited for a runtime to start.', this.coldStarts],
    ];
    for (const [name, type, help, value] of simple) lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, `${name} ${value}`);
    // Read from the store by the last scan, so every gateway on it shows the same values; left out
    // until a scan succeeded (a 0 followed by the stored total would look like an increase).
    if (gauges.lostRecords !== undefined) {
      const lost: Array<[string, string, number]> = [
        ['fnhost_log_records_lost_total', 'Execution records accepted by gateways that ended without writing them (SIGKILL, OOM kill, node loss, or a shutdown whose store kept failing), counted from the store; the same value on every gateway sharing it.', gauges.lostRecords.lost],
        ['fnhost_log_records_lost_recovered_total', 'Of fnhost_log_records_lost_total, records written after all by a gateway that was taken for dead while alive (the store unreachable from it for longer than the bound).', gauges.lostRecords.recovered],
        ['fnhost_gateway_instances_dead_total', 'Gateway instances found dead (no log progress for longer than FNHOST_GATEWAY_DEAD_AFTER_MS and no clean shutdown), from the store.', gauges.lostRecords.dead],
      ];
      for (const [name, help, value] of lost) lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} counter`, `${name} ${value}`);
    }
    lines.push('# HELP fnhost_refused_total Requests, connections and writes refused at a bound on a shared resource, by reason.', '# TYPE fnhost_refused_total counter');
    for (const reason of REFUSAL_REASONS) lines.push(`fnhost_refused_total{reason="${reason}"} ${this.refusals.get(reason) ?? 0}`);
    lines.push('# HELP fnhost_background_failures_total Failures of background work (timers, refills, sweeps, watches) caught, logged and retried, by task.', '# TYPE fnhost_background_failures_total counter');
    for (const [task, n] of [...this.backgroundFailures].sort(([a], [b]) => a.localeCompare(b))) lines.push(`fnhost_background_failures_total{task="${task}"} ${n}`);
    return lines.join('\n') + '\n';
  }
}

/**
 * Why a bound refused a client or a function. Fixed so that the metric's labels stay bounded;
 * a new bound adds its reason here (docs/security.md "Resources" names each).
 */
export const REFUSAL_REASONS = [
  'connections_total', 'connections_per_client', 'headers_timeout', 'body_timeout', 'body_memory',
  'internal_connections_per_function', 'egress_connections_per_function', 'console_rate',
  'kv_bytes', 'kv_keys', 'kv_write_rate', 'namespace_kv_bytes', 'namespace_recorded_bytes',
  'code_store_bytes', 'namespace_code_bytes', 'code_uploads', 'code_fetches', 'code_fetch_rate',
  'async_queue_function_bytes', 'async_queue_total_bytes', 'async_callbacks_in_flight',
] as const;
export type RefusalReason = (typeof REFUSAL_REASONS)[number];
