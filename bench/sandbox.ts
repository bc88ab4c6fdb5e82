// P9: what the sandbox of each runtime costs (docs/sandbox.md), one machine, same run.
//
//   node bench/sandbox.ts [--seconds 5] [--connections 50] [--rounds 3] [--p5-rounds 7]
//
// Two real gateways (test/helpers/platform.ts), one sandboxed (the default where bubblewrap
// works) and one with FNHOST_SANDBOX=off, each serving the same hello function; loaded by
// autocannon in interleaved rounds with a bare node:http hello world and each gateway's runtime
// called directly (TCP for the unsandboxed one, its Unix socket for the sandboxed one):
//   P1 through the gateway, sandboxed / unsandboxed (target within 10 %)
//   P2b runtime direct / bare node:http, both ways (target ≥ 0.7×)
//   P5 create → first 200 with the warm pool, both ways, vs `node -e 0` (target ≤ 3×, within 10 %)
// `--autogroup on|off` (root) sets the kernel's sched_autogroup_enabled for the run, restored at
// the end. bubblewrap's --new-session gives each sandboxed runtime a session, hence (autogroup on,
// the kernel's default here) a scheduling group of its own, which the CPU is shared between fairly:
// the unsandboxed runtime shares the group of this process and its load generator instead. Called
// directly by the generator on 2 cores, that alone moves a runtime's throughput by about a third
// either way, whatever the sandbox costs; with autogroup off every thread is scheduled alike.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { startGateway } from '../test/helpers/platform.ts';
import { cpuMicros, processTree } from './lib/proc.ts';
import { reportFigure } from './lib/summary.ts';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '5' },
    connections: { type: 'string', default: '50' },
    rounds: { type: 'string', default: '3' },
    'p5-rounds': { type: 'string', default: '7' },
    autogroup: { type: 'string' },
  },
});
const AUTOGROUP = '/proc/sys/kernel/sched_autogroup_enabled';
const autogroupBefore = (() => {
  try {
    return readFileSync(AUTOGROUP, 'utf8').trim();
  } catch {
    return undefined;
  }
})();
if (values.autogroup !== undefined) {
  if (values.autogroup !== 'on' && values.autogroup !== 'off') throw new Error(`--autogroup takes on or off, not ${JSON.stringify(values.autogroup)}`);
  writeFileSync(AUTOGROUP, values.autogroup === 'on' ? '1' : '0');
}
const SECONDS = Number(values.seconds);
const CONNECTIONS = Number(values.connections);
const ROUNDS = Number(values.rounds);
const P5_ROUNDS = Number(values['p5-rounds']);
const HELLO = `export default (req, res) => res.json({ hello: 'world' })`;

const autocannon = (await import('autocannon' as string)).default as (opts: Record<string, unknown>) => Promise<{ requests: { average: number; total: number }; latency: { p50: number; p99: number }; non2xx: number; errors: number; timeouts: number }>;

type Gateway = Awaited<ReturnType<typeof startGateway>>;
const children: ChildProcess[] = [];

const BARE = `
const http = require('node:http');
const body = JSON.stringify({ hello: 'world' });
const s = http.createServer((req, res) => { res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }); res.end(body); });
s.keepAliveTimeout = 65000;
s.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: s.address().port })));`;

async function startBare(): Promise<{ url: string; pid: number }> {
  const child = spawn(process.execPath, ['-e', BARE], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  return new Promise((resolve) => {
    createInterface({ input: child.stdout! }).on('line', (line) => resolve({ url: `http://127.0.0.1:${(JSON.parse(line) as { port: number }).port}/`, pid: child.pid! }));
  });
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/**
 * Throughput, and the CPU the serving processes spent per request: a figure the machine's other
 * load changes far less than req/s, so it says whether a ratio of throughputs is the server's cost.
 */
async function load(target: { url: string; socketPath?: string }, servers: number): Promise<{ rps: number; cpuUs: number }> {
  await autocannon({ ...target, connections: CONNECTIONS, duration: 1 });
  const pids = processTree(servers);
  const cpu0 = cpuMicros(pids);
  const r = await autocannon({ ...target, connections: CONNECTIONS, duration: SECONDS });
  const cpu = cpuMicros(pids) - cpu0;
  if (r.errors + r.timeouts + r.non2xx > 0) throw new Error(`${target.url}: ${r.errors} errors, ${r.timeouts} timeouts, ${r.non2xx} non-2xx`);
  return { rps: r.requests.average, cpuUs: cpu / Math.max(1, r.requests.total) };
}

async function api(gw: Gateway, method: string, path: string, body?: unknown): Promise<any> {
  const r = await fetch(gw.url + path, { method, headers: { authorization: `Bearer ${gw.token}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await r.text();
  return text === '' ? undefined : JSON.parse(text);
}

/** The runtime the gateway started last, called directly: its port (unsandboxed) or its socket (sandboxed). */
function directTarget(gw: Gateway): { url: string; socketPath?: string } {
  const started = gw.output().split('\n').filter((l) => l.includes('"msg":"runtime started"')).pop()!;
  const parsed = JSON.parse(started) as { port?: number; sandbox?: string };
  if (parsed.sandbox === undefined) return { url: `http://127.0.0.1:${parsed.port}/` };
  const root = join(tmpdir(), `fnhost-sandboxes-${createHash('sha256').update(gw.dataDir).digest('hex').slice(0, 12)}`);
  return { url: 'http://sandbox/', socketPath: join(root, 'sandboxes', parsed.sandbox, 'run', 'runtime.sock') };
}

function nodeStartMs(): number {
  const t0 = performance.now();
  spawnSync(process.execPath, ['-e', '0']);
  return performance.now() - t0;
}

function count(text: string, needle: string): number {
  return text.split(needle).length - 1;
}

/**
 * Create → first 200 on `gw`, once both gateways' pools are full again: `takes` is how many
 * runtimes each pool has given out so far. Waiting for the other gateway's pool too keeps its
 * refill (a generic runtime starting, ≈ 100 ms of CPU, 300 ms after its take) out of this
 * measurement: interleaved without it, the unsandboxed gateway's refill fell inside every
 * sandboxed create and made the sandbox look slower than it is.
 */
async function createToFirst200(gw: Gateway, name: string, takes: { of: Map<Gateway, number> }): Promise<number> {
  const until = Date.now() + 30_000;
  for (const [g, n] of takes.of) {
    while (count(g.output(), '"msg":"warm-pool runtime ready"') < n + 1) {
      if (Date.now() > until) throw new Error('the warm pool did not refill within 30 s');
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  takes.of.set(gw, takes.of.get(gw)! + 1);
  const t0 = performance.now();
  const fn = await api(gw, 'POST', '/api/v1/functions', { name, code: HELLO });
  for (;;) {
    const r = await fetch(fn.invocation_url);
    await r.arrayBuffer();
    if (r.status === 200) break;
  }
  const ms = performance.now() - t0;
  await api(gw, 'DELETE', `/api/v1/functions/${fn.function_id}`);
  return ms;
}

const sandboxed = await startGateway({ env: { FNHOST_QUIET: '1' } });
const plain = await startGateway({ env: { FNHOST_QUIET: '1', FNHOST_SANDBOX: 'off' } });
try {
  const info = await api(sandboxed, 'GET', '/api/v1/info');
  if (info.sandbox?.enabled !== true) throw new Error(`the first gateway is not sandboxed: ${JSON.stringify(info.sandbox)}`);
  const bare = await startBare();
  const fnS = await api(sandboxed, 'POST', '/api/v1/functions', { name: 'hello', code: HELLO });
  const fnP = await api(plain, 'POST', '/api/v1/functions', { name: 'hello', code: HELLO });
  await fetch(fnS.invocation_url).then((r) => r.arrayBuffer());
  await fetch(fnP.invocation_url).then((r) => r.arrayBuffer());
  // Each target with the process whose tree serves it (a gateway's tree holds its runtimes).
  const targets = {
    bare: { target: { url: bare.url }, servers: bare.pid },
    'runtime direct, sandboxed (Unix socket)': { target: directTarget(sandboxed), servers: sandboxed.pid },
    'runtime direct, unsandboxed (TCP)': { target: directTarget(plain), servers: plain.pid },
    'gateway, sandboxed': { target: { url: fnS.invocation_url as string }, servers: sandboxed.pid },
    'gateway, unsandboxed': { target: { url: fnP.invocation_url as string }, servers: plain.pid },
  };
  const names = Object.keys(targets) as Array<keyof typeof targets>;
  const runs = new Map<string, number[]>(names.map((n) => [n, []]));
  const cpu = new Map<string, number[]>(names.map((n) => [n, []]));
  const load0 = loadavg();
  for (let round = 0; round < ROUNDS; round++) {
    for (const n of names) {
      const r = await load(targets[n].target, targets[n].servers);
      runs.get(n)!.push(r.rps);
      cpu.get(n)!.push(r.cpuUs);
    }
  }
  const ratio = (a: string, b: string) => median(runs.get(a)!.map((x, i) => x / runs.get(b)![i]!));
  await api(sandboxed, 'DELETE', `/api/v1/functions/${fnS.function_id}`);
  await api(plain, 'DELETE', `/api/v1/functions/${fnP.function_id}`);

  // P5, interleaved: node -e 0, a create on each gateway (each pool refilled first); 2 warm-up rounds.
  const node: number[] = [];
  const p5 = { sandboxed: [] as number[], plain: [] as number[] };
  // Each pool gave one runtime to the hello function above.
  const takes = { of: new Map([[sandboxed, 1], [plain, 1]]) };
  for (let round = -2; round < P5_ROUNDS; round++) {
    const n = nodeStartMs();
    const s = await createToFirst200(sandboxed, `p5-${round + 2}`, takes);
    const p = await createToFirst200(plain, `p5-${round + 2}`, takes);
    if (round < 0) continue;
    node.push(n);
    p5.sandboxed.push(s);
    p5.plain.push(p);
  }
  const load1 = loadavg();
  const fmt = (xs: number[]) => `median ${median(xs).toFixed(0)} ms (min ${Math.min(...xs).toFixed(0)}, max ${Math.max(...xs).toFixed(0)})`;
  console.log(`fnhost sandbox bench (P9) — ${new Date().toISOString()} — ${cpus().length}× ${cpus()[0]?.model} — node ${process.version} — load ${load0.map((l) => l.toFixed(2)).join(' ')} → ${load1.map((l) => l.toFixed(2)).join(' ')} — sched_autogroup ${values.autogroup ?? (autogroupBefore === '1' ? 'on' : autogroupBefore === '0' ? 'off' : 'unknown')}`);
  console.log(`autocannon ${CONNECTIONS} connections, ${SECONDS} s each, GET of a JSON hello; medians of ${ROUNDS} interleaved rounds\n`);
  console.log('| target | req/s | server CPU per request (µs) |');
  console.log('|---|---|---|');
  for (const n of names) console.log(`| ${n} | ${median(runs.get(n)!).toFixed(0)} | ${median(cpu.get(n)!).toFixed(0)} |`);
  console.log('');
  console.log(`P1/P9 gateway sandboxed / unsandboxed: ${ratio('gateway, sandboxed', 'gateway, unsandboxed').toFixed(2)}× (target ≥ 0.9×)`);
  console.log(`P2b runtime direct / bare: sandboxed ${ratio('runtime direct, sandboxed (Unix socket)', 'bare').toFixed(2)}×, unsandboxed ${ratio('runtime direct, unsandboxed (TCP)', 'bare').toFixed(2)}× (target ≥ 0.7×)`);
  const cpuOf = (n: string) => median(cpu.get(n)!);
  console.log(`P2b/P9 runtime direct, sandboxed / unsandboxed: ${ratio('runtime direct, sandboxed (Unix socket)', 'runtime direct, unsandboxed (TCP)').toFixed(2)}× throughput, ${(cpuOf('runtime direct, sandboxed (Unix socket)') / cpuOf('runtime direct, unsandboxed (TCP)')).toFixed(2)}× CPU per request (issue 16: within 10 %)`);
  console.log(`P5  node -e 0: ${fmt(node)}`);
  console.log(`P5  sandboxed, warm pool: ${fmt(p5.sandboxed)} → ${(median(p5.sandboxed) / median(node)).toFixed(2)}× node -e 0 (target ≤ 3×)`);
  console.log(`P5  unsandboxed, warm pool: ${fmt(p5.plain)} → ${(median(p5.plain) / median(node)).toFixed(2)}× node -e 0; sandboxed / unsandboxed ${(median(p5.sandboxed) / median(p5.plain)).toFixed(2)}× (P9: within 1.1×)`);
  const p1 = ratio('gateway, sandboxed', 'gateway, unsandboxed');
  const p5Ratio = median(p5.sandboxed) / median(p5.plain);
  const p5Node = median(p5.sandboxed) / median(node);
  reportFigure({ target: 'P9', what: 'P1 through the gateway, sandboxed / unsandboxed', measured: `${p1.toFixed(2)}×`, bound: '≥ 0.9×', met: p1 >= 0.9 });
  reportFigure({ target: 'P9', what: 'P5 create → first 200, sandboxed / unsandboxed', measured: `${p5Ratio.toFixed(2)}×`, bound: '≤ 1.1×', met: p5Ratio <= 1.1 });
  reportFigure({ target: 'P9', what: 'P5 sandboxed vs node -e 0', measured: `${p5Node.toFixed(2)}×`, bound: '≤ 3×', met: p5Node <= 3 });
} finally {
  if (values.autogroup !== undefined && autogroupBefore !== undefined) writeFileSync(AUTOGROUP, autogroupBefore);
  for (const c of children) c.kill();
  await sandboxed.stop();
  await plain.stop();
}
