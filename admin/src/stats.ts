import { isError } from '@fnhost/core/status.ts';

// The function page's chart: executions, errors and p95 duration per time
// bucket, computed in the browser from the newest execution logs (the same
// logs API the CLI uses; no extra endpoint). Pure, so it is unit-tested.

export interface Bucket {
  /** Start of the bucket, ms since the epoch. */
  start: number;
  executions: number;
  errors: number;
  /** p95 of execution_time_ms (nearest rank), null for an empty bucket. */
  p95Ms: number | null;
}

/** Nearest-rank percentile of an unsorted list; null when empty. */
export function percentile(values: readonly number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

const NICE_STEPS_MS = [1_000, 5_000, 15_000, 60_000, 5 * 60_000, 15 * 60_000, 3_600_000, 6 * 3_600_000, 86_400_000, 7 * 86_400_000];

/** A readable bucket width so the span fits in about `target` buckets. */
export function bucketWidth(spanMs: number, target: number): number {
  const raw = spanMs / Math.max(1, target);
  return NICE_STEPS_MS.find((s) => s >= raw) ?? NICE_STEPS_MS[NICE_STEPS_MS.length - 1]!;
}

/**
 * Buckets from the oldest to the newest log, `target` at most (empty ones
 * included, so time runs evenly along the axis).
 */
export function bucketLogs(logs: readonly { executed_at: string; status_code: number; execution_time_ms: number }[], target = 24): Bucket[] {
  if (logs.length === 0) return [];
  const times = logs.map((l) => Date.parse(l.executed_at));
  const min = Math.min(...times);
  const max = Math.max(...times);
  const width = bucketWidth(max - min + 1, target);
  const first = Math.floor(min / width) * width;
  const count = Math.floor((max - first) / width) + 1;
  const durations: number[][] = Array.from({ length: count }, () => []);
  const buckets: Bucket[] = Array.from({ length: count }, (_, i) => ({ start: first + i * width, executions: 0, errors: 0, p95Ms: null }));
  logs.forEach((log, i) => {
    const index = Math.floor((times[i]! - first) / width);
    const b = buckets[index]!;
    b.executions += 1;
    if (isError(log.status_code)) b.errors += 1;
    durations[index]!.push(log.execution_time_ms);
  });
  buckets.forEach((b, i) => {
    b.p95Ms = percentile(durations[i]!, 95);
  });
  return buckets.slice(-target);
}

/** Tick values from 0 to max: 0, the middle and the top, whole numbers only. */
export function ticks(max: number): number[] {
  if (max <= 1) return [0, 1];
  const mid = Math.round(max / 2);
  return mid === 0 || mid === max ? [0, max] : [0, mid, max];
}

/** Runs of consecutive buckets that have a p95: the line breaks where a bucket is empty. */
export function p95Runs(buckets: readonly Bucket[]): { index: number; p95: number }[][] {
  const runs: { index: number; p95: number }[][] = [];
  let run: { index: number; p95: number }[] = [];
  buckets.forEach((b, index) => {
    if (b.p95Ms === null) {
      if (run.length > 0) runs.push(run);
      run = [];
    } else run.push({ index, p95: b.p95Ms });
  });
  if (run.length > 0) runs.push(run);
  return runs;
}
