// An open-loop load generator at an even rate, for latency at a fixed load (P1 "at half of max
// load"). autocannon's overallRate only caps each second: every connection sends flat out until
// its share of the second is used, then waits, so the figure it gives is the latency of bursts.
// Here request i is due at start + i / rate whatever the earlier ones are doing (open loop, as
// wrk2 does), sent over a keep-alive undici Pool with connections to spare, and its latency is
// counted from when it was due, not from when it was sent: a generator or server that falls
// behind shows as latency instead of vanishing from the samples (coordinated omission).

import { Pool } from 'undici';
import { percentile } from './stats.ts';

export interface PacedTarget {
  /** The origin (http://host:port), or a name of it when socketPath is set. */
  origin: string;
  path: string;
  socketPath?: string;
}

export interface PacedResult {
  rate: number;
  /** Requests completed per second over the run. */
  achievedRate: number;
  sent: number;
  errors: number;
  p50: number;
  p90: number;
  p99: number;
  /** The latest any request was sent after it was due (ms): the generator's own lag. */
  maxSendLagMs: number;
}

/** Tick of the send loop: requests due within a tick leave together (at 2,000 req/s, two per ms). */
const TICK_MS = 1;

export async function paced(target: PacedTarget, rate: number, seconds: number, connections = 64): Promise<PacedResult> {
  const pool = new Pool(target.origin, { connections, pipelining: 1, ...(target.socketPath === undefined ? {} : { connect: { socketPath: target.socketPath } }) });
  const total = Math.round(rate * seconds);
  const latencies: number[] = [];
  let errors = 0;
  let maxLag = 0;
  const inflight = new Set<Promise<void>>();
  const start = performance.now();
  const intervalMs = 1000 / rate;
  let next = 0;
  try {
    while (next < total) {
      const now = performance.now();
      while (next < total && start + next * intervalMs <= now) {
        const due = start + next * intervalMs;
        maxLag = Math.max(maxLag, now - due);
        const p = pool
          .request({ path: target.path, method: 'GET' })
          .then(async (r) => {
            await r.body.dump();
            if (r.statusCode !== 200) errors++;
            latencies.push(performance.now() - due);
          })
          .catch(() => {
            errors++;
          });
        inflight.add(p);
        void p.finally(() => inflight.delete(p));
        next++;
      }
      await new Promise((resolve) => setTimeout(resolve, TICK_MS));
    }
    await Promise.all(inflight);
  } finally {
    await pool.close();
  }
  const elapsed = (performance.now() - start) / 1000;
  return {
    rate,
    achievedRate: latencies.length / elapsed,
    sent: total,
    errors,
    p50: percentile(latencies, 50),
    p90: percentile(latencies, 90),
    p99: percentile(latencies, 99),
    maxSendLagMs: maxLag,
  };
}
