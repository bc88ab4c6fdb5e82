// Idle RSS of the process-isolated runtime (what the one-machine gateway starts) under node flags,
// one variant against another in interleaved rounds: how the options of issue 31 were measured
// (bench/RESULTS.md, "Runtime memory options"). bench/runtime.ts measures the runtime as shipped.
//
//   node bench/runtime-flags.ts <rounds> <sample ms,…> <label>=<flags> …
//   node bench/runtime-flags.ts 3 1500,8000,30000 default= semi1=--max-semi-space-size=1 nojit="--no-maglev --no-turbofan"
//   BENCH_RUNTIME_MAIN=/other/checkout/runtime-image/src/main.ts node bench/runtime-flags.ts …
//
// Each variant gets a compile cache of its own (V8 flags are part of the cache's key) filled by a
// first start; every round starts each variant once, calls it once (a hello handler) and reads
// /proc/<pid>/status (VmRSS, RssAnon, RssFile) at each sample time after that answer. Medians.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { machineDescription } from './lib/stats.ts';

const MAIN = process.env.BENCH_RUNTIME_MAIN ?? fileURLToPath(new URL('../runtime-image/src/main.ts', import.meta.url));
const [roundsArg, samplesArg, ...variantArgs] = process.argv.slice(2);
const rounds = Number(roundsArg);
const sampleMs = (samplesArg ?? '').split(',').map(Number);
if (!Number.isInteger(rounds) || rounds < 1 || sampleMs.some((ms) => !Number.isInteger(ms) || ms < 0) || variantArgs.length === 0) {
  throw new Error('usage: node bench/runtime-flags.ts <rounds> <sample ms,…> <label>=<node flags> … (e.g. 3 1500,8000 default= semi1=--max-semi-space-size=1)');
}
const variants = variantArgs.map((v) => {
  const at = v.indexOf('=');
  if (at < 1) throw new Error(`a variant is <label>=<flags>, got ${JSON.stringify(v)}`);
  return { label: v.slice(0, at), flags: v.slice(at + 1).split(' ').filter(Boolean) };
});

const dir = await mkdtemp(join(tmpdir(), 'fnhost-bench-flags-'));
const file = join(dir, 'hello.mjs');
await writeFile(file, `export default (req, res) => res.json({ hello: 'world' });`);

async function start(flags: string[], cache: string): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, [...flags, '--max-old-space-size=128', MAIN], {
    env: { PATH: process.env.PATH ?? '', PORT: '0', HOST: '127.0.0.1', FNHOST_FUNCTION_FILE: file, FNHOST_FUNCTION_NAME: 'hello', FNHOST_ISOLATION: 'process', NODE_COMPILE_CACHE: cache },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stderr: string[] = [];
  createInterface({ input: child.stderr! }).on('line', (l) => stderr.push(l));
  const port = await new Promise<number>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (l) => {
      try {
        const p = (JSON.parse(l) as { port?: unknown }).port;
        if (typeof p === 'number') resolve(p);
      } catch {
        // a log line
      }
    });
    child.once('exit', () => reject(new Error(`the runtime exited before listening: ${stderr.join('\n')}`)));
  });
  await fetch(`http://127.0.0.1:${port}/`).then((r) => r.text());
  return { child, port };
}

async function stop(child: ChildProcess): Promise<void> {
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

async function rssOf(pid: number): Promise<[number, number, number]> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)![1]) / 1024;
  return [kb('VmRSS'), kb('RssAnon'), kb('RssFile')];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const load0 = loadavg();
try {
  const caches = variants.map((_, i) => join(dir, `cache-${i}`));
  for (const [i, v] of variants.entries()) await stop((await start(v.flags, caches[i]!)).child);
  // samples[variant][sample time][round] = [rss, anon, file]
  const samples = variants.map(() => sampleMs.map(() => [] as Array<[number, number, number]>));
  for (let round = 0; round < rounds; round++) {
    for (const [i, v] of variants.entries()) {
      const { child } = await start(v.flags, caches[i]!);
      let waited = 0;
      for (const [j, ms] of sampleMs.entries()) {
        await sleep(ms - waited);
        waited = ms;
        samples[i]![j]!.push(await rssOf(child.pid!));
      }
      await stop(child);
    }
  }
  console.log(`machine: ${machineDescription()}; ${new Date().toISOString()}; load average ${load0.map((l) => l.toFixed(2)).join(' ')} → ${loadavg().map((l) => l.toFixed(2)).join(' ')}; runtime ${MAIN}`);
  console.log(`idle RSS of a process-isolated hello runtime, warm compile cache, MiB (RSS / anon / file), medians of ${rounds} interleaved rounds, by time after its first answer:`);
  console.log(`| variant | flags | ${sampleMs.map((ms) => `at ${ms / 1000} s`).join(' | ')} |`);
  console.log(`|---|---|${sampleMs.map(() => '---|').join('')}`);
  for (const [i, v] of variants.entries()) {
    const cells = samples[i]!.map((s) => [0, 1, 2].map((k) => median(s.map((x) => x[k]!)).toFixed(1)).join(' / '));
    console.log(`| ${v.label} | ${v.flags.join(' ') || '(none)'} | ${cells.join(' | ')} |`);
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
