// What an execution record tells beyond the spec's fields: the console output
// its execution wrote, and per-function latency over the last hour and day
// from histogram buckets kept at write time (docs/stores.md "Execution insight").
// Pure: the stores keep the numbers, this file says what they mean.
import type { ExecutionLog } from './model.ts';

/** How much console output one execution keeps (the runtime bounds it, the gateway checks again). */
export const MAX_CONSOLE_BYTES = 64 * 1024;
export const MAX_CONSOLE_LINES = 1000;
/** One line's text is cut past this many characters (the rest counts as dropped bytes). */
export const MAX_CONSOLE_LINE_CHARS = 8192;

export type ConsoleStream = 'stdout' | 'stderr';

/** One line its handler wrote through console, `at_ms` after the call reached the runtime. */
export interface ConsoleLine {
  at_ms: number;
  stream: ConsoleStream;
  text: string;
}

/** An execution's console output, in the order written. */
export interface ConsoleOutput {
  lines: ConsoleLine[];
  /** Lines and bytes (UTF-8) left out past the bounds. */
  dropped_lines: number;
  dropped_bytes: number;
}

/** The record's fields with its console output (GET /api/v1/functions/{ref}/logs/{id}); output null when none arrived. */
export type ExecutionDetail = ExecutionLog & { console: ConsoleOutput | null };

/**
 * Keeps lines within MAX_CONSOLE_LINES and MAX_CONSOLE_BYTES, in order; what
 * does not fit is counted as dropped. The gateway applies it to what a runtime
 * sends, so a runtime (or handler code posing as one) cannot store more.
 */
export function boundConsole(output: ConsoleOutput): ConsoleOutput {
  const lines: ConsoleLine[] = [];
  let bytes = 0;
  let droppedLines = output.dropped_lines;
  let droppedBytes = output.dropped_bytes;
  for (const line of output.lines) {
    const size = Buffer.byteLength(line.text);
    if (lines.length >= MAX_CONSOLE_LINES || bytes + size > MAX_CONSOLE_BYTES) {
      droppedLines++;
      droppedBytes += size;
      continue;
    }
    bytes += size;
    lines.push(line);
  }
  return { lines, dropped_lines: droppedLines, dropped_bytes: droppedBytes };
}

/**
 * Upper bounds (ms) of the latency histogram's bins; a last bin takes the
 * rest. Roughly 1.5x apart, so a percentile read from them is within about
 * a quarter of the true value (linear within the bin).
 */
export const LATENCY_BOUNDS_MS: readonly number[] = [
  1, 2, 3, 5, 7, 10, 15, 20, 30, 50, 70, 100, 150, 200, 300, 500, 700,
  1000, 1500, 2000, 3000, 5000, 7000, 10000, 15000, 20000, 30000, 60000, 120000, 300000,
];
export const LATENCY_BINS = LATENCY_BOUNDS_MS.length + 1;

/** The bin an execution time falls in. */
export function latencyBin(ms: number): number {
  let lo = 0;
  let hi = LATENCY_BOUNDS_MS.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (ms <= LATENCY_BOUNDS_MS[mid]!) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/**
 * Histogram slots: per-minute rows answer "the last hour", per-hour rows "the
 * last day". A window is the slots that overlap it, so it can reach up to one
 * slot further back (a minute, an hour).
 */
export const LATENCY_SLOT_MS = { minute: 60_000, hour: 3_600_000 } as const;
export type LatencyLevel = keyof typeof LATENCY_SLOT_MS;
export const LATENCY_WINDOWS: ReadonlyArray<{ name: 'last_hour' | 'last_day'; level: LatencyLevel; ms: number }> = [
  { name: 'last_hour', level: 'minute', ms: 3_600_000 },
  { name: 'last_day', level: 'hour', ms: 86_400_000 },
];
/** Slots older than this are deleted by the stores (SQLite at insert, MongoDB's TTL index). */
export const LATENCY_KEEP_MS = { minute: 2 * 3_600_000, hour: 26 * 3_600_000 } as const;

export function latencySlot(executedMs: number, level: LatencyLevel): number {
  return Math.floor(executedMs / LATENCY_SLOT_MS[level]);
}

/** The first slot a window reads at `now`. */
export function firstSlot(now: number, windowMs: number, level: LatencyLevel): number {
  return latencySlot(now - windowMs, level) + 1;
}

/** One histogram increment: `n` executions of a function in one slot of a level and one bin, `cold` of them cold starts. */
export interface LatencyIncrement {
  functionId: string;
  level: LatencyLevel;
  slot: number;
  bin: number;
  n: number;
  cold: number;
}

/** A batch's increments, summed per (function, level, slot, bin). */
export function latencyIncrements(records: ReadonlyArray<{ function_id: string; executed_at: string; execution_time_ms: number; cold_start?: boolean }>): LatencyIncrement[] {
  // Run for every record of every batch the log writer stores: numeric keys per function (no
  // string built per record), and executed_at parsed once per distinct value (the gateway's
  // records of one millisecond share it).
  const sums = new Map<string, Map<number, LatencyIncrement>>();
  const out: LatencyIncrement[] = [];
  let lastAt: string | undefined;
  let ms = Number.NaN;
  for (const r of records) {
    if (r.executed_at !== lastAt) {
      lastAt = r.executed_at;
      ms = Date.parse(lastAt);
    }
    if (!Number.isFinite(ms)) continue;
    const bin = latencyBin(r.execution_time_ms);
    let mine = sums.get(r.function_id);
    if (mine === undefined) sums.set(r.function_id, (mine = new Map()));
    for (let l = 0; l < INCREMENT_LEVELS.length; l++) {
      const level = INCREMENT_LEVELS[l]!;
      const slot = latencySlot(ms, level);
      const key = (slot * LATENCY_BINS + bin) * INCREMENT_LEVELS.length + l;
      let inc = mine.get(key);
      if (inc === undefined) {
        mine.set(key, (inc = { functionId: r.function_id, level, slot, bin, n: 0, cold: 0 }));
        out.push(inc);
      }
      inc.n++;
      if (r.cold_start === true) inc.cold++;
    }
  }
  return out;
}

const INCREMENT_LEVELS = ['minute', 'hour'] as const;

/** Latency over one window: counts, cold starts and percentiles (ms, null with no execution). */
export interface LatencySummary {
  count: number;
  cold_starts: number;
  p50_ms: number | null;
  p95_ms: number | null;
  p99_ms: number | null;
}

export interface FunctionLatency {
  last_hour: LatencySummary;
  last_day: LatencySummary;
}

/** The q-quantile (0..1) of a histogram, linear within the bin that holds it. */
export function quantile(bins: readonly number[], q: number): number | null {
  const total = bins.reduce((a, b) => a + b, 0);
  if (total === 0) return null;
  const rank = q * total;
  let before = 0;
  for (let i = 0; i < bins.length; i++) {
    const n = bins[i]!;
    if (n === 0) continue;
    if (before + n >= rank) {
      const lo = i === 0 ? 0 : LATENCY_BOUNDS_MS[i - 1]!;
      const hi = LATENCY_BOUNDS_MS[i] ?? lo * 2;
      return Math.round(lo + ((hi - lo) * (rank - before)) / n);
    }
    before += n;
  }
  return LATENCY_BOUNDS_MS[LATENCY_BOUNDS_MS.length - 1]!;
}

export function summarize(bins: readonly number[], coldStarts: number): LatencySummary {
  return {
    count: bins.reduce((a, b) => a + b, 0),
    cold_starts: coldStarts,
    p50_ms: quantile(bins, 0.5),
    p95_ms: quantile(bins, 0.95),
    p99_ms: quantile(bins, 0.99),
  };
}

/** Stored rows of one window summed into a summary. */
export function summarizeRows(rows: Iterable<{ bin: number; n: number; cold: number }>): LatencySummary {
  const bins = new Array<number>(LATENCY_BINS).fill(0);
  let cold = 0;
  for (const row of rows) {
    if (row.bin >= 0 && row.bin < LATENCY_BINS) bins[row.bin]! += row.n;
    cold += row.cold;
  }
  return summarize(bins, cold);
}
