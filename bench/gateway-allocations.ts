// What the gateway allocates per call on the hello path (issue 31's guard against creeping cost,
// beside bench/gateway-cpu.ts): bytes allocated per request, the GCs they cost, and which
// functions allocate them, for this checkout and optionally a baseline, in interleaved rounds.
//
//   node bench/gateway-allocations.ts [--requests 20000] [--connections 50] [--rounds 2]
//                                     [--baseline <checkout>/gateway/src/main.ts] [--top 25]
//
// Why bytes and not time: what a call allocates depends on the code, not on how loaded the
// machine is, so two checkouts compare on a busy machine where their CPU per request does not;
// and allocation is what the GC's share (13–15 % of the gateway's CPU with V8's helper threads,
// bench/gateway-threads.ts) is paid for. Each gateway runs with bench/lib/allocation-probe.ts
// preloaded (its node options only, not its runtimes'): after a warm-up, a fixed number of hello
// calls (autocannon, closed loop) inside a window the probe records with V8's GCProfiler and
// its sampling heap profiler, objects that died young included. Sandbox on, recording every
// execution (the gateway's defaults).

import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startGateway } from '../test/helpers/platform.ts';
import { pollUntil } from '../test/helpers/wait.ts';
import { autocannon, createHello, median } from './lib/load.ts';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '20000' },
    connections: { type: 'string', default: '50' },
    rounds: { type: 'string', default: '2' },
    baseline: { type: 'string' },
    top: { type: 'string', default: '25' },
  },
});
const REQUESTS = Number(values.requests);
const CONNECTIONS = Number(values.connections);
const ROUNDS = Number(values.rounds);
const TOP = Number(values.top);
for (const [name, n] of Object.entries({ requests: REQUESTS, connections: CONNECTIONS, rounds: ROUNDS, top: TOP })) {
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} wants a whole number ≥ 1, got '${values[name as keyof typeof values]}'`);
}
const PROBE = fileURLToPath(new URL('./lib/allocation-probe.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../', import.meta.url));

interface HeapNode { callFrame: { functionName: string; url: string; lineNumber: number }; selfSize: number; children: HeapNode[] }
interface GcStatistics { statistics: Array<{ gcType: string; cost: number }> }

interface Measure {
  bytesPerRequest: number;
  scavengesPer10k: number;
  fullGcsPer10k: number;
  gcCostUsPerRequest: number;
  /** Self bytes per request by function, and by where its code lives. */
  byFunction: Map<string, number>;
  byPlace: Map<string, number>;
}

/** Where a function's code lives, for the summary: the gateway's own, core, undici, Node's, other. */
function placeOf(url: string): string {
  if (url === '') return '(V8 / native)';
  if (url.startsWith('node:')) return url.startsWith('node:internal/streams') ? 'node: streams' : /node:_http|node:internal\/http/.test(url) ? 'node: http' : 'node: other';
  if (url.includes('/node_modules/undici/')) return 'undici';
  if (url.includes('/gateway/src/')) return 'gateway';
  if (url.includes('/core/src/')) return 'core';
  return 'other';
}

/** Sums a sampling heap profile's self sizes per function and per place. */
function sumProfile(head: HeapNode): { total: number; byFunction: Map<string, number>; byPlace: Map<string, number> } {
  const byFunction = new Map<string, number>();
  const byPlace = new Map<string, number>();
  let total = 0;
  const stack = [head];
  while (stack.length > 0) {
    const node = stack.pop()!;
    stack.push(...node.children);
    if (node.selfSize === 0) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    const where = url === '' ? '' : `${url.replace(/^file:\/\//, '').replace(ROOT, '')}:${lineNumber + 1}`;
    const name = `${functionName || '(anonymous)'} ${where}`.trim();
    total += node.selfSize;
    byFunction.set(name, (byFunction.get(name) ?? 0) + node.selfSize);
    const place = placeOf(url);
    byPlace.set(place, (byPlace.get(place) ?? 0) + node.selfSize);
  }
  return { total, byFunction, byPlace };
}

function perRequest(m: Map<string, number>, requests: number): Map<string, number> {
  return new Map([...m].map(([k, v]) => [k, v / requests]));
}

async function hammer(url: string, amount: number): Promise<{ requests: number; failed: number }> {
  const r = await autocannon({ url, connections: CONNECTIONS, amount });
  return { requests: r.requests.total, failed: r.errors + r.timeouts + r.non2xx };
}

async function measure(main: string | undefined, label: string, dir: string): Promise<Measure> {
  const out = join(dir, label.replace(/\W+/g, '-'));
  const gw = await startGateway({ main, env: { FNHOST_QUIET: '1', FNHOST_BENCH_ALLOC_OUT: out }, nodeArgs: ['--import', PROBE] });
  try {
    const url = await createHello(gw);
    await hammer(url, Math.min(5000, REQUESTS)); // warm: compiled, pools and caches filled
    process.kill(gw.pid, 'SIGUSR2');
    const r = await hammer(url, REQUESTS);
    process.kill(gw.pid, 'SIGUSR2');
    if (r.failed > 0) throw new Error(`${label}: ${r.failed} of ${r.requests} calls failed`);
    await pollUntil(`${label}'s allocation profile`, async () => existsSync(`${out}.gc.json`) || existsSync(`${out}.error`), 30_000, 100);
    if (existsSync(`${out}.error`)) throw new Error(`${label}: ${await readFile(`${out}.error`, 'utf8')}`);
    const gc = JSON.parse(await readFile(`${out}.gc.json`, 'utf8')) as GcStatistics;
    const profile = JSON.parse(await readFile(`${out}.heapprofile`, 'utf8')) as { head: HeapNode };
    const sums = sumProfile(profile.head);
    const scavenges = gc.statistics.filter((s) => s.gcType === 'Scavenge' || s.gcType === 'MinorMarkSweep').length;
    return {
      bytesPerRequest: sums.total / r.requests,
      scavengesPer10k: (scavenges * 10_000) / r.requests,
      fullGcsPer10k: ((gc.statistics.length - scavenges) * 10_000) / r.requests,
      gcCostUsPerRequest: gc.statistics.reduce((n, s) => n + s.cost, 0) / r.requests,
      byFunction: perRequest(sums.byFunction, r.requests),
      byPlace: perRequest(sums.byPlace, r.requests),
    };
  } finally {
    await gw.stop();
  }
}

const targets: Array<{ name: string; main: string | undefined }> = [{ name: 'this checkout', main: undefined }];
if (values.baseline !== undefined) targets.push({ name: 'baseline', main: values.baseline });
const dir = await mkdtemp(join(tmpdir(), 'fnhost-alloc-'));
const load0 = loadavg();
const results = new Map<string, Measure[]>(targets.map((t) => [t.name, []]));
try {
  for (let round = 0; round < ROUNDS; round++) {
    for (const t of round % 2 === 0 ? targets : [...targets].reverse()) results.get(t.name)!.push(await measure(t.main, `${t.name}-${round}`, dir));
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
const load1 = loadavg();

const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
console.log(`fnhost gateway allocations per call — ${new Date().toISOString()} — node ${process.version}`);
console.log(`load average ${load0.map((l) => l.toFixed(2)).join(' ')} → ${load1.map((l) => l.toFixed(2)).join(' ')}; ${fmt(REQUESTS)} hello calls a round after a warm-up, ${CONNECTIONS} connections, ${ROUNDS} interleaved rounds${values.baseline === undefined ? '' : `; baseline ${values.baseline}`}`);
console.log('');
console.log('| gateway | allocated B/request (median) | per round | scavenges / 10k requests | full GCs / 10k requests | GC cost on the main thread µs/request |');
console.log('|---|---|---|---|---|---|');
for (const t of targets) {
  const ms = results.get(t.name)!;
  console.log(`| ${t.name} | ${fmt(median(ms.map((m) => m.bytesPerRequest)))} | ${ms.map((m) => fmt(m.bytesPerRequest)).join(', ')} | ${fmt(median(ms.map((m) => m.scavengesPer10k)), 1)} | ${fmt(median(ms.map((m) => m.fullGcsPer10k)), 1)} | ${fmt(median(ms.map((m) => m.gcCostUsPerRequest)), 1)} |`);
}
if (values.baseline !== undefined) {
  const a = median(results.get('this checkout')!.map((m) => m.bytesPerRequest));
  const b = median(results.get('baseline')!.map((m) => m.bytesPerRequest));
  console.log(`\nthis / baseline allocated per request: ${(a / b).toFixed(3)}×`);
}
// Where this checkout's allocations are made: the last round's profile.
const last = results.get('this checkout')!.at(-1)!;
console.log('\nThis checkout, bytes per request by where the allocating code lives (last round):');
for (const [place, bytes] of [...last.byPlace].sort((x, y) => y[1] - x[1])) console.log(`  ${fmt(bytes).padStart(7)} B  ${place}`);
console.log(`\nThis checkout, the ${TOP} functions allocating most per request (self, last round):`);
for (const [name, bytes] of [...last.byFunction].sort((x, y) => y[1] - x[1]).slice(0, TOP)) console.log(`  ${fmt(bytes).padStart(7)} B  ${name}`);
