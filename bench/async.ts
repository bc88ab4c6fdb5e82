// P13: asynchronous invocation (docs/async.md) against synchronous P1 in the same run, one machine.
//
//   node bench/async.ts [--seconds 6] [--connections 50] [--in-flight 50] [--rate 50] [--rounds 1]
//                       [--baseline <checkout>/gateway/src/main.ts] [--cpu-prof <dir>]
//
// One gateway (SQLite), one hello function. In order: synchronous /invoke
// throughput (autocannon, --connections); /async-invoke accept rate (the
// same load; every answer a 202) while the dispatcher drains; then two drain
// rates, from the calls' own times in the gateway's database (read-only):
//   - backlog drain: the calls still open when acceptance stopped over the time
//     from then to the last one finished: the dispatcher alone, as the
//     synchronous figure is the gateway alone (P13's drain);
//   - end to end: every accepted call over first acceptance to last finished,
//     which also holds the acceptance's own work on the same cores.
// Last, at a fixed --rate of calls a second for a few seconds, the p50 from
// acceptance to the start of the first attempt beside a synchronous call's
// p50 at the same rate. --in-flight is FNHOST_ASYNC_MAX_IN_FLIGHT (the bound
// of one function's attempts at once; the default 4 keeps room for
// synchronous callers, and would make drain a measure of that bound rather
// than of the path). Beside each rate, the gateway's own CPU time (user +
// system, /proc) per synchronous call and per async call (its acceptance,
// its attempt and their writes): on a shared, loaded machine the steadier
// figure. --baseline runs the same on a gateway of another
// checkout (before a change) in the same rounds, one gateway at a time, in
// alternating order. --cpu-prof writes the gateways' CPU profiles there.

import { join } from 'node:path';
import { loadavg } from 'node:os';
import { DatabaseSync } from 'node:sqlite';
import { parseArgs } from 'node:util';
import { startGateway, type RunningGateway } from '../test/helpers/platform.ts';
import { cpuMicros } from './lib/proc.ts';
import { machineDescription, percentile } from './lib/stats.ts';
import { reportFigure } from './lib/summary.ts';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '6' },
    connections: { type: 'string', default: '50' },
    'in-flight': { type: 'string', default: '50' },
    rate: { type: 'string', default: '50' },
    rounds: { type: 'string', default: '1' },
    baseline: { type: 'string' },
    'cpu-prof': { type: 'string' },
  },
});
const SECONDS = Number(values.seconds);
const CONNECTIONS = Number(values.connections);
const RATE = Number(values.rate);
const ROUNDS = Number(values.rounds);
/** A run that has not drained in this long is reported as such rather than waited for. */
const DRAIN_CEILING_MS = 180_000;

const autocannon = (await import('autocannon' as string)).default as (opts: Record<string, unknown>) => Promise<{
  requests: { average: number; total: number };
  latency: { p50: number };
  statusCodeStats: Record<string, { count: number }>;
}>;

interface Run {
  sync: number;
  accepted: number;
  acceptRate: number;
  backlog: number;
  backlogRate: number;
  endToEndRate: number;
  startP50: number;
  syncP50: number;
  /** The gateway's CPU (user + system) per synchronous call, µs. */
  syncCpuUs: number;
  /** The gateway's CPU per async call: its acceptance, its attempt and their writes, from the first acceptance to the drained queue, µs. */
  asyncCpuUs: number;
}

const api = async (gw: RunningGateway, method: string, path: string, body?: unknown) => {
  const r = await fetch(gw.url + path, { method, headers: { authorization: `Bearer ${gw.token}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  return (await r.json()) as any;
};

/** Waits until none of the function's calls is queued or running and `expected` succeeded; its rows then. */
async function drained(db: DatabaseSync, functionId: string, expected: number): Promise<Array<{ accepted_ms: number; finished_ms: number; attempts: string }>> {
  const deadline = Date.now() + DRAIN_CEILING_MS;
  for (;;) {
    const open = db.prepare("SELECT count(*) AS n FROM async_calls WHERE function_id = ? AND state IN ('queued', 'running')").get(functionId) as { n: number };
    const done = db.prepare("SELECT count(*) AS n FROM async_calls WHERE function_id = ? AND state = 'succeeded'").get(functionId) as { n: number };
    if (open.n === 0 && done.n >= expected) break;
    if (Date.now() > deadline) throw new Error(`not drained in ${DRAIN_CEILING_MS} ms: ${open.n} open, ${done.n} of ${expected} succeeded`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return db.prepare("SELECT accepted_ms, finished_ms, attempts FROM async_calls WHERE function_id = ? AND state = 'succeeded'").all(functionId) as any;
}

async function once(main: string | undefined, profDir: string | undefined): Promise<Run> {
  const env: Record<string, string> = { FNHOST_ASYNC_MAX_IN_FLIGHT: values['in-flight']!, FNHOST_ASYNC_POLL_MS: '100' };
  if (profDir !== undefined) env.NODE_OPTIONS = `--cpu-prof --cpu-prof-dir=${profDir}`;
  const gw = await startGateway({ env, ...(main === undefined ? {} : { main }) });
  const db = new DatabaseSync(join(gw.dataDir, 'fnhost.db'), { readOnly: true });
  try {
    const fn = await api(gw, 'POST', '/api/v1/functions', { name: 'hello', code: `export default (req, res) => res.json({ ok: true })` });
    const id = fn.function_id as string;
    await fetch(`${gw.url}/invoke/${id}`);
    const c0 = cpuMicros([gw.pid]);
    const sync = await autocannon({ url: `${gw.url}/invoke/${id}`, connections: CONNECTIONS, duration: SECONDS });
    const c1 = cpuMicros([gw.pid]);
    const accept = await autocannon({ url: `${gw.url}/async-invoke/${id}`, method: 'POST', body: '{}', headers: { 'content-type': 'application/json' }, connections: CONNECTIONS, duration: SECONDS });
    const acceptEnd = Date.now();
    const accepted = accept.statusCodeStats['202']?.count ?? 0;
    const rows = await drained(db, id, accepted);
    const c2 = cpuMicros([gw.pid]);
    const first = Math.min(...rows.map((r) => r.accepted_ms));
    const last = Math.max(...rows.map((r) => r.finished_ms));
    const backlog = rows.filter((r) => r.finished_ms > acceptEnd).length;

    // Latency at a fixed rate: a second function, so the first one's calls do not mix in.
    const fn2 = await api(gw, 'POST', '/api/v1/functions', { name: 'paced', code: `export default (req, res) => res.json({ ok: true })` });
    const id2 = fn2.function_id as string;
    await fetch(`${gw.url}/invoke/${id2}`);
    const syncMs: number[] = [];
    const paced = async (url: string, init: RequestInit, n: number, each: (ms: number) => void) => {
      const calls: Promise<void>[] = [];
      for (let i = 0; i < n; i++) {
        const t = performance.now();
        calls.push(fetch(url, init).then(async (r) => {
          await r.arrayBuffer();
          each(performance.now() - t);
        }));
        await new Promise((r) => setTimeout(r, 1000 / RATE));
      }
      await Promise.all(calls);
    };
    const n = RATE * 4;
    await paced(`${gw.url}/invoke/${id2}`, {}, n, (ms) => syncMs.push(ms));
    await paced(`${gw.url}/async-invoke/${id2}`, { method: 'POST' }, n, () => undefined);
    const pacedRows = await drained(db, id2, n);
    const toStart = pacedRows.map((r) => Date.parse((JSON.parse(r.attempts) as Array<{ started_at: string }>)[0]!.started_at) - r.accepted_ms);
    return {
      sync: sync.requests.average,
      accepted,
      acceptRate: accepted / SECONDS,
      backlog,
      backlogRate: backlog / ((last - acceptEnd) / 1000),
      endToEndRate: accepted / ((last - first) / 1000),
      startP50: percentile(toStart, 50),
      syncP50: percentile(syncMs, 50),
      syncCpuUs: (c1 - c0) / sync.requests.total,
      asyncCpuUs: (c2 - c1) / accepted,
    };
  } finally {
    db.close();
    await gw.stop();
  }
}

/** The median (the mean of the middle two for an even count). */
function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}
const sides: Array<string | undefined> = values.baseline === undefined ? [undefined] : [undefined, values.baseline];
const runs: Run[][] = sides.map(() => []);
const loads: string[] = [loadavg().map((l) => l.toFixed(1)).join(' ')];
for (let round = 0; round < ROUNDS; round++) {
  for (const k of round % 2 === 0 ? [...sides.keys()] : [...sides.keys()].reverse()) {
    const r = await once(sides[k], values['cpu-prof']);
    runs[k]!.push(r);
    console.log(`round ${round + 1}, ${k === 0 ? 'this checkout' : 'baseline'}: sync ${r.sync.toFixed(0)} req/s; accepted ${r.acceptRate.toFixed(0)}/s; backlog ${r.backlog} drained at ${r.backlogRate.toFixed(0)}/s (${(r.backlogRate / r.sync).toFixed(2)}x); end to end ${r.endToEndRate.toFixed(0)}/s (${(r.endToEndRate / r.sync).toFixed(2)}x); start p50 ${r.startP50.toFixed(1)} ms vs sync ${r.syncP50.toFixed(1)} ms; gateway CPU per call sync ${r.syncCpuUs.toFixed(0)} µs, async ${r.asyncCpuUs.toFixed(0)} µs`);
    loads.push(loadavg().map((l) => l.toFixed(1)).join(' '));
  }
}

console.log(`machine: ${machineDescription()}; load (1, 5, 15 min) at start and after each run: ${loads.join(' | ')}`);
for (const [k, side] of runs.entries()) {
  const name = k === 0 ? 'this checkout' : `baseline (${sides[k]})`;
  const ratio = (f: (r: Run) => number) => median(side.map(f));
  console.log(`${name}, medians of ${side.length} round(s):`);
  console.log(`  synchronous /invoke: ${ratio((r) => r.sync).toFixed(0)} req/s (${CONNECTIONS} connections, ${SECONDS} s)`);
  console.log(`  /async-invoke accepted: ${ratio((r) => r.acceptRate).toFixed(0)} calls/s (${ratio((r) => r.accepted)} in ${SECONDS} s) = ${ratio((r) => r.acceptRate / r.sync).toFixed(2)}x synchronous`);
  console.log(`  backlog drain: ${ratio((r) => r.backlogRate).toFixed(0)} calls/s (${ratio((r) => r.backlog)} calls open when acceptance stopped, FNHOST_ASYNC_MAX_IN_FLIGHT=${values['in-flight']}) = ${ratio((r) => r.backlogRate / r.sync).toFixed(2)}x synchronous`);
  console.log(`  end to end: ${ratio((r) => r.endToEndRate).toFixed(0)} calls/s (first acceptance to last finished, acceptance included) = ${ratio((r) => r.endToEndRate / r.sync).toFixed(2)}x synchronous`);
  console.log(`  gateway CPU per call: synchronous ${ratio((r) => r.syncCpuUs).toFixed(0)} µs; async (acceptance, attempt, writes) ${ratio((r) => r.asyncCpuUs).toFixed(0)} µs: a CPU-bound drain at ${ratio((r) => r.syncCpuUs / r.asyncCpuUs).toFixed(2)}x synchronous`);
  console.log(`  at ${RATE} calls/s: acceptance -> first attempt p50 ${ratio((r) => r.startP50).toFixed(1)} ms; a synchronous call's p50 ${ratio((r) => r.syncP50).toFixed(1)} ms (${ratio((r) => r.startP50 / r.syncP50).toFixed(2)}x)`);
}
const endToEnd = median(runs[0]!.map((r) => r.endToEndRate / r.sync));
const backlogRatio = median(runs[0]!.map((r) => r.backlogRate / r.sync));
const startRatio = median(runs[0]!.map((r) => r.startP50 / r.syncP50));
reportFigure({ target: 'P13', what: 'async drain (first acceptance → last finished, acceptance included) vs synchronous', measured: `${endToEnd.toFixed(2)}×`, bound: '≥ 0.8×', met: endToEnd >= 0.8 });
reportFigure({ target: 'P13', what: 'async backlog drain (after acceptance stopped) vs synchronous', measured: `${backlogRatio.toFixed(2)}×`, bound: '≥ 0.8×', met: backlogRatio >= 0.8 });
reportFigure({ target: 'P13', what: 'acceptance → first attempt p50 vs a synchronous call p50', measured: `${startRatio.toFixed(2)}×`, bound: '≤ 5×', met: startRatio <= 5 });
