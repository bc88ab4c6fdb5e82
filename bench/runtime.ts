// P2b: the runtime answering directly vs a bare node:http hello world, side by side in one run;
// and P5's second half, the runtime's idle RSS (≤ 50 MB), beside what Node itself costs.
//
//   node bench/runtime.ts [seconds] [connections] [rss rounds (0: P2b only)] [sample times, ms after the first answer: 1500,8000]
//   BENCH_RUNTIME_BEFORE=/other/checkout/runtime-image/src/main.ts node bench/runtime.ts …
//
// With BENCH_RUNTIME_BEFORE, another runtime (a checkout of an earlier commit) is measured in the
// same run beside this one: its idle RSS in the same interleaved rounds and its P2b in the same
// alternation, so a change's cost is read from one run, not from two runs on a shared machine.
//
// Idle RSS is read from /proc/<pid>/status (VmRSS, split into RssAnon and RssFile: file-backed
// pages are mostly the node binary's, shared by every Node process on the machine) 1.5 s after
// the first answer and again at each later sample time (by default 8 s: after the idle collection
// of runtime-image/src/memory.ts, 5 s into idling), for each of these, in interleaved rounds (medians):
//   node -e            an idle `node -e 'setInterval(…)'`
//   node:http          a bare node:http hello world
//   + worker thread    the same with one idle worker thread: the floor of a runtime that runs user code in a worker
//   generic runtime    a runtime of the warm pool waiting for its function (no worker thread yet)
//   runtime, warm cache  a runtime for a hello function with NODE_COMPILE_CACHE already filled (how the local executor starts them after the first)
//   runtime, cold cache  the same with an empty compile cache (the first start on a machine, or a fresh pod)
//   pool runtime, specialized  a generic runtime in process isolation given its function by the
//                      specialization request, as the one-machine gateway's warm pool does (most runtimes it runs)
// Then the V8 heap of each thread of a runtime (warm cache), reported by a preloaded script.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { machineDescription } from './lib/stats.ts';
import { reportFigure } from './lib/summary.ts';

// autocannon ships no types.
const autocannon = (await import('autocannon' as string)).default as (opts: Record<string, unknown>) => Promise<{
  requests: { average: number };
  latency: { p50: number; p99: number };
  errors: number;
  non2xx: number;
}>;

const seconds = Number(process.argv[2] ?? 6);
const connections = Number(process.argv[3] ?? 50);
const rssRounds = Number(process.argv[4] ?? 5);
const sampleMs = (process.argv[5] ?? '1500,8000').split(',').map(Number);
if (sampleMs.some((ms, i) => !Number.isInteger(ms) || ms < 0 || (i > 0 && ms <= sampleMs[i - 1]!))) throw new Error(`sample times must be increasing whole ms, got ${process.argv[5]}`);
const RUNTIME_MAIN = fileURLToPath(new URL('../runtime-image/src/main.ts', import.meta.url));
const BEFORE_MAIN = process.env.BENCH_RUNTIME_BEFORE;

const PRINT_PORT = `function () { console.log(JSON.stringify({ port: this.address().port })); }`;
const BARE = `require('node:http').createServer((req, res) => { res.writeHead(200, { 'content-type': 'application/json' }); res.end('{"hello":"world"}'); }).listen(0, '127.0.0.1', ${PRINT_PORT});`;
const BARE_WORKER = `${BARE} new (require('node:worker_threads').Worker)('setInterval(() => {}, 60000)', { eval: true });`;
// Prints port 0: nothing to call.
const IDLE = `setInterval(() => {}, 60000); console.log(JSON.stringify({ port: 0 }));`;
const HANDLER = `export default (req, res) => res.json({ hello: 'world' });`;
// Preloaded into every thread of a runtime: its V8 heap, once it has settled.
const HEAP_REPORT = `
const { getHeapSpaceStatistics, getHeapStatistics } = require('node:v8');
const { isMainThread } = require('node:worker_threads');
setTimeout(() => {
  const h = getHeapStatistics();
  const space = Object.fromEntries(getHeapSpaceStatistics().map((s) => [s.space_name, s.physical_space_size]));
  process.stderr.write('HEAP ' + JSON.stringify({ thread: isMainThread ? 'main' : 'worker', physical: h.total_physical_size, used: h.used_heap_size, external: h.external_memory, new: space.new_space, old: space.old_space, code: space.code_space, trusted: space.trusted_space }) + '\\n');
}, 1500).unref();`;

interface Started {
  child: ChildProcess;
  port: number;
  stderr: string[];
}

async function start(args: string[], env: Record<string, string>): Promise<Started> {
  const child = spawn(process.execPath, args, { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const stderr: string[] = [];
  createInterface({ input: child.stderr! }).on('line', (l) => stderr.push(l));
  const port = await new Promise<number>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (l) => {
      try {
        const p = (JSON.parse(l) as { port?: number }).port;
        if (typeof p === 'number') resolve(p);
      } catch {
        // other output
      }
    });
    child.once('exit', () => reject(new Error(`exited before listening: ${stderr.join('\n')}`)));
  });
  return { child, port, stderr };
}

async function stop(s: Started): Promise<void> {
  const exited = new Promise((r) => s.child.once('exit', r));
  s.child.kill('SIGTERM');
  await exited;
}

/** CPU seconds (user + system) a process has used, from /proc/<pid>/stat (clock ticks of 10 ms). */
async function cpuSeconds(pid: number): Promise<number> {
  const fields = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** One autocannon run; with `pid`, also the server's CPU per answered request (µs): the figure the machine's load moves least. */
async function load(port: number, path = '/', pid?: number): Promise<{ rps: number; p50: number; p99: number; errors: number; cpuUs: number }> {
  const cpu0 = pid === undefined ? 0 : await cpuSeconds(pid);
  const r = await autocannon({ url: `http://127.0.0.1:${port}${path}`, connections, duration: seconds });
  const cpuUs = pid === undefined ? Number.NaN : ((await cpuSeconds(pid)) - cpu0) * 1e6 / Math.max(1, r.requests.average * seconds);
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors + r.non2xx, cpuUs };
}

interface Rss {
  rss: number;
  anon: number;
  file: number;
  /** Proportional set size (smaps_rollup): shared pages divided among the processes mapping them. */
  pss: number;
}

async function rssOf(pid: number): Promise<Rss> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const rollup = await readFile(`/proc/${pid}/smaps_rollup`, 'utf8');
  const kb = (text: string, field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(text)![1]) / 1024;
  return { rss: kb(status, 'VmRSS'), anon: kb(status, 'RssAnon'), file: kb(status, 'RssFile'), pss: kb(rollup, 'Pss') };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const dir = await mkdtemp(join(tmpdir(), 'fnhost-bench-rt-'));
const file = join(dir, 'hello.mjs');
await writeFile(file, HANDLER);
const preload = join(dir, 'heap-report.cjs');
await writeFile(preload, HEAP_REPORT);
const warmCache = join(dir, 'compile-cache');
const fnEnv = (cache: string) => ({ PORT: '0', HOST: '127.0.0.1', FNHOST_FUNCTION_FILE: file, FNHOST_FUNCTION_NAME: 'hello', NODE_COMPILE_CACHE: cache });
// How the local executor starts a runtime (docs/runtime.md "Isolation: a thread or the process"): the handler on the main thread, the function's heap limit on the process.
const PROCESS_ARGS = ['--max-old-space-size=128', RUNTIME_MAIN];
const processEnv = (cache: string) => ({ ...fnEnv(cache), FNHOST_ISOLATION: 'process' });
const load0 = loadavg();
const SPECIALIZE_TOKEN = 'b'.repeat(40);

/** A generic runtime in process isolation, specialized to the hello function (what the one-machine warm pool hands out). */
async function startSpecialized(cache: string): Promise<Started> {
  const s = await start(PROCESS_ARGS, { PORT: '0', HOST: '127.0.0.1', FNHOST_SPECIALIZE_TOKEN: SPECIALIZE_TOKEN, FNHOST_ISOLATION: 'process', NODE_COMPILE_CACHE: cache });
  const r = await fetch(`http://127.0.0.1:${s.port}/_fnhost/specialize`, {
    method: 'POST',
    headers: { 'x-fnhost-specialize-token': SPECIALIZE_TOKEN, 'content-type': 'application/json' },
    body: JSON.stringify({ env: { FNHOST_FUNCTION_FILE: file, FNHOST_FUNCTION_NAME: 'hello' } }),
  });
  if (r.status !== 200) throw new Error(`specialization answered ${r.status}: ${await r.text()}`);
  await r.text();
  return s;
}

// Idle RSS.
const variants: Array<[string, () => Promise<Started>]> = [
  ['node -e (idle)', () => start(['-e', IDLE], {})],
  ['node:http hello', () => start(['-e', BARE], {})],
  ['node:http hello + 1 idle worker thread', () => start(['-e', BARE_WORKER], {})],
  ['generic runtime (warm pool, no worker yet)', () => start([RUNTIME_MAIN], { PORT: '0', HOST: '127.0.0.1', FNHOST_SPECIALIZE_TOKEN: 'b'.repeat(40), NODE_COMPILE_CACHE: warmCache })],
  ['runtime, process isolation, warm compile cache (the local executor)', () => start(PROCESS_ARGS, processEnv(warmCache))],
  ['runtime, thread isolation, warm compile cache (pods)', () => start([RUNTIME_MAIN], fnEnv(warmCache))],
  ['pool runtime (process isolation), specialized, warm compile cache', () => startSpecialized(warmCache)],
  ['runtime, process isolation, --max-semi-space-size=1', () => start(['--max-semi-space-size=1', ...PROCESS_ARGS], processEnv(warmCache))],
  ['runtime, cold compile cache', async () => start([RUNTIME_MAIN], fnEnv(join(await mkdtemp(join(dir, 'cold-')), 'cache')))],
];
const beforeCache = join(dir, 'compile-cache-before');
// The runtime before in the mode the local executor starts (process isolation; BENCH_BEFORE_ISOLATION=thread for a checkout without it).
const BEFORE_THREAD = process.env.BENCH_BEFORE_ISOLATION === 'thread';
const startBefore = () => (BEFORE_THREAD ? start([BEFORE_MAIN!], fnEnv(beforeCache)) : start(['--max-old-space-size=128', BEFORE_MAIN!], processEnv(beforeCache)));
if (BEFORE_MAIN) variants.push([`runtime BEFORE, ${BEFORE_THREAD ? 'thread' : 'process'} isolation, warm compile cache`, startBefore]);
// Fill the warm cache once (the runtime writes it once loaded).
{
  const first = await start([RUNTIME_MAIN], fnEnv(warmCache));
  await fetch(`http://127.0.0.1:${first.port}/`).then((r) => r.text());
  await stop(first);
  if (BEFORE_MAIN) {
    const before = await startBefore();
    await fetch(`http://127.0.0.1:${before.port}/`).then((r) => r.text());
    await stop(before);
  }
}
// samples[variant][sample time] = one Rss a round.
const samples = variants.map(() => sampleMs.map(() => [] as Rss[]));
for (let round = 0; round < rssRounds; round++) {
  for (const [i, [, launch]] of variants.entries()) {
    const s = await launch();
    if (s.port !== 0) await fetch(`http://127.0.0.1:${s.port}/`).then((r) => r.text());
    let waited = 0;
    for (const [j, ms] of sampleMs.entries()) {
      await sleep(ms - waited);
      waited = ms;
      samples[i]![j]!.push(await rssOf(s.child.pid!));
    }
    await stop(s);
  }
}

// The heap of each thread of a runtime.
const probe = await start(['--require', preload, RUNTIME_MAIN], fnEnv(warmCache));
await fetch(`http://127.0.0.1:${probe.port}/`).then((r) => r.text());
await sleep(2000);
const heaps = probe.stderr.filter((l) => l.startsWith('HEAP ')).map((l) => JSON.parse(l.slice(5)) as Record<string, number | string>);
await stop(probe);

// P2b.
const bare = await start(['-e', BARE], {});
const rt = await start(PROCESS_ARGS, processEnv(warmCache));
const rtThread = await start([RUNTIME_MAIN], fnEnv(warmCache));
const before = BEFORE_MAIN ? await startBefore() : undefined;
try {
  await fetch(`http://127.0.0.1:${rt.port}/`).then((r) => r.text());
  await load(bare.port); // warm-up
  await load(rt.port);
  await load(rtThread.port);
  if (before) await load(before.port);
  const b = await load(bare.port, '/', bare.child.pid);
  const r = await load(rt.port, '/', rt.child.pid);
  const t = await load(rtThread.port, '/', rtThread.child.pid);
  const p = before && (await load(before.port, '/', before.child.pid));
  const b2 = await load(bare.port, '/', bare.child.pid);
  const r2 = await load(rt.port, '/', rt.child.pid);
  const t2 = await load(rtThread.port, '/', rtThread.child.pid);
  const p2 = before && (await load(before.port, '/', before.child.pid));
  const us = (x: { cpuUs: number }, y: { cpuUs: number }) => `${Math.round((x.cpuUs + y.cpuUs) / 2)} µs`;
  const afterLoad = await rssOf(rt.child.pid!);
  const bareRps = (b.rps + b2.rps) / 2;
  const rtRps = (r.rps + r2.rps) / 2;
  const mib = (n: number) => n.toFixed(1);
  console.log(`machine: ${machineDescription()}; ${new Date().toISOString()}; load average ${load0.map((l) => l.toFixed(2)).join(' ')} → ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  // rss rounds 0: P2b only.
  if (rssRounds > 0) {
    console.log(`\nidle RSS, MiB, medians of ${rssRounds} interleaved rounds, at ${sampleMs.map((ms) => `${ms / 1000} s`).join(' and ')} after the first answer (RSS / anon / file / PSS):`);
    console.log(`| process | ${sampleMs.map((ms) => `at ${ms / 1000} s`).join(' | ')} |`);
    console.log(`|---|${sampleMs.map(() => '---|').join('')}`);
    for (const [i, [name]] of variants.entries()) {
      const cells = samples[i]!.map((s) => `${mib(median(s.map((x) => x.rss)))} / ${mib(median(s.map((x) => x.anon)))} / ${mib(median(s.map((x) => x.file)))} / ${mib(median(s.map((x) => x.pss)))}`);
      console.log(`| ${name} | ${cells.join(' | ')} |`);
    }
  }
  console.log('\nV8 heap per thread of a runtime (warm cache), MiB: physical (used) / new / old / code+trusted / external');
  for (const h of heaps) {
    const m = (k: string) => mib(Number(h[k]) / 2 ** 20);
    console.log(`  ${h.thread}: ${m('physical')} (${m('used')}) / ${m('new')} / ${m('old')} / ${mib((Number(h.code) + Number(h.trusted)) / 2 ** 20)} / ${m('external')}`);
  }
  console.log(`\nautocannon ${connections} connections, ${seconds} s per run, two alternating runs each`);
  console.log(`bare node:http hello : ${Math.round(b.rps)} / ${Math.round(b2.rps)} req/s (p50 ${b.p50} ms, p99 ${b.p99} ms, errors ${b.errors + b2.errors})`);
  console.log(`fnhost runtime hello, process isolation : ${Math.round(r.rps)} / ${Math.round(r2.rps)} req/s (p50 ${r.p50} ms, p99 ${r.p99} ms, errors ${r.errors + r2.errors})`);
  console.log(`fnhost runtime hello, thread isolation  : ${Math.round(t.rps)} / ${Math.round(t2.rps)} req/s (p50 ${t.p50} ms, p99 ${t.p99} ms, errors ${t.errors + t2.errors})`);
  console.log(`server CPU per request (mean of the two runs): bare ${us(b, b2)}, runtime process isolation ${us(r, r2)}, thread isolation ${us(t, t2)}${p && p2 ? `, BEFORE ${us(p, p2)}` : ''}`);
  console.log(`P2b ratio runtime/bare: process isolation ${(rtRps / bareRps).toFixed(2)}x, thread isolation ${((t.rps + t2.rps) / 2 / bareRps).toFixed(2)}x (target >= 0.7x)`);
  if (p && p2) {
    console.log(`runtime BEFORE hello : ${Math.round(p.rps)} / ${Math.round(p2.rps)} req/s (p50 ${p.p50} ms, p99 ${p.p99} ms, errors ${p.errors + p2.errors})`);
    console.log(`P2b ratio BEFORE/bare: ${((p.rps + p2.rps) / 2 / bareRps).toFixed(2)}x; this runtime / BEFORE: ${(rtRps / ((p.rps + p2.rps) / 2)).toFixed(2)}x`);
  }
  console.log(`runtime RSS after the load: ${mib(afterLoad.rss)} MiB (anon ${mib(afterLoad.anon)})`);
  reportFigure({ target: 'P2b', what: 'runtime direct / bare node:http (runtime.ts)', measured: `${(rtRps / bareRps).toFixed(2)}×`, bound: '≥ 0.7×', met: rtRps / bareRps >= 0.7 });
  // The runtime the local executor starts, at the last sample time (idle, after its collection).
  const idleRss = median(samples[variants.findIndex(([name]) => name.startsWith('runtime'))]?.at(-1)?.map((x) => x.rss) ?? [Number.NaN]);
  if (rssRounds > 0) reportFigure({ target: 'P5', what: 'runtime idle RSS (warm compile cache)', measured: `${mib(idleRss)} MiB`, bound: '≤ 50 MB', met: idleRss <= 50 });
} finally {
  await stop(bare);
  await stop(rt);
  await stop(rtThread);
  if (before) await stop(before);
  await rm(dir, { recursive: true, force: true });
}
