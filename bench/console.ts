// Issue 21's figures with console capture on and a handler printing 10 lines per call:
// P2 (execution recording on vs off, with each execution's console output kept) through real
// gateways on one machine, and P4 (sustained ingest, zero loss) of records with their console
// output, through the gateway end to end and into the SQLite store directly.
//
//   node bench/console.ts [--seconds 6] [--connections 50] [--rounds 3] [--records 100000] [--only store]
//
// Three gateways, each with the same printing function, loaded one after the other by autocannon
// in interleaved rounds (2 shared cores: only ratios in one run mean anything):
//   on        recording on, console capture on (the default)
//   no-capture  recording on, FNHOST_CONSOLE_CAPTURE=off
//   off       FNHOST_BENCH_DISABLE_RECORDING=1 and FNHOST_CONSOLE_CAPTURE=off (P2's "off")
// After the load, the "on" gateway's database must hold one record and one console output of 10
// lines per execution the gateway counted (zero loss). Then the SQLite store alone: records in
// the writer's batches of 500, each with its 10-line output put as the internal route does (posts of 32).

import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { parseArgs } from 'node:util';
import { openSqliteStores } from '../core/src/store/sqlite/index.ts';
import type { StoredLog } from '../core/src/stores.ts';
import { startGateway } from '../test/helpers/platform.ts';
import { reportFigure } from './lib/summary.ts';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '6' },
    connections: { type: 'string', default: '50' },
    rounds: { type: 'string', default: '3' },
    records: { type: 'string', default: '100000' },
    only: { type: 'string' },
  },
});
const SECONDS = Number(values.seconds);
const CONNECTIONS = Number(values.connections);
const ROUNDS = Number(values.rounds);
const RECORDS = Number(values.records);
const CHATTY = `export default (req, res) => {
  for (let i = 0; i < 10; i++) console.log('line', i, 'of the request to', req.path);
  res.json({ hello: 'world' });
}`;

const autocannon = (await import('autocannon' as string)).default as (opts: Record<string, unknown>) => Promise<{
  requests: { average: number; total: number };
  latency: { p50: number; p99: number };
  non2xx: number;
  errors: number;
  timeouts: number;
}>;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

type Gateway = Awaited<ReturnType<typeof startGateway>>;

async function withFunction(env: Record<string, string>): Promise<{ gw: Gateway; url: string; id: string }> {
  const gw = await startGateway({ env: { FNHOST_QUIET: '1', ...env } });
  const r = await fetch(`${gw.url}/api/v1/functions`, { method: 'POST', headers: { authorization: `Bearer ${gw.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'chatty', code: CHATTY }) });
  if (r.status !== 201) throw new Error(`create: ${r.status} ${await r.text()}`);
  const fn = (await r.json()) as { function_id: string; invocation_url: string };
  return { gw, url: fn.invocation_url, id: fn.function_id };
}

interface Row {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  total: number;
}

async function load(url: string): Promise<Row> {
  await autocannon({ url, connections: CONNECTIONS, duration: 1 });
  const r = await autocannon({ url, connections: CONNECTIONS, duration: SECONDS });
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors + r.timeouts + r.non2xx, total: r.requests.total };
}

if (values.only !== 'store') await gatewayArms();

async function gatewayArms(): Promise<void> {
const load0 = loadavg();
const arms = {
  on: await withFunction({}),
  noCapture: await withFunction({ FNHOST_CONSOLE_CAPTURE: 'off' }),
  off: await withFunction({ FNHOST_BENCH_DISABLE_RECORDING: '1', FNHOST_CONSOLE_CAPTURE: 'off' }),
};
const runs: Record<keyof typeof arms, Row[]> = { on: [], noCapture: [], off: [] };
try {
  for (let round = 0; round < ROUNDS; round++) {
    for (const name of ['on', 'noCapture', 'off'] as const) runs[name].push(await load(arms[name].url));
  }
  // Zero loss: every execution the "on" gateway counted has its record and its 10-line output.
  const { gw, id } = arms.on;
  const auth = { authorization: `Bearer ${gw.token}` };
  const deadline = Date.now() + 60_000;
  let executions = 0;
  let records = 0;
  let outputs = 0;
  let fullOutputs = 0;
  for (;;) {
    executions = ((await (await fetch(`${gw.url}/api/v1/functions/${id}`, { headers: auth })).json()) as { total_executions: number }).total_executions;
    const db = new DatabaseSync(join(gw.dataDir, 'fnhost.db'), { readOnly: true });
    records = (db.prepare('SELECT count(*) AS n FROM logs').get() as { n: number }).n;
    outputs = (db.prepare('SELECT count(*) AS n FROM console_output').get() as { n: number }).n;
    fullOutputs = (db.prepare("SELECT count(*) AS n FROM console_output WHERE json_array_length(output, '$.lines') = 10").get() as { n: number }).n;
    db.close();
    if ((records === executions && outputs === executions) || Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 500));
  }
  const metrics = await (await fetch(`${gw.url}/metrics`)).text();
  const dropped = Number(/fnhost_log_records_dropped_total (\d+)/.exec(metrics)?.[1] ?? 'NaN');
  const load1 = loadavg();

  const ratio = (a: Row[], b: Row[]) => median(a.map((r, k) => r.rps / b[k]!.rps));
  const p2 = ratio(runs.on, runs.off);
  const captureCost = ratio(runs.on, runs.noCapture);
  const med = (rs: Row[]) => ({ rps: median(rs.map((r) => r.rps)), p50: median(rs.map((r) => r.p50)), p99: median(rs.map((r) => r.p99)), errors: rs.reduce((n, r) => n + r.errors, 0) });
  const on = med(runs.on);
  const noCapture = med(runs.noCapture);
  const off = med(runs.off);

  console.log(`fnhost console-capture bench — ${new Date().toISOString()} — ${cpus().length}× ${cpus()[0]?.model} — node ${process.version}; load average ${load0.map((l) => l.toFixed(2)).join(' ')} → ${load1.map((l) => l.toFixed(2)).join(' ')}`);
  console.log(`autocannon ${CONNECTIONS} connections, ${SECONDS} s each, a handler printing 10 console lines per call; medians of ${ROUNDS} interleaved rounds\n`);
  console.log('| gateway | req/s | p50 ms | p99 ms | errors |');
  console.log('|---|---|---|---|---|');
  console.log(`| recording on, console capture on | ${on.rps.toFixed(0)} | ${on.p50} | ${on.p99} | ${on.errors} |`);
  console.log(`| recording on, capture off | ${noCapture.rps.toFixed(0)} | ${noCapture.p50} | ${noCapture.p99} | ${noCapture.errors} |`);
  console.log(`| recording off, capture off | ${off.rps.toFixed(0)} | ${off.p50} | ${off.p99} | ${off.errors} |`);
  console.log('');
  console.log(`P2  recording (with console output) on / off throughput: ${p2.toFixed(2)}× (target ≥ 0.9×); p99 ${on.p99} vs ${off.p99} ms (target +≤ 1 ms)`);
  console.log(`    capture on / off, recording on: ${captureCost.toFixed(2)}×`);
  console.log(`P4  end to end: ${executions} executions counted, ${records} records, ${outputs} console outputs (${fullOutputs} with all 10 lines), ${dropped} records dropped`);
  reportFigure({ target: 'P2', what: 'recording on / off, console capture on, 10 lines a call', measured: `${p2.toFixed(2)}×`, bound: '≥ 0.9×', met: p2 >= 0.9 });
  reportFigure({ target: 'P2', what: 'p99 added by recording with console capture', measured: `${(on.p99 - off.p99).toFixed(0)} ms`, bound: '≤ 1 ms', met: on.p99 - off.p99 <= 1 });
  const lossless = records === executions && outputs === executions && fullOutputs === executions && dropped === 0;
  reportFigure({ target: 'P4', what: 'gateway end to end with console output: loss', measured: lossless ? `0 of ${executions}` : `${executions - Math.min(records, outputs, fullOutputs)} of ${executions}`, bound: 'zero loss', met: lossless });
} finally {
  for (const arm of Object.values(arms)) await arm.gw.stop();
}
}

// P4 on the SQLite store: records in batches of 500 (the writer's), each with a 10-line output put
// as POST /internal/v1/console does (posts of 32 executions, one unit of work each).
const dir = mkdtempSync(join(tmpdir(), 'fnhost-bench-console-'));
try {
  const stores = openSqliteStores({ path: join(dir, 'fnhost.db') });
  const fnId = randomUUID();
  const output = { lines: Array.from({ length: 10 }, (_, i) => ({ at_ms: i, stream: 'stdout' as const, text: `line ${i} of the request to /orders/12345` })), dropped_lines: 0, dropped_bytes: 0 };
  const start = Date.now() - RECORDS;
  const batch = (from: number, n: number): StoredLog[] => Array.from({ length: n }, (_, i) => ({
    id: `log_${(from + i).toString(36).padStart(20, '0')}`, function_id: fnId, status_code: 200, execution_time_ms: 3, error_message: null,
    executed_at: new Date(start + from + i).toISOString(), trigger: 'http', cold_start: false, wait_ms: 0, expires_at: null,
  }));
  const measure = async (withConsole: boolean, from: number): Promise<number> => {
    const t0 = performance.now();
    for (let at = from; at < from + RECORDS; at += 500) {
      const records = batch(at, 500);
      await stores.logs.insert(records);
      // Posts of 32 executions, as a runtime sends them.
      if (withConsole) for (let i = 0; i < records.length; i += 32) await stores.insight.putConsole(fnId, records.slice(i, i + 32).map((r) => ({ logId: r.id, output })), null, Date.now());
    }
    return RECORDS / ((performance.now() - t0) / 1000);
  };
  const plain = await measure(false, 0);
  const withOutput = await measure(true, RECORDS);
  await stores.close();
  console.log(`P4  SQLite store: ${plain.toFixed(0)} records/s without console output, ${withOutput.toFixed(0)} records/s each with a 10-line output (${RECORDS} records each, batches of 500)`);
  reportFigure({ target: 'P4', what: 'SQLite ingest, each record with a 10-line console output', measured: `${withOutput.toFixed(0)} records/s`, bound: '≥ 20,000 records/s', met: withOutput >= 20_000 });
} finally {
  rmSync(dir, { recursive: true, force: true });
}
process.exit(0);
