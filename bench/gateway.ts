// P1 (gateway invocation path) and P5 (create → first 200) on one machine.
//
//   node bench/gateway.ts [--seconds 6] [--connections 50] [--rounds 3] [--p5-rounds 9] [--only p5]
//                         [--baseline <checkout>/gateway/src/main.ts] [--skip-paced]
//
// Four servers, each in its own process, loaded one after the other by
// autocannon from this process (so on 2 shared cores only ratios in one run
// mean anything):
//   bare    a node:http hello world
//   runtime the fnhost runtime (runtime-image/src/main.ts) serving a hello function, called directly
//   hop     a minimal node:http server proxying to that runtime with an undici Pool (P1's yardstick)
//   gateway the real gateway (test/helpers/platform.ts) invoking the same function, logs recorded
//   gateway, recording off   the same with FNHOST_BENCH_DISABLE_RECORDING=1 (P2)
//   baseline (--baseline) the gateway of another checkout (its own node_modules), recording on and
//            off, in the same interleaved rounds: a change's before and after in one run
// Each gateway row also gives the gateway process's CPU per request (µs), the figure the
// machine's other load moves least (a guard against creeping per-call cost, issue 31).
// Then the latency added by the gateway at half of its max rate (an evenly paced open-loop
// generator, bench/lib/paced.ts, gateway and runtime direct in interleaved rounds), and P5:
// function create → first 200 through a gateway with the warm pool (FNHOST_WARM_POOL=1, the
// default) and through one without it (0), vs `node -e 0`, in interleaved rounds.

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startGateway } from '../test/helpers/platform.ts';
import { paced, type PacedResult } from './lib/paced.ts';
import { count, nodeStartMs, poolReady } from './lib/pool.ts';
import { startServer, stopAll } from './lib/servers.ts';
import { HELLO, HOP, cpuCell, load as loadTarget, median, medianRow, signed, type Row } from './lib/load.ts';
import { reportFigure, type Figure } from './lib/summary.ts';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '6' },
    connections: { type: 'string', default: '50' },
    rounds: { type: 'string', default: '3' },
    'p5-rounds': { type: 'string', default: '9' },
    only: { type: 'string' },
    baseline: { type: 'string' },
    'skip-paced': { type: 'boolean', default: false },
  },
});
const SECONDS = Number(values.seconds);
/** The machine is shared: the targets are measured in interleaved rounds and the median of each is kept. */
const ROUNDS = Number(values.rounds);
const CONNECTIONS = Number(values.connections);
const P5_ROUNDS = Number(values['p5-rounds']);
const RUNTIME_MAIN = fileURLToPath(new URL('../runtime-image/src/main.ts', import.meta.url));
const LOAD = { connections: CONNECTIONS, seconds: SECONDS };

const BARE = `
const http = require('node:http');
const body = JSON.stringify({ hello: 'world' });
const s = http.createServer((req, res) => { res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }); res.end(body); });
s.keepAliveTimeout = 65000;
s.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: s.address().port })));`;

type Gateway = Awaited<ReturnType<typeof startGateway>>;

async function createFunction(gw: Gateway, name: string): Promise<{ function_id: string; invocation_url: string }> {
  const r = await fetch(`${gw.url}/api/v1/functions`, { method: 'POST', headers: { authorization: `Bearer ${gw.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ name, code: HELLO }) });
  if (r.status !== 201) throw new Error(`create ${name}: ${r.status} ${await r.text()}`);
  return (await r.json()) as { function_id: string; invocation_url: string };
}

async function deleteFunction(gw: Gateway, id: string): Promise<void> {
  await (await fetch(`${gw.url}/api/v1/functions/${id}`, { method: 'DELETE', headers: { authorization: `Bearer ${gw.token}` } })).arrayBuffer();
}

/** Milliseconds from the create request to the end of the first 200 of the new function. */
async function createToFirst200(gw: Gateway, name: string): Promise<number> {
  const t0 = performance.now();
  const fn = await createFunction(gw, name);
  for (;;) {
    const r = await fetch(fn.invocation_url);
    await r.arrayBuffer();
    if (r.status === 200) break;
  }
  const ms = performance.now() - t0;
  await deleteFunction(gw, fn.function_id);
  return ms;
}

/** P5 in interleaved rounds: node -e 0, a create on the pooled gateway (pool refilled first), a create on the pool-less one. */
async function measureP5(): Promise<{ lines: string[]; figures: Figure[] }> {
  const pooled = await startGateway({ env: { FNHOST_QUIET: '1', FNHOST_WARM_POOL: '1' } });
  const cold = await startGateway({ env: { FNHOST_QUIET: '1', FNHOST_WARM_POOL: '0' } });
  const load0 = loadavg();
  try {
    // Warm-up: each gateway's compile cache (its data dir) is filled by its first runtimes.
    let takes = 0;
    for (let i = 0; i < 2; i++) {
      await poolReady(pooled, takes + 1);
      await createToFirst200(pooled, `warm-${i}`);
      takes++;
      await createToFirst200(cold, `warm-${i}`);
    }
    const node: number[] = [];
    const withPool: number[] = [];
    const withoutPool: number[] = [];
    for (let round = 0; round < P5_ROUNDS; round++) {
      node.push(nodeStartMs());
      await poolReady(pooled, takes + 1);
      withPool.push(await createToFirst200(pooled, `p5-${round}`));
      takes++;
      withoutPool.push(await createToFirst200(cold, `p5-${round}`));
    }
    const served = count(pooled.output(), '"warm_pool":true');
    const load1 = loadavg();
    const n = median(node);
    const fmt = (xs: number[]) => `median ${median(xs).toFixed(0)} ms (min ${Math.min(...xs).toFixed(0)}, max ${Math.max(...xs).toFixed(0)})`;
    const ratio = median(withPool) / n;
    const figures: Figure[] = [{ target: 'P5', what: 'create → first 200 (warm pool) vs node -e 0', measured: `${ratio.toFixed(2)}×`, bound: '≤ 3×', met: ratio <= 3 }];
    const lines = [
      `P5  create → first 200, ${P5_ROUNDS} interleaved rounds after 2 warm-up rounds; load average ${load0.map((l) => l.toFixed(2)).join(' ')} → ${load1.map((l) => l.toFixed(2)).join(' ')}`,
      `    node -e 0:             ${fmt(node)}`,
      `    warm pool (1):         ${fmt(withPool)} → ${(median(withPool) / n).toFixed(2)}× node -e 0 (target ≤ 3×); ${served} of ${takes} starts served by the pool`,
      `    no pool (0):           ${fmt(withoutPool)} → ${(median(withoutPool) / n).toFixed(2)}× node -e 0`,
    ];
    return { lines, figures };
  } finally {
    await pooled.stop();
    await cold.stop();
  }
}

if (values.only === 'p5') {
  console.log(`fnhost P5 bench — ${new Date().toISOString()} — ${cpus().length}× ${cpus()[0]?.model} — node ${process.version}`);
  const { lines, figures } = await measureP5();
  for (const line of lines) console.log(line);
  for (const figure of figures) reportFigure(figure);
  process.exit(0);
}

const dir = await mkdtemp(join(tmpdir(), 'fnhost-bench-'));
try {
  const file = join(dir, 'hello.mjs');
  await writeFile(file, HELLO);
  const bareUrl = await startServer(['-e', BARE]);
  const runtimeUrl = await startServer([RUNTIME_MAIN], { PORT: '0', HOST: '127.0.0.1', FNHOST_FUNCTION_FILE: file, FNHOST_FUNCTION_ID: '00000000-0000-4000-8000-000000000001', FNHOST_FUNCTION_NAME: 'hello' });
  const hopUrl = await startServer(['-e', HOP(runtimeUrl)]);
  const gw = await startGateway({ env: { FNHOST_QUIET: '1' } });
  const auth = { authorization: `Bearer ${gw.token}`, 'content-type': 'application/json' };
  const created = await (await fetch(`${gw.url}/api/v1/functions`, { method: 'POST', headers: auth, body: JSON.stringify({ name: 'hello', code: HELLO }) })).json();
  const invokeUrl = created.invocation_url as string;

  // P2: the same gateway with execution recording off (bench-only switch).
  const gwOff = await startGateway({ env: { FNHOST_QUIET: '1', FNHOST_BENCH_DISABLE_RECORDING: '1' } });
  const authOff = { authorization: `Bearer ${gwOff.token}`, 'content-type': 'application/json' };
  const createdOff = await (await fetch(`${gwOff.url}/api/v1/functions`, { method: 'POST', headers: authOff, body: JSON.stringify({ name: 'hello', code: HELLO }) })).json();

  // The baseline checkout's gateway, recording on and off, the same function.
  const baselines: Gateway[] = [];
  const baselineTargets: Array<readonly [string, string, number]> = [];
  if (values.baseline !== undefined) {
    for (const [name, env] of [['baseline gateway → runtime', {}], ['baseline gateway, recording off', { FNHOST_BENCH_DISABLE_RECORDING: '1' }]] as const) {
      const b = await startGateway({ main: values.baseline, env: { FNHOST_QUIET: '1', ...env } });
      baselines.push(b);
      const fn = await (await fetch(`${b.url}/api/v1/functions`, { method: 'POST', headers: { authorization: `Bearer ${b.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'hello', code: HELLO }) })).json();
      baselineTargets.push([name, fn.invocation_url as string, b.pid]);
    }
  }
  const targets: Array<readonly [string, string, number | undefined]> = [
    ['bare node:http', bareUrl, undefined],
    ['runtime direct', runtimeUrl + '/', undefined],
    ['undici hop → runtime', hopUrl + '/', undefined],
    ['gateway → runtime', invokeUrl, gw.pid],
    ['gateway, recording off', createdOff.invocation_url as string, gwOff.pid],
    ...baselineTargets,
  ];
  const runs: Row[][] = targets.map(() => []);
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, [name, url, pid]] of targets.entries()) runs[i]!.push(await loadTarget(name, url, pid, LOAD));
  }
  for (const b of baselines) await b.stop();
  const rows = runs.map(medianRow);
  const [bare, runtime, hop, gateway, noRecord] = rows as [Row, Row, Row, Row, Row];
  const ratio = (a: number, b: number) => median(runs[a]!.map((r, k) => r.rps / runs[b]![k]!.rps));
  const p1Ratio = ratio(3, 2);
  const p2Ratio = ratio(3, 4);
  await gwOff.stop();
  // Latency at half of the gateway's max rate, evenly paced, gateway vs the runtime directly, in interleaved rounds.
  const rate = Math.floor(gateway.rps / 2);
  const target = (url: string) => ({ origin: new URL(url).origin, path: new URL(url).pathname + new URL(url).search });
  await paced(target(runtimeUrl + '/'), rate, 1); // warm-up
  await paced(target(invokeUrl), rate, 1);
  const halfRuns: Array<{ direct: PacedResult; gateway: PacedResult }> = [];
  for (let round = 0; round < (values['skip-paced'] ? 1 : ROUNDS); round++) {
    halfRuns.push({ direct: await paced(target(runtimeUrl + '/'), rate, SECONDS), gateway: await paced(target(invokeUrl), rate, SECONDS) });
  }
  const pacedRow = (name: string, rs: PacedResult[]): Row => ({ name, rps: median(rs.map((r) => r.achievedRate)), p50: median(rs.map((r) => r.p50)), p99: median(rs.map((r) => r.p99)), errors: rs.reduce((n, r) => n + r.errors, 0), cpuUs: Number.NaN });
  const halfRuntime = pacedRow('runtime direct @ half, paced', halfRuns.map((r) => r.direct));
  const halfGateway = pacedRow('gateway @ half, paced', halfRuns.map((r) => r.gateway));
  const addedP50 = median(halfRuns.map((r) => r.gateway.p50 - r.direct.p50));
  const addedP99 = median(halfRuns.map((r) => r.gateway.p99 - r.direct.p99));
  const maxLag = Math.max(...halfRuns.flatMap((r) => [r.direct.maxSendLagMs, r.gateway.maxSendLagMs]));

  const metrics = await (await fetch(`${gw.url}/metrics`)).text();
  const dropped = /fnhost_log_records_dropped_total (\d+)/.exec(metrics)?.[1];
  await gw.stop();
  const { lines: p5, figures: p5Figures } = values['skip-paced'] ? { lines: [], figures: [] } : await measureP5();

  console.log(`fnhost gateway bench — ${new Date().toISOString()} — ${cpus().length}× ${cpus()[0]?.model} — load ${loadavg().map((l) => l.toFixed(2)).join(' ')} — node ${process.version}`);
  console.log(`autocannon ${CONNECTIONS} connections, ${SECONDS} s each, GET of a JSON hello; medians of ${ROUNDS} interleaved rounds\n`);
  console.log('| target | req/s | p50 ms | p99 ms | errors | gateway CPU µs/req |');
  console.log('|---|---|---|---|---|---|');
  for (const r of rows) console.log(`| ${r.name} | ${r.rps.toFixed(0)} | ${r.p50} | ${r.p99} | ${r.errors} | ${cpuCell(r.cpuUs)} |`);
  for (const r of [halfRuntime, halfGateway]) console.log(`| ${r.name} | ${r.rps.toFixed(0)} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} | ${r.errors} | — |`);
  console.log('');
  console.log(`P1  gateway / undici hop throughput: ${p1Ratio.toFixed(2)}× (median of the per-round ratios; target ≥ 0.9×)`);
  console.log(`P1  added latency at half load, ${rate} req/s evenly paced (open loop, latency from each request's due time; ${ROUNDS} interleaved rounds of ${SECONDS} s, median of per-round differences; generator's worst send lag ${maxLag.toFixed(1)} ms): p50 ${signed(addedP50)} ms, p99 ${signed(addedP99)} ms (targets ≤ 1 ms, ≤ 2 ms)`);
  console.log(`    gateway / runtime direct: ${(gateway.rps / runtime.rps).toFixed(2)}×; gateway / bare: ${(gateway.rps / bare.rps).toFixed(2)}×; log records dropped: ${dropped}`);
  console.log(`P2  recording on / off throughput: ${p2Ratio.toFixed(2)}× (target ≥ 0.9×); p99 ${gateway.p99} vs ${noRecord.p99} ms (target +≤ 1 ms)`);
  console.log(`P2b runtime direct / bare node:http: ${(runtime.rps / bare.rps).toFixed(2)}× (target ≥ 0.7×)`);
  console.log(`    gateway CPU per request: recording on ${cpuCell(gateway.cpuUs)} µs, off ${cpuCell(noRecord.cpuUs)} µs`);
  if (baselineTargets.length > 0) {
    const [baseOn, baseOff] = [rows[5]!, rows[6]!];
    console.log(`    baseline (${values.baseline}): P1 ${ratio(5, 2).toFixed(2)}×, P2 ${ratio(5, 6).toFixed(2)}×; CPU per request on ${cpuCell(baseOn.cpuUs)} µs, off ${cpuCell(baseOff.cpuUs)} µs`);
    console.log(`    this / baseline throughput, same rounds: recording on ${ratio(3, 5).toFixed(2)}×, off ${ratio(4, 6).toFixed(2)}×`);
  }
  for (const line of p5) console.log(line);
  reportFigure({ target: 'P1', what: 'gateway / undici hop throughput', measured: `${p1Ratio.toFixed(2)}×`, bound: '≥ 0.9×', met: p1Ratio >= 0.9 });
  reportFigure({ target: 'P1', what: `added p50 at half load (${rate} req/s, paced)`, measured: `${signed(addedP50)} ms`, bound: '≤ 1 ms', met: addedP50 <= 1 });
  reportFigure({ target: 'P1', what: `added p99 at half load (${rate} req/s, paced)`, measured: `${signed(addedP99)} ms`, bound: '≤ 2 ms', met: addedP99 <= 2 });
  reportFigure({ target: 'P2', what: 'recording on / off throughput', measured: `${p2Ratio.toFixed(2)}×`, bound: '≥ 0.9×', met: p2Ratio >= 0.9 });
  reportFigure({ target: 'P2b', what: 'runtime direct / bare node:http', measured: `${(runtime.rps / bare.rps).toFixed(2)}×`, bound: '≥ 0.7×', met: runtime.rps / bare.rps >= 0.7 });
  for (const figure of p5Figures) reportFigure(figure);
} finally {
  stopAll();
  await rm(dir, { recursive: true, force: true });
}
