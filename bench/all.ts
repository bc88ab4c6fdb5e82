// `make bench`: every benchmark that needs no cluster, one after the other (never two at once:
// they would load each other), each output passed through as it comes, then one table of every
// headline figure they printed (bench/lib/summary.ts) beside its target. `make bench-cluster`
// runs bench/cluster.ts through the same runner (`--cluster`): it needs the test cluster.
//
//   node bench/all.ts [--only gateway,idle] [--quick] [--cluster]
//
// --quick: shorter runs of each (a smoke run of the benches themselves; its figures are noisier).
// A bench that fails is named in the table and the runner exits 1; a target not met does not
// fail the run (the figures are for reading, on a shared machine). Only ratios within one
// bench's run mean anything: the benches run minutes apart and the load moves in between.

import { spawn } from 'node:child_process';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { machineDescription } from './lib/stats.ts';
import { figuresIn, type Figure } from './lib/summary.ts';

interface Bench {
  name: string;
  file: string;
  args: string[];
  quick: string[];
  /** Why it is skipped on this machine, if it is. */
  skip?: () => string | undefined;
}

const BENCHES: Bench[] = [
  { name: 'gateway', file: 'gateway.ts', args: [], quick: ['--seconds', '2', '--rounds', '1', '--p5-rounds', '3'] },
  { name: 'replay', file: 'replay.ts', args: [], quick: ['--seconds', '2', '--rounds', '1'] },
  { name: 'async', file: 'async.ts', args: [], quick: ['--seconds', '2', '--rate', '20'] },
  { name: 'runtime', file: 'runtime.ts', args: [], quick: ['2', '50', '2'] },
  { name: 'sandbox', file: 'sandbox.ts', args: [], quick: ['--seconds', '2', '--rounds', '1', '--p5-rounds', '3'] },
  { name: 'idle', file: 'idle.ts', args: [], quick: ['--functions', '20', '--called', '3', '--rounds', '3'] },
  { name: 'egress', file: 'egress.ts', args: [], quick: ['2', '20', '1'] },
  { name: 'console', file: 'console.ts', args: [], quick: ['--seconds', '2', '--rounds', '1', '--records', '20000'] },
  { name: 'log-store', file: 'log-store.ts', args: [], quick: ['--records', '100000', '--runs', '50', '--single', '2000'] },
  { name: 'log-progress', file: 'log-progress.ts', args: ['--store', 'sqlite'], quick: ['--store', 'sqlite', '--batches', '20', '--rounds', '2', '--heartbeats', '200'] },
  { name: 'bundle', file: 'bundle.ts', args: ['--kib', '5120'], quick: ['--kib', '5120', '--rounds', '3'] },
  { name: 'cli-start', file: 'cli-start.ts', args: [], quick: ['--runs', '5'] },
  { name: 'cli-kube', file: 'cli-kube.ts', args: [], quick: ['--runs', '5'] },
  {
    name: 'log-store-mongo',
    file: 'log-store-mongo.ts',
    args: ['--sample'],
    quick: ['--sample', '--records', '100000', '--runs', '3'],
    // On the Java stand-in every listing scans: the figures that count need a real MongoDB.
    skip: () => (process.env.MONGODB_URL ? undefined : 'MONGODB_URL is not set (P3/P4 on MongoDB need a real server; docs/mongodb.md)'),
  },
];
const CLUSTER: Bench = { name: 'cluster', file: 'cluster.ts', args: [], quick: ['--seconds', '3', '--rounds', '1', '--functions', '100', '--cold', '2'] };

const { values } = parseArgs({ options: { only: { type: 'string' }, quick: { type: 'boolean', default: false }, cluster: { type: 'boolean', default: false } } });
const only = values.only === undefined ? undefined : new Set(values.only.split(','));
const chosen = (values.cluster ? [CLUSTER] : BENCHES).filter((b) => only === undefined || only.has(b.name));
if (only !== undefined) {
  const known = new Set([...BENCHES, CLUSTER].map((b) => b.name));
  const unknown = [...only].filter((n) => !known.has(n));
  if (unknown.length > 0) {
    console.error(`unknown bench ${unknown.join(', ')}: choose from ${[...known].join(', ')}`);
    process.exit(2);
  }
}

interface Outcome {
  bench: Bench;
  figures: Figure[];
  /** Why it did not run to the end (undefined: it did). */
  failure?: string;
  skipped?: string;
  seconds: number;
}

function run(bench: Bench): Promise<Outcome> {
  const skipped = bench.skip?.();
  if (skipped !== undefined) return Promise.resolve({ bench, figures: [], skipped, seconds: 0 });
  const file = fileURLToPath(new URL(bench.file, import.meta.url));
  const args = values.quick ? bench.quick : bench.args;
  console.log(`\n===== ${bench.name}: node bench/${bench.file} ${args.join(' ')} (load ${loadavg().map((l) => l.toFixed(1)).join(' ')})`);
  const started = performance.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [file, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
    let output = '';
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (chunk: string) => {
      output += chunk;
      process.stdout.write(chunk);
    });
    child.on('error', (err) => resolve({ bench, figures: [], failure: err.message, seconds: 0 }));
    child.on('exit', (code, signal) => {
      const seconds = (performance.now() - started) / 1000;
      const failure = code === 0 ? undefined : `exited with ${signal ?? 'code ' + code}`;
      resolve({ bench, figures: figuresIn(output), failure, seconds });
    });
  });
}

const loadBefore = loadavg();
const startedAt = new Date();
const outcomes: Outcome[] = [];
for (const bench of chosen) outcomes.push(await run(bench));

const cell = (text: string) => text.replaceAll('|', '\\|');
console.log(`\n## Summary — ${startedAt.toISOString()} → ${new Date().toISOString()} — ${machineDescription()}`);
console.log(`load average ${loadBefore.map((l) => l.toFixed(1)).join(' ')} → ${loadavg().map((l) => l.toFixed(1)).join(' ')}${values.quick ? ' — QUICK run (short settings: figures are noisier)' : ''}\n`);
console.log('| target | what | measured | bound | met? | bench |');
console.log('|---|---|---|---|---|---|');
for (const o of outcomes) {
  for (const f of o.figures) console.log(`| ${cell(f.target)} | ${cell(f.what)} | ${cell(f.measured)} | ${cell(f.bound)} | ${f.met ? 'yes' : '**no**'} | ${o.bench.name} |`);
  if (o.skipped !== undefined) console.log(`| — | bench/${o.bench.file} skipped | ${cell(o.skipped)} | | | ${o.bench.name} |`);
  else if (o.failure !== undefined) console.log(`| — | bench/${o.bench.file} **failed** | ${cell(o.failure)} after ${o.seconds.toFixed(0)} s | | | ${o.bench.name} |`);
  else if (o.figures.length === 0) console.log(`| — | bench/${o.bench.file} printed no figure | | | | ${o.bench.name} |`);
}
const failed = outcomes.filter((o) => o.failure !== undefined);
if (failed.length > 0) {
  console.log(`\n${failed.length} bench(es) failed: ${failed.map((o) => o.bench.name).join(', ')}`);
  process.exit(1);
}
