// P2b: the runtime answering directly vs a bare node:http hello world, side by side in one run;
// also the runtime's idle RSS (P5: ≤ 50 MB). Run: npx node bench/runtime.ts [seconds] [connections]
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { machineDescription } from './lib/stats.ts';

// autocannon ships no types.
const autocannon = (await import('autocannon' as string)).default as (opts: Record<string, unknown>) => Promise<{
  requests: { average: number };
  latency: { p50: number; p99: number };
  errors: number;
  non2xx: number;
}>;

const seconds = Number(process.argv[2] ?? 6);
const connections = Number(process.argv[3] ?? 50);
const RUNTIME_MAIN = fileURLToPath(new URL('../runtime-image/src/main.ts', import.meta.url));

const BARE = `require('node:http').createServer((req, res) => { res.writeHead(200, { 'content-type': 'application/json' }); res.end('{"hello":"world"}'); }).listen(0, '127.0.0.1', function () { console.log(JSON.stringify({ port: this.address().port })); });`;
const HANDLER = `export default (req, res) => res.json({ hello: 'world' });`;

async function start(args: string[], env: Record<string, string>): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, args, { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (l) => {
      try {
        const p = (JSON.parse(l) as { port?: number }).port;
        if (typeof p === 'number') resolve(p);
      } catch {
        // other output
      }
    });
    child.once('exit', () => reject(new Error('exited before listening')));
  });
  return { child, port };
}

async function load(port: number, path = '/'): Promise<{ rps: number; p50: number; p99: number; errors: number }> {
  const r = await autocannon({ url: `http://127.0.0.1:${port}${path}`, connections, duration: seconds });
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors + r.non2xx };
}

async function rssMiB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024;
}

const dir = await mkdtemp(join(tmpdir(), 'fnhost-bench-rt-'));
const file = join(dir, 'hello.mjs');
await writeFile(file, HANDLER);
const bare = await start(['-e', BARE], {});
const rt = await start([RUNTIME_MAIN], { PORT: '0', HOST: '127.0.0.1', FNHOST_FUNCTION_FILE: file, FNHOST_FUNCTION_NAME: 'hello' });
try {
  // Idle: loaded, one call served (so the worker is up), then left alone for a moment.
  await fetch(`http://127.0.0.1:${rt.port}/`).then((r) => r.text());
  await new Promise((r) => setTimeout(r, 1000));
  const idle = await rssMiB(rt.child.pid!);
  await load(bare.port); // warm-up both
  await load(rt.port);
  const b = await load(bare.port);
  const r = await load(rt.port);
  const b2 = await load(bare.port);
  const r2 = await load(rt.port);
  const bareRps = (b.rps + b2.rps) / 2;
  const rtRps = (r.rps + r2.rps) / 2;
  console.log(`machine: ${machineDescription()}; node ${process.version}; ${new Date().toISOString()}`);
  console.log(`autocannon ${connections} connections, ${seconds} s per run, two alternating runs each`);
  console.log(`bare node:http hello : ${Math.round(b.rps)} / ${Math.round(b2.rps)} req/s (p50 ${b.p50} ms, p99 ${b.p99} ms, errors ${b.errors + b2.errors})`);
  console.log(`fnhost runtime hello : ${Math.round(r.rps)} / ${Math.round(r2.rps)} req/s (p50 ${r.p50} ms, p99 ${r.p99} ms, errors ${r.errors + r2.errors})`);
  console.log(`P2b ratio runtime/bare: ${(rtRps / bareRps).toFixed(2)}x (target >= 0.7x)`);
  console.log(`runtime idle RSS (main + worker thread): ${idle.toFixed(1)} MiB (target <= 50 MB); after load: ${(await rssMiB(rt.child.pid!)).toFixed(1)} MiB`);
} finally {
  bare.child.kill();
  rt.child.kill();
  await rm(dir, { recursive: true, force: true });
}
