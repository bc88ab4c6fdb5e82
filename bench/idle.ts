// P10: one machine with 100 functions of which 10 are called. Total RSS of the gateway and every
// runtime (summed from /proc) once the idle ones have stopped (FNHOST_RUNTIME_IDLE_SECONDS), and
// the first call to a function whose runtime stopped for idleness vs `node -e 0` (P5's bound).
//
//   node bench/idle.ts [--functions 100] [--called 10] [--idle-seconds 3] [--rounds 7] [--gateway-main <path>]
//
// A real gateway (test/helpers/platform.ts) entered as `npm start` enters it, its compile cache
// filled by one start before, sandboxed where the machine allows it, with the warm pool at its
// default (1). The idle setting is short so the run takes a minute, not five: what
// stays up once the idle runtimes have stopped does not depend on how long that took. The called
// functions get one call each every second throughout (well inside the idle setting).

import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startGateway, type RunningGateway } from '../test/helpers/platform.ts';
import { processTree } from './lib/proc.ts';
import { machineDescription } from './lib/stats.ts';
import { reportFigure } from './lib/summary.ts';

const { values } = parseArgs({
  options: {
    functions: { type: 'string', default: '100' },
    called: { type: 'string', default: '10' },
    'idle-seconds': { type: 'string', default: '3' },
    rounds: { type: 'string', default: '7' },
    // Another entry to compare, e.g. gateway/src/main.ts (no compile cache of the gateway's own).
    'gateway-main': { type: 'string' },
  },
});
const FUNCTIONS = Number(values.functions);
const CALLED = Number(values.called);
const IDLE_SECONDS = Number(values['idle-seconds']);
const ROUNDS = Number(values.rounds);
const HELLO = `export default (req, res) => res.json({ hello: 'world' })`;
const MIB = 1024 * 1024;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/** kB fields of /proc/<pid>/status (VmRSS) and smaps_rollup (Pss), 0 for a process gone meanwhile. */
function kb(file: string, field: string): number {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(file, 'utf8'));
    return m === null ? 0 : Number(m[1]);
  } catch {
    return 0;
  }
}

interface Memory {
  processes: number;
  /** How many processes by name: the gateway and runtimes are node ("MainThread"), each sandbox two bwrap. */
  names: string;
  rssMiB: number;
  pssMiB: number;
  /** The runtimes alone (every Node process but the gateway) and the bubblewrap processes alone. */
  runtimes: { n: number; rssMiB: number; pssMiB: number };
  bwrap: { n: number; rssMiB: number; pssMiB: number };
}

function memoryOf(root: number): Memory {
  const pids = processTree(root);
  let rss = 0;
  let pss = 0;
  const names = new Map<string, number>();
  const runtimes = { n: 0, rssMiB: 0, pssMiB: 0 };
  const bwrap = { n: 0, rssMiB: 0, pssMiB: 0 };
  for (const pid of pids) {
    const r = kb(`/proc/${pid}/status`, 'VmRSS');
    const p = kb(`/proc/${pid}/smaps_rollup`, 'Pss');
    rss += r;
    pss += p;
    try {
      const name = readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
      names.set(name, (names.get(name) ?? 0) + 1);
      const group = name === 'bwrap' ? bwrap : pid === root ? undefined : runtimes;
      if (group !== undefined) {
        group.n++;
        group.rssMiB += r / 1024;
        group.pssMiB += p / 1024;
      }
    } catch {
      // gone
    }
  }
  return { processes: pids.length, names: [...names].map(([name, n]) => `${n} ${name}`).join(', '), rssMiB: rss / 1024, pssMiB: pss / 1024, runtimes, bwrap };
}

async function metric(gw: RunningGateway, name: string): Promise<number> {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  return Number(new RegExp(`^${name} (\\d+)`, 'm').exec(text)?.[1] ?? NaN);
}

async function waitUntil(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function count(text: string, needle: string): number {
  return text.split(needle).length - 1;
}

function nodeStartMs(): number {
  const t0 = performance.now();
  spawnSync(process.execPath, ['-e', '0']);
  return performance.now() - t0;
}

// The gateway as `npm start` runs it (gateway/src/start.mjs: Node's compile cache in its data
// folder), on a data folder it has started on once before, as every start after a checkout's first.
const START = values['gateway-main'] ?? fileURLToPath(new URL('../gateway/src/start.mjs', import.meta.url));
const dataDir = mkdtempSync(join(tmpdir(), 'fnhost-idle-'));
await (await startGateway({ main: START, dataDir, keepDataDir: true, env: { FNHOST_QUIET: '1' } })).stop();
const gw = await startGateway({ main: START, dataDir, env: { FNHOST_QUIET: '1', FNHOST_RUNTIME_IDLE_SECONDS: String(IDLE_SECONDS) } });
const load0 = loadavg();
let calling = true;
const background: Promise<void>[] = [];
try {
  const auth = { authorization: `Bearer ${gw.token}`, 'content-type': 'application/json' };
  const fns: Array<{ function_id: string; invocation_url: string }> = [];
  const tCreate = performance.now();
  for (let i = 0; i < FUNCTIONS; i++) {
    const r = await fetch(`${gw.url}/api/v1/functions`, { method: 'POST', headers: auth, body: JSON.stringify({ name: `fn-${i}`, code: HELLO }) });
    if (r.status !== 201) throw new Error(`create fn-${i}: ${r.status} ${await r.text()}`);
    fns.push((await r.json()) as { function_id: string; invocation_url: string });
  }
  const createSeconds = (performance.now() - tCreate) / 1000;
  const called = fns.slice(0, CALLED);
  let calls = 0;
  let failed = 0;
  for (const fn of called) {
    background.push((async () => {
      while (calling) {
        const r = await fetch(fn.invocation_url);
        await r.arrayBuffer();
        calls++;
        if (r.status !== 200) failed++;
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
    })());
  }

  // Steady state: only the called functions keep a runtime (the warm pool's one is not counted by the gauge).
  await waitUntil(`${CALLED} runtimes running`, async () => (await metric(gw, 'fnhost_runtimes_running')) === CALLED);
  await waitUntil('a full warm pool', () => count(gw.output(), '"msg":"warm-pool runtime ready"') > count(gw.output(), '"warm_pool":true'));
  const samples: Memory[] = [];
  for (let i = 0; i < 5; i++) {
    samples.push(memoryOf(gw.pid));
    await new Promise((r) => setTimeout(r, 500));
  }
  const last = samples[samples.length - 1]!;
  const steady: Memory = { processes: median(samples.map((s) => s.processes)), names: last.names, rssMiB: median(samples.map((s) => s.rssMiB)), pssMiB: median(samples.map((s) => s.pssMiB)), runtimes: last.runtimes, bwrap: last.bwrap };
  const gatewayOnly = { rssMiB: kb(`/proc/${gw.pid}/status`, 'VmRSS') / 1024, pssMiB: kb(`/proc/${gw.pid}/smaps_rollup`, 'Pss') / 1024 };
  const idleStops = await metric(gw, 'fnhost_runtime_idle_stops_total');

  // The first call after an idle stop: functions that were never called since their create (their runtime stopped for idleness).
  const node: number[] = [];
  const first: number[] = [];
  const idled = new Set<string>();
  for (const line of gw.output().split('\n')) {
    if (!line.includes('runtime stopped after idling')) continue;
    try {
      idled.add((JSON.parse(line) as { function_id: string }).function_id);
    } catch {
      // not a log line
    }
  }
  const stopped = fns.slice(CALLED).filter((fn) => idled.has(fn.function_id));
  if (stopped.length < ROUNDS) throw new Error(`only ${stopped.length} functions were seen stopped for idleness; need ${ROUNDS}`);
  for (let round = 0; round < ROUNDS; round++) {
    const fn = stopped[round]!;
    await waitUntil('a full warm pool', () => count(gw.output(), '"msg":"warm-pool runtime ready"') > count(gw.output(), '"warm_pool":true'));
    node.push(nodeStartMs());
    const t0 = performance.now();
    const r = await fetch(fn.invocation_url);
    await r.arrayBuffer();
    if (r.status !== 200) throw new Error(`first call after an idle stop: ${r.status}`);
    first.push(performance.now() - t0);
  }
  const servedByPool = count(gw.output(), '"warm_pool":true');
  const load1 = loadavg();
  const n = median(node);
  const f = median(first);
  const fmt = (xs: number[]) => `median ${median(xs).toFixed(0)} ms (min ${Math.min(...xs).toFixed(0)}, max ${Math.max(...xs).toFixed(0)})`;
  console.log(`fnhost P10 bench — ${new Date().toISOString()} — ${machineDescription()}`);
  console.log(`load average ${load0.map((l) => l.toFixed(2)).join(' ')} → ${load1.map((l) => l.toFixed(2)).join(' ')}; FNHOST_RUNTIME_IDLE_SECONDS=${IDLE_SECONDS}; ${FUNCTIONS} functions created in ${createSeconds.toFixed(1)} s, ${CALLED} called once a second each (${calls} calls, ${failed} not 200)`);
  console.log(`P10 total memory of gateway + runtimes at steady state (${steady.processes} processes: ${steady.names}; ${idleStops} idle stops so far):`);
  console.log(`    RSS summed ${steady.rssMiB.toFixed(0)} MiB = ${((steady.rssMiB * MIB) / 1e9).toFixed(2)} GB (target ≤ 1 GB, read here as 1 GiB = 1024 MiB; gateway alone ${gatewayOnly.rssMiB.toFixed(0)} MiB); PSS summed ${steady.pssMiB.toFixed(0)} MiB (shared pages counted once; gateway ${gatewayOnly.pssMiB.toFixed(0)} MiB)`);
  const per = (g: Memory['runtimes']) => `${g.n} processes, RSS ${g.rssMiB.toFixed(0)} MiB (${(g.rssMiB / Math.max(1, g.n)).toFixed(1)} each), PSS ${g.pssMiB.toFixed(0)} MiB (${(g.pssMiB / Math.max(1, g.n)).toFixed(1)} each)`;
  console.log(`    runtimes (last sample): ${per(steady.runtimes)}; bubblewrap: ${per(steady.bwrap)}`);
  console.log(`P10 first call after an idle stop, ${ROUNDS} rounds, each with a full warm pool (${servedByPool} starts served by the pool in the run):`);
  console.log(`    node -e 0:                 ${fmt(node)}`);
  console.log(`    first call after idling:   ${fmt(first)} → ${(f / n).toFixed(2)}× node -e 0 (P5's bound ≤ 3×)`);
  reportFigure({ target: 'P10', what: `total RSS, gateway + runtimes, ${FUNCTIONS} functions of which ${CALLED} called`, measured: `${steady.rssMiB.toFixed(0)} MiB = ${((steady.rssMiB * MIB) / 1e9).toFixed(2)} GB (PSS ${steady.pssMiB.toFixed(0)} MiB)`, bound: '≤ 1 GiB', met: steady.rssMiB <= 1024 });
  reportFigure({ target: 'P10', what: 'first call after an idle stop vs node -e 0', measured: `${(f / n).toFixed(2)}× (${f.toFixed(0)} ms)`, bound: '≤ 3× (P5)', met: f / n <= 3 });
} finally {
  calling = false;
  await Promise.allSettled(background);
  await gw.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
