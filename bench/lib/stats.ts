// Small measurement helpers for the benchmarks: percentiles over samples, and
// a description of the machine to print beside the figures.

import { cpus, totalmem } from 'node:os';
import { readFileSync } from 'node:fs';

/** The p-th percentile (0..100) of the samples, nearest-rank. */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1]!;
}

/** Times fn `runs` times after `warmup` untimed runs; returns milliseconds per run. */
export async function timeRuns(runs: number, warmup: number, fn: () => Promise<unknown>): Promise<number[]> {
  for (let i = 0; i < warmup; i++) await fn();
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = process.hrtime.bigint();
    await fn();
    samples.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  return samples;
}

export function machineDescription(): string {
  let model = cpus()[0]?.model ?? 'unknown CPU';
  try {
    const line = readFileSync('/proc/cpuinfo', 'utf8').split('\n').find((l) => l.startsWith('model name'));
    if (line) model = line.split(':')[1]!.trim();
  } catch {
    // not Linux: os.cpus() is good enough
  }
  return `${cpus().length} CPUs (${model}), ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, ${process.platform}`;
}
