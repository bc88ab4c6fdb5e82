// The cost of request recording (record_requests, docs/replay.md) on P1: the
// gateway's throughput with recording on vs the same function with it off,
// and each against the P1 yardstick (a minimal undici hop in front of a
// runtime of the same handler).
//
//   node bench/replay.ts [--seconds 6] [--connections 50] [--rounds 3] [--body-bytes 1024] [--baseline <checkout>/gateway/src/main.ts] [--rate <req/s>]
//
// One gateway, two functions with the same handler: `plain` (recording off)
// and `recorded` (on, a header and two JSON paths masked), called with a
// POST of a JSON body of --body-bytes, which the handler echoes (so both the
// request and the response bodies are copied, masked and stored). Targets run
// in interleaved rounds on the shared machine; medians of per-round ratios.
// The gateway's own CPU time per request (utime + stime of its process over
// the measured seconds, /proc/<pid>/stat) is printed beside: on a shared,
// loaded machine it is steadier than req/s. --baseline runs the same two
// functions on a gateway started from another checkout (before a change), in
// the same rounds: before and after under the same load. Each round starts
// a fresh gateway per checkout and runs one at a time, in alternating order.

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startGateway, type RunningGateway } from '../test/helpers/platform.ts';
import { cpuMicros } from './lib/proc.ts';
import { startServer, stopAll } from './lib/servers.ts';
import { reportFigure } from './lib/summary.ts';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '6' },
    connections: { type: 'string', default: '50' },
    rounds: { type: 'string', default: '3' },
    'body-bytes': { type: 'string', default: '1024' },
    baseline: { type: 'string' },
    rate: { type: 'string' },
  },
});
const SECONDS = Number(values.seconds);
const ROUNDS = Number(values.rounds);
const CONNECTIONS = Number(values.connections);
const BODY_BYTES = Number(values['body-bytes']);
/** --rate: every target gets this many req/s (autocannon overallRate), so CPU per request compares at the same load and batch sizes; req/s ratios then mean nothing. */
const RATE = values.rate === undefined ? undefined : Number(values.rate);
const RUNTIME_MAIN = fileURLToPath(new URL('../runtime-image/src/main.ts', import.meta.url));
const UNDICI = fileURLToPath(import.meta.resolve('undici'));
const ECHO = `export default (req, res) => res.json({ ok: true, got: req.body })`;

const autocannon = (await import('autocannon' as string)).default as (opts: Record<string, unknown>) => Promise<{
  requests: { average: number };
  latency: { p50: number; p99: number };
  non2xx: number;
  errors: number;
  timeouts: number;
}>;

const HOP = (upstream: string) => `
const http = require('node:http');
const { Pool } = require(${JSON.stringify(UNDICI)});
const pool = new Pool(${JSON.stringify(upstream)}, { connections: 128 });
const s = http.createServer(async (req, res) => {
  try {
    const chunks = []; for await (const c of req) chunks.push(c);
    const r = await pool.request({ path: req.url, method: req.method, headers: req.headers, body: Buffer.concat(chunks) });
    const data = Buffer.from(await r.body.arrayBuffer());
    res.writeHead(r.statusCode, { 'content-type': r.headers['content-type'], 'content-length': data.length });
    res.end(data);
  } catch (e) { res.writeHead(502); res.end(); }
});
s.keepAliveTimeout = 65000;
s.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: s.address().port })));`;



function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

// A JSON body of about BODY_BYTES with a card number and IBANs to mask.
const payload = JSON.stringify({ card: { number: '4111111111111111', holder: 'Ada Lovelace' }, items: [{ iban: 'DE89370400440532013000' }], note: 'x'.repeat(Math.max(0, BODY_BYTES - 120)) });
const request = { method: 'POST', body: payload, headers: { 'content-type': 'application/json', 'x-card-token': 'tok_123', authorization: 'Bearer caller' } };

/** What the recorded function stored: its records, and the newest one's request body (masked?). */
async function storedSample(gw: RunningGateway): Promise<{ records: number; bodyBytes: number; masked: boolean }> {
  const auth = { authorization: `Bearer ${gw.token}` };
  const logs = await (await fetch(`${gw.url}/api/v1/functions/recorded/logs?limit=1`, { headers: auth })).json() as { logs: { id: string }[]; pagination: { totalCount: number } };
  const stored = await (await fetch(`${gw.url}/api/v1/functions/recorded/logs/${logs.logs[0]!.id}/request`, { headers: auth })).json() as { request?: { body?: { data?: string } } };
  const data = stored.request?.body?.data ?? '';
  return { records: logs.pagination.totalCount, bodyBytes: Buffer.byteLength(data), masked: data.includes('[redacted]') && !data.includes('4111111111111111') };
}

interface Row { name: string; rps: number; p50: number; p99: number; errors: number; cpuUs: number }

/** `pid`: the process whose CPU time per request is measured (the gateway's; the hop's is not known). */
async function load(name: string, url: string, pid?: number): Promise<Row> {
  await autocannon({ url, connections: CONNECTIONS, duration: 1, ...request });
  const cpu0 = pid === undefined ? Number.NaN : cpuMicros([pid]);
  const r = await autocannon({ url, connections: CONNECTIONS, duration: SECONDS, ...request, ...(RATE === undefined ? {} : { overallRate: RATE }) });
  const cpu = (pid === undefined ? Number.NaN : cpuMicros([pid])) - cpu0;
  return { name, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors + r.timeouts + r.non2xx, cpuUs: cpu / (r.requests.average * SECONDS) };
}

const dir = await mkdtemp(join(tmpdir(), 'fnhost-bench-replay-'));
try {
  const file = join(dir, 'echo.mjs');
  await writeFile(file, ECHO);
  const runtimeUrl = await startServer([RUNTIME_MAIN], { PORT: '0', HOST: '127.0.0.1', FNHOST_FUNCTION_FILE: file, FNHOST_FUNCTION_ID: '00000000-0000-4000-8000-000000000002', FNHOST_FUNCTION_NAME: 'echo' });
  const hopUrl = await startServer(['-e', HOP(runtimeUrl)]);
  const recording = { record_requests: { enabled: true, redact: { headers: ['x-card-token'], json_paths: ['$..card.number', '$.items[*].iban'] } } };
  const create = async (on: RunningGateway, name: string, extra: Record<string, unknown>) => {
    const auth = { authorization: `Bearer ${on.token}`, 'content-type': 'application/json' };
    const r = await fetch(`${on.url}/api/v1/functions`, { method: 'POST', headers: auth, body: JSON.stringify({ name, code: ECHO, ...extra }) });
    if (r.status !== 201) throw new Error(`create ${name}: ${r.status} ${await r.text()}`);
    return ((await r.json()) as { invocation_url: string }).invocation_url;
  };
  // Rows: the hop, this checkout off and on, then the baseline's off and on.
  const names = ['undici hop → runtime', 'gateway, recording off', 'gateway, recording on', 'baseline gateway, recording off', 'baseline gateway, recording on'];
  const sides = values.baseline === undefined ? [undefined] : [undefined, values.baseline];
  const runs: Row[][] = names.slice(0, 1 + 2 * sides.length).map(() => []);
  let sample: { records: number; bodyBytes: number; masked: boolean } | undefined;
  for (let round = 0; round < ROUNDS; round++) {
    runs[0]!.push(await load(names[0]!, hopUrl + '/'));
    // One gateway at a time, fresh each round, the two checkouts in alternating order: a second
    // gateway running beside the first measured 10-50 % slower than the same code in the first.
    for (const k of round % 2 === 0 ? sides.keys() : [...sides.keys()].reverse()) {
      const gw = await startGateway({ env: { FNHOST_QUIET: '1' }, ...(sides[k] === undefined ? {} : { main: sides[k] }) });
      try {
        const plain = await create(gw, 'plain', {});
        const recorded = await create(gw, 'recorded', recording);
        // A fresh process: both paths run hot before either is measured.
        for (const url of [plain, recorded, plain, recorded]) await autocannon({ url, connections: CONNECTIONS, duration: 1, ...request });
        runs[1 + 2 * k]!.push(await load(names[1 + 2 * k]!, plain, gw.pid));
        runs[2 + 2 * k]!.push(await load(names[2 + 2 * k]!, recorded, gw.pid));
        if (k === 0) sample = await storedSample(gw);
      } finally {
        await gw.stop();
      }
    }
  }
  const ratio = (a: number, b: number) => median(runs[a]!.map((r, k) => r.rps / runs[b]![k]!.rps));
  const rows = runs.map((rs) => ({ name: rs[0]!.name, rps: median(rs.map((r) => r.rps)), p50: median(rs.map((r) => r.p50)), p99: median(rs.map((r) => r.p99)), errors: rs.reduce((n, r) => n + r.errors, 0), cpuUs: median(rs.map((r) => r.cpuUs)) }));

  console.log(`fnhost record_requests bench — ${new Date().toISOString()} — ${cpus().length}× ${cpus()[0]?.model} — load ${loadavg().map((l) => l.toFixed(2)).join(' ')} — node ${process.version}`);
  console.log(`autocannon ${CONNECTIONS} connections, ${SECONDS} s each, POST of a ${payload.length}-byte JSON body echoed back; medians of ${ROUNDS} interleaved rounds\n`);
  console.log('| target | req/s | p50 ms | p99 ms | errors | gateway CPU µs/request |');
  console.log('|---|---|---|---|---|---|');
  for (const r of rows) console.log(`| ${r.name} | ${r.rps.toFixed(0)} | ${r.p50} | ${r.p99} | ${r.errors} | ${Number.isNaN(r.cpuUs) ? '—' : r.cpuUs.toFixed(0)} |`);
  const off = ratio(1, 0);
  const on = ratio(2, 0);
  const onOff = ratio(2, 1);
  console.log('');
  console.log(`P1  gateway / undici hop, recording off: ${off.toFixed(2)}×; recording on: ${on.toFixed(2)}× (target ≥ 0.8×)`);
  console.log(`    gateway CPU per request: recording off ${rows[1]!.cpuUs.toFixed(0)} µs, on ${rows[2]!.cpuUs.toFixed(0)} µs (+${(rows[2]!.cpuUs - rows[1]!.cpuUs).toFixed(0)} µs)`);
  if (rows.length > 3) {
    console.log(`    baseline: gateway / hop off ${ratio(3, 0).toFixed(2)}×, on ${ratio(4, 0).toFixed(2)}×; on / off ${ratio(4, 3).toFixed(2)}×; CPU per request off ${rows[3]!.cpuUs.toFixed(0)} µs, on ${rows[4]!.cpuUs.toFixed(0)} µs (+${(rows[4]!.cpuUs - rows[3]!.cpuUs).toFixed(0)} µs)`);
  }
  console.log(`    recording on / off: ${onOff.toFixed(2)}×; last round: ${sample!.records} records of the recorded function; a stored request body: ${sample!.bodyBytes} bytes, masked: ${sample!.masked}`);
  reportFigure({ target: 'P1', what: 'gateway / undici hop with record_requests on (1 KiB JSON body echoed)', measured: `${on.toFixed(2)}×`, bound: '≥ 0.8×', met: on >= 0.8 });
  reportFigure({ target: 'P1', what: 'record_requests on / off throughput', measured: `${onOff.toFixed(2)}×`, bound: '(cost)', met: true });
} finally {
  stopAll();
  await rm(dir, { recursive: true, force: true });
}
