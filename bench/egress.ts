// P11: a handler's fetch through the egress path vs direct, to the same local server.
//
//   node bench/egress.ts [seconds] [concurrency] [rounds]
//
// Three processes, as on one machine: a bare node:http hello server (the target), the egress
// proxy (gateway/src/egress/proxy.ts on a Unix socket, a policy with one deny rule so each
// connection is really checked; this process), and a client process that runs fetch loops
// (`concurrency` at once for `seconds`) either plain ("direct") or after installEgress() from
// runtime-image/src/egress.ts, exactly what a runtime's worker does with FNHOST_EGRESS_PROXY.
// Each round measures both, interleaved, in two shapes:
//   keep-alive   fetch's default: one tunnel per pooled connection, reused (the common case)
//   new conn.    `connection: close` on every request: a CONNECT, a policy decision and a dial per request
// and the latency of one fetch at a time (p50), to see what the path adds to a single call.
// Each shape also prints CPU per request (client, and the proxy in this process), which a loaded
// machine disturbs far less than req/s: what a change to either side costs or saves.
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { NetworkPolicy } from '@fnhost/core';
import { EgressProxy } from '../gateway/src/egress/proxy.ts';
import { silentLogger } from '../gateway/src/log.ts';
import { machineDescription } from './lib/stats.ts';
import { reportFigure } from './lib/summary.ts';

const seconds = Number(process.argv[2] ?? 5);
const concurrency = Number(process.argv[3] ?? 20);
const rounds = Number(process.argv[4] ?? 3);
const EGRESS = fileURLToPath(new URL('../runtime-image/src/egress.ts', import.meta.url));
const TOKEN = 'bench-function.bench-secret-0123456789abcdef';

const TARGET = `require('node:http').createServer((req, res) => { res.writeHead(200, { 'content-type': 'application/json' }); res.end('{"hello":"world"}'); }).listen(0, '127.0.0.1', function () { console.log(JSON.stringify({ port: this.address().port })); });`;

// argv: mode url seconds concurrency close(0|1) proxy
const CLIENT = `
const [mode, url, seconds, concurrency, close, proxy] = process.argv.slice(1);
let f = globalThis.fetch;
if (mode === 'egress') {
  const { installEgress, parseEgressProxy } = await import(${JSON.stringify(EGRESS)});
  f = installEgress({ endpoint: parseEgressProxy(proxy), credential: ${JSON.stringify(TOKEN)}, direct: [] }, f).fetch;
}
const headers = close === '1' ? { connection: 'close' } : {};
for (let i = 0; i < 200; i++) await (await f(url, { headers })).arrayBuffer();
const latencies = [];
let done = 0, errors = 0;
const end = performance.now() + Number(seconds) * 1000;
const cpu0 = process.cpuUsage();
await Promise.all(Array.from({ length: Number(concurrency) }, async () => {
  while (performance.now() < end) {
    const t = performance.now();
    try { const r = await f(url, { headers }); await r.arrayBuffer(); if (r.status === 200) done++; else errors++; } catch { errors++; }
    latencies.push(performance.now() - t);
  }
}));
const cpu = process.cpuUsage(cpu0);
latencies.sort((a, b) => a - b);
console.log(JSON.stringify({ rps: done / Number(seconds), p50: latencies[Math.floor(latencies.length / 2)], p99: latencies[Math.floor(latencies.length * 0.99)], errors, requests: 200 + latencies.length, cpuUs: (cpu.user + cpu.system) / latencies.length }));
`;

/** A node child process; `first` is its first stdout line (a port, or a result). */
function run(args: string[]): { kill: () => void; first: Promise<string> } {
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const first = new Promise<string>((resolve) => createInterface({ input: child.stdout! }).once('line', resolve));
  return { kill: () => child.kill('SIGKILL'), first };
}

interface ClientResult {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  /** Requests made, warm-up included. */
  requests: number;
  /** The client process's CPU per timed request (µs). */
  cpuUs: number;
  /** This process's CPU per request while the client ran (µs): the egress proxy's cost when mode is egress. */
  proxyCpuUs: number;
}

async function client(mode: 'direct' | 'egress', url: string, close: boolean, conc: number, proxy: string): Promise<ClientResult> {
  // CPU per request holds still on a loaded machine where req/s swings by 2×: this process runs only the proxy meanwhile.
  const cpu0 = process.cpuUsage();
  const c = run(['--input-type=module', '-e', CLIENT, mode, url, String(seconds), String(conc), close ? '1' : '0', proxy]);
  const result = JSON.parse(await c.first) as Omit<ClientResult, 'proxyCpuUs'>;
  const cpu = process.cpuUsage(cpu0);
  return { ...result, proxyCpuUs: (cpu.user + cpu.system) / result.requests };
}

const dir = await mkdtemp(join(tmpdir(), 'fnhost-bench-egress-'));
const target = run(['-e', TARGET]);
const port = (JSON.parse(await target.first) as { port: number }).port;
const url = `http://127.0.0.1:${port}/`;
// The local server is on this machine, protected unless a rule names it (issue 29).
const GLOBAL_POLICY: NetworkPolicy = { default: 'allow', allow: ['127.0.0.1'], deny: ['10.0.0.0/8'] };
const proxy = new EgressProxy({
  tokens: { verify: (t) => (t === TOKEN ? 'bench-function' : undefined) },
  knows: () => true,
  // One object, as the gateway's PolicyCache hands out the policy it stored until a change replaces it.
  policies: { get: async (scope) => (scope === 'global' ? GLOBAL_POLICY : null) },
  logger: silentLogger,
  maxTunnelsPerFunction: 10_000,
});
const socket = join(dir, 'egress.sock');
await proxy.listenUnix(socket);

console.log(`P11 egress vs direct fetch; ${machineDescription()}; ${seconds} s × ${rounds} rounds, ${concurrency} concurrent fetches; load ${loadavg().map((l) => l.toFixed(1)).join(' ')}; ${new Date().toISOString()}`);
const rows: Record<string, number[]> = {};
const add = (k: string, v: number) => (rows[k] ??= []).push(v);
for (let round = 1; round <= rounds; round++) {
  for (const close of [false, true]) {
    const shape = close ? 'new conn.' : 'keep-alive';
    const d = await client('direct', url, close, concurrency, `unix:${socket}`);
    const e = await client('egress', url, close, concurrency, `unix:${socket}`);
    add(`${shape} direct`, d.rps);
    add(`${shape} egress`, e.rps);
    add(`${shape} ratio`, e.rps / d.rps);
    add(`${shape} client CPU µs direct`, d.cpuUs);
    add(`${shape} client CPU µs egress`, e.cpuUs);
    add(`${shape} proxy CPU µs`, e.proxyCpuUs);
    console.log(`round ${round} ${shape.padEnd(10)} direct ${d.rps.toFixed(0).padStart(6)} req/s (p50 ${d.p50.toFixed(2)} ms, errors ${d.errors})  egress ${e.rps.toFixed(0).padStart(6)} req/s (p50 ${e.p50.toFixed(2)} ms, errors ${e.errors})  ratio ${(e.rps / d.rps).toFixed(2)}×; CPU µs/request: client ${d.cpuUs.toFixed(0)} direct, ${e.cpuUs.toFixed(0)} egress; proxy ${e.proxyCpuUs.toFixed(0)}`);
  }
  const d1 = await client('direct', url, false, 1, `unix:${socket}`);
  const e1 = await client('egress', url, false, 1, `unix:${socket}`);
  add('single p50 added ms', e1.p50 - d1.p50);
  console.log(`round ${round} one at a time: direct p50 ${d1.p50.toFixed(3)} ms, egress p50 ${e1.p50.toFixed(3)} ms (+${(e1.p50 - d1.p50).toFixed(3)} ms)`);
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log('medians:');
for (const [k, v] of Object.entries(rows)) console.log(`  ${k.padEnd(30)} ${median(v).toFixed(k.includes('ratio') || k.includes('ms') ? 3 : 0)}`);
console.log(`load after ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
const keepAlive = median(rows['keep-alive ratio']!);
const addedP50 = median(rows['single p50 added ms']!);
reportFigure({ target: 'P11', what: 'egress / direct fetch throughput, keep-alive', measured: `${keepAlive.toFixed(2)}×`, bound: '≥ 0.8×', met: keepAlive >= 0.8 });
reportFigure({ target: 'P11', what: 'egress / direct fetch throughput, a connection per request', measured: `${median(rows['new conn. ratio']!).toFixed(2)}×`, bound: '≥ 0.8×', met: median(rows['new conn. ratio']!) >= 0.8 });
reportFigure({ target: 'P11', what: 'added p50, one fetch at a time', measured: `+${addedP50.toFixed(3)} ms`, bound: '≤ 1 ms', met: addedP50 <= 1 });
target.kill();
await proxy.close();
await rm(dir, { recursive: true, force: true });
