// P1's peer yardstick: the gateway vs Knative Serving's queue-proxy in front of the same runtime.
//
//   node bench/queue-proxy.ts [--seconds 6] [--connections 50] [--rounds 3] [--gomaxprocs 1]
//                             [--baseline <checkout>/gateway/src/main.ts] [--skip-paced]
//
// queue-proxy (knative.dev/serving cmd/queue, built from the Go module proxy into
// ~/.cache/fnhost: bench/lib/queue-proxy.ts) binds fixed ports (8012, 8022, 9090, 9091), so the
// bench re-runs itself in a network namespace of its own (`unshare -n`, loopback up): queue-proxy,
// the fnhost runtime it fronts (USER_PORT 8080), the undici hop, the gateway (sandbox on, the
// default; recording every execution) and the load generator all live there and nothing touches
// the machine's own ports. queue-proxy gets the environment Knative's revision reconciler gives
// it, with GOMAXPROCS=1 (one core, like the gateway's one JavaScript thread).
// In interleaved rounds (autocannon, closed loop): the hop, queue-proxy, the gateway, and with
// --baseline the gateway of another checkout. Each proxy row gives its process's CPU per request
// (from /proc/<pid>/stat: the figure the machine's other load moves least). Then the latency each
// proxy adds at half of the gateway's max rate, evenly paced (bench/lib/paced.ts), over the
// runtime called directly, in interleaved rounds.

import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startGateway } from '../test/helpers/platform.ts';
import { paced, type PacedResult } from './lib/paced.ts';
import { startServer, stopAll } from './lib/servers.ts';
import { HELLO, HOP, cpuCell, createHello, load, median, medianRow, signed, type Row } from './lib/load.ts';
import { USER_PORT, buildQueueProxy, startQueueProxy } from './lib/queue-proxy.ts';
import { reportFigure } from './lib/summary.ts';
import { cpuMicros } from './lib/proc.ts';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '6' },
    connections: { type: 'string', default: '50' },
    rounds: { type: 'string', default: '3' },
    gomaxprocs: { type: 'string', default: '1' },
    baseline: { type: 'string' },
    'skip-paced': { type: 'boolean', default: false },
    'cpu-rate': { type: 'string', default: '0' },
  },
});

const bin = buildQueueProxy();

if (process.env.FNHOST_BENCH_NETNS !== '1') {
  // Into a network namespace of our own, loopback up, and run this file again there.
  const r = spawnSync('unshare', ['-n', '--', 'sh', '-c', 'ip link set lo up && exec "$@"', 'sh', process.execPath, ...process.execArgv, fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: 'inherit',
    env: { ...process.env, FNHOST_BENCH_NETNS: '1' },
  });
  process.exit(r.status ?? 1);
}

const SECONDS = Number(values.seconds);
const ROUNDS = Number(values.rounds);
const GOMAXPROCS = Number(values.gomaxprocs);
const o = { connections: Number(values.connections), seconds: SECONDS };
const RUNTIME_MAIN = fileURLToPath(new URL('../runtime-image/src/main.ts', import.meta.url));

const dir = await mkdtemp(join(tmpdir(), 'fnhost-bench-qp-'));
const stops: Array<() => unknown> = [];
try {
  const file = join(dir, 'hello.mjs');
  await writeFile(file, HELLO);
  const runtimeUrl = await startServer([RUNTIME_MAIN], { PORT: String(USER_PORT), HOST: '127.0.0.1', FNHOST_FUNCTION_FILE: file, FNHOST_FUNCTION_ID: '00000000-0000-4000-8000-000000000001', FNHOST_FUNCTION_NAME: 'hello' });
  const hopUrl = await startServer(['-e', HOP(runtimeUrl)]);
  const qp = await startQueueProxy(bin, GOMAXPROCS);
  stops.push(() => qp.process.kill('SIGTERM'));
  const gw = await startGateway({ env: { FNHOST_QUIET: '1' } });
  stops.push(() => gw.stop());
  const invokeUrl = await createHello(gw);
  const targets: Array<readonly [string, string, number | undefined]> = [
    ['undici hop → runtime', hopUrl + '/', undefined],
    [`queue-proxy (GOMAXPROCS=${GOMAXPROCS}) → runtime`, qp.url + '/', qp.process.pid!],
    ['gateway → runtime (sandbox on, recording)', invokeUrl, gw.pid],
  ];
  if (values.baseline !== undefined) {
    const b = await startGateway({ main: values.baseline, env: { FNHOST_QUIET: '1' } });
    stops.push(() => b.stop());
    targets.push(['baseline gateway → runtime', await createHello(b), b.pid]);
  }
  const load0 = loadavg();
  const runs: Row[][] = targets.map(() => []);
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, [name, url, pid]] of targets.entries()) runs[i]!.push(await load(name, url, pid, o));
  }
  // CPU per request at one fixed, evenly paced rate for every proxy (--cpu-rate): on a busy
  // machine the closed-loop rates differ, and with them how much each request shares the
  // per-wakeup and per-interval costs; at the same rate only the per-call work differs.
  const CPU_RATE = Number(values['cpu-rate']);
  const fixedCpu: number[][] = targets.map(() => []);
  if (CPU_RATE > 0) {
    for (let round = 0; round < ROUNDS; round++) {
      for (const [i, [, url, pid]] of targets.entries()) {
        if (pid === undefined) continue;
        const t = { origin: new URL(url).origin, path: new URL(url).pathname };
        await paced(t, CPU_RATE, 1);
        const c0 = cpuMicros([pid]);
        const r = await paced(t, CPU_RATE, SECONDS);
        fixedCpu[i]!.push((cpuMicros([pid]) - c0) / (r.achievedRate * SECONDS));
      }
    }
  }
  const load1 = loadavg();
  const rows = runs.map(medianRow);
  const ratio = (a: number, b: number) => median(runs[a]!.map((r, k) => r.rps / runs[b]![k]!.rps));
  const cpuRatio = (a: number, b: number) => median(runs[a]!.map((r, k) => r.cpuUs / runs[b]![k]!.cpuUs));

  // Added latency at half of the gateway's max rate, evenly paced, interleaved with the runtime direct.
  const rate = Math.floor(rows[2]!.rps / 2);
  const target = (url: string) => ({ origin: new URL(url).origin, path: new URL(url).pathname + new URL(url).search });
  const paths = { direct: target(runtimeUrl + '/'), queueProxy: target(qp.url + '/'), gateway: target(invokeUrl) };
  const half: Array<Record<keyof typeof paths, PacedResult>> = [];
  if (!values['skip-paced']) {
    for (const t of Object.values(paths)) await paced(t, rate, 1); // warm-up
    for (let round = 0; round < ROUNDS; round++) {
      half.push({ direct: await paced(paths.direct, rate, SECONDS), queueProxy: await paced(paths.queueProxy, rate, SECONDS), gateway: await paced(paths.gateway, rate, SECONDS) });
    }
  }
  const load2 = loadavg();

  const fmtLoad = (l: number[]) => l.map((x) => x.toFixed(2)).join(' ');
  console.log(`fnhost gateway vs Knative queue-proxy bench — ${new Date().toISOString()} — ${cpus().length}× ${cpus()[0]?.model} — node ${process.version}`);
  console.log(`load average ${fmtLoad(load0)} → ${fmtLoad(load1)} → ${fmtLoad(load2)}; autocannon ${o.connections} connections, ${SECONDS} s each, GET of a JSON hello; medians of ${ROUNDS} interleaved rounds; own network namespace\n`);
  console.log('| target | req/s | p50 ms | p99 ms | errors | proxy CPU µs/req |');
  console.log('|---|---|---|---|---|---|');
  for (const r of rows) console.log(`| ${r.name} | ${r.rps.toFixed(0)} | ${r.p50} | ${r.p99} | ${r.errors} | ${cpuCell(r.cpuUs)} |`);
  console.log('');
  if (CPU_RATE > 0) {
    console.log(`CPU µs per request at ${CPU_RATE} req/s evenly paced (median of ${ROUNDS} interleaved rounds): ` + targets.map(([name], i) => (fixedCpu[i]!.length === 0 ? '' : `${name} ${median(fixedCpu[i]!).toFixed(0)}`)).filter((x) => x !== '').join('; '));
  }
  const rps = ratio(2, 1);
  const cpu = cpuRatio(2, 1);
  const p1 = ratio(2, 0);
  console.log(`gateway / queue-proxy throughput: ${rps.toFixed(2)}× (target ≥ 1.0×); CPU per request ${cpu.toFixed(2)}× (${cpuCell(rows[2]!.cpuUs)} vs ${cpuCell(rows[1]!.cpuUs)} µs; target ≤ 1.0×)`);
  console.log(`gateway / undici hop throughput (P1): ${p1.toFixed(2)}× (target ≥ 0.9×); queue-proxy / hop ${ratio(1, 0).toFixed(2)}×`);
  if (values.baseline !== undefined) {
    console.log(`baseline (${values.baseline}): / queue-proxy ${ratio(3, 1).toFixed(2)}×, / hop ${ratio(3, 0).toFixed(2)}×, CPU ${cpuCell(rows[3]!.cpuUs)} µs/req; this / baseline throughput ${ratio(2, 3).toFixed(2)}×, CPU ${cpuRatio(2, 3).toFixed(2)}×`);
  }
  if (half.length > 0) {
    const added = (k: 'queueProxy' | 'gateway', p: 'p50' | 'p99') => median(half.map((h) => h[k][p] - h.direct[p]));
    const maxLag = Math.max(...half.flatMap((h) => Object.values(h).map((r) => r.maxSendLagMs)));
    console.log(`added latency at half of the gateway's max, ${rate} req/s evenly paced (median of per-round differences over the runtime direct; generator's worst send lag ${maxLag.toFixed(1)} ms):`);
    console.log(`    gateway p50 ${signed(added('gateway', 'p50'))} ms, p99 ${signed(added('gateway', 'p99'))} ms; queue-proxy p50 ${signed(added('queueProxy', 'p50'))} ms, p99 ${signed(added('queueProxy', 'p99'))} ms`);
    reportFigure({ target: 'P1', what: `gateway added p99 at half load (${rate} req/s, paced), queue-proxy ${signed(added('queueProxy', 'p99'))} ms`, measured: `${signed(added('gateway', 'p99'))} ms`, bound: '≤ 2 ms', met: added('gateway', 'p99') <= 2 });
  }
  reportFigure({ target: 'P1', what: `gateway / queue-proxy throughput (GOMAXPROCS=${GOMAXPROCS})`, measured: `${rps.toFixed(2)}×`, bound: '≥ 1.0×', met: rps >= 1 });
  reportFigure({ target: 'P1', what: 'gateway / queue-proxy CPU per request', measured: `${cpu.toFixed(2)}× (${cpuCell(rows[2]!.cpuUs)} vs ${cpuCell(rows[1]!.cpuUs)} µs)`, bound: '≤ 1.0×', met: cpu <= 1 });
} finally {
  for (const stop of stops.reverse()) await stop();
  stopAll();
  await rm(dir, { recursive: true, force: true });
}
