// P13: asynchronous invocation (docs/async.md) against synchronous P1 in the same run, one machine.
//
//   node bench/async.ts [--seconds 6] [--connections 50] [--in-flight 50] [--rate 50]
//
// One gateway (SQLite), one hello function. In order: synchronous /invoke
// throughput (autocannon, --connections); /async-invoke accept rate (the
// same load; every answer a 202) and then the drain rate: the accepted calls
// over the time from the first acceptance to the last call succeeded (the
// dispatcher drains while calls arrive); last, at a fixed --rate of calls a
// second for a few seconds, the p50 from acceptance to the start of the
// first attempt (from the calls' own times) beside a synchronous call's p50
// at the same rate. --in-flight is FNHOST_ASYNC_MAX_IN_FLIGHT (the bound of
// one function's attempts at once; the default 4 keeps room for synchronous
// callers, and would make drain a measure of that bound rather than of the path).

import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { startGateway } from '../test/helpers/platform.ts';
import { machineDescription, percentile } from './lib/stats.ts';
import { reportFigure } from './lib/summary.ts';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '6' },
    connections: { type: 'string', default: '50' },
    'in-flight': { type: 'string', default: '50' },
    rate: { type: 'string', default: '50' },
  },
});
const SECONDS = Number(values.seconds);
const CONNECTIONS = Number(values.connections);
const RATE = Number(values.rate);

const autocannon = (await import('autocannon' as string)).default as (opts: Record<string, unknown>) => Promise<{
  requests: { average: number; total: number };
  latency: { p50: number };
  statusCodeStats: Record<string, { count: number }>;
}>;

const gw = await startGateway({ env: { FNHOST_ASYNC_MAX_IN_FLIGHT: values['in-flight']!, FNHOST_ASYNC_POLL_MS: '100' } });
const api = async (method: string, path: string, body?: unknown) => {
  const r = await fetch(gw.url + path, { method, headers: { authorization: `Bearer ${gw.token}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  return (await r.json()) as any;
};

async function allDone(name: string, expected: number): Promise<number> {
  for (;;) {
    const open = await api('GET', `/api/v1/functions/${name}/async?state=queued,running&limit=1`);
    if (open.calls.length === 0) {
      const done = await api('GET', `/api/v1/functions/${name}/async?state=succeeded&limit=1000`);
      if (done.calls.length >= Math.min(expected, 1000)) return Date.now();
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

try {
  const fn = await api('POST', '/api/v1/functions', { name: 'hello', code: `export default (req, res) => res.json({ ok: true })` });
  const id = fn.function_id as string;
  await fetch(`${gw.url}/invoke/${id}`);
  const sync = await autocannon({ url: `${gw.url}/invoke/${id}`, connections: CONNECTIONS, duration: SECONDS });
  const started = Date.now();
  const accept = await autocannon({ url: `${gw.url}/async-invoke/${id}`, method: 'POST', body: '{}', headers: { 'content-type': 'application/json' }, connections: CONNECTIONS, duration: SECONDS });
  const accepted = accept.statusCodeStats['202']?.count ?? 0;
  const drainedAt = await allDone('hello', accepted);
  const drainRate = accepted / ((drainedAt - started) / 1000);

  // Latency at a fixed rate: a second function, so the first one's records do not mix in.
  const fn2 = await api('POST', '/api/v1/functions', { name: 'paced', code: `export default (req, res) => res.json({ ok: true })` });
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
  await allDone('paced', n);
  const calls = (await api('GET', `/api/v1/functions/paced/async?state=succeeded&limit=1000`)).calls as any[];
  const toStart = calls.map((c) => Date.parse(c.attempts[0].started_at) - Date.parse(c.accepted_at)).sort((a, b) => a - b);
  const syncP50 = percentile(syncMs, 50);
  const startP50 = percentile(toStart, 50);

  console.log(`machine: ${machineDescription()}; load ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  console.log(`synchronous /invoke: ${sync.requests.average.toFixed(0)} req/s (${CONNECTIONS} connections, ${SECONDS} s)`);
  console.log(`/async-invoke accepted: ${(accepted / SECONDS).toFixed(0)} calls/s (${accepted} in ${SECONDS} s)`);
  console.log(`drain: ${drainRate.toFixed(0)} calls/s (${accepted} calls, first acceptance to last succeeded, FNHOST_ASYNC_MAX_IN_FLIGHT=${values['in-flight']}) = ${(drainRate / sync.requests.average).toFixed(2)}x synchronous`);
  console.log(`at ${RATE} calls/s: acceptance -> first attempt p50 ${startP50.toFixed(1)} ms; a synchronous call's p50 ${syncP50.toFixed(1)} ms (${(startP50 / syncP50).toFixed(2)}x)`);
  const drainRatio = drainRate / sync.requests.average;
  reportFigure({ target: 'P13', what: 'async drain vs synchronous', measured: `${drainRatio.toFixed(2)}×`, bound: '≥ 0.8×', met: drainRatio >= 0.8 });
  reportFigure({ target: 'P13', what: 'acceptance → first attempt p50 vs a synchronous call p50', measured: `${(startP50 / syncP50).toFixed(2)}×`, bound: '≤ 5×', met: startP50 / syncP50 <= 5 });
} finally {
  await gw.stop();
}
