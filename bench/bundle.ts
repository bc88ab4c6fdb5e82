// P5 for a handler that imports packages (issue 19): create → first 200 of a ~300 KiB bundle
// (the module the CLI makes, inline source map included) on one machine, vs a hello handler and
// vs `node -e 0`, in interleaved rounds through one gateway with its defaults (warm pool, sandbox
// where the machine can). Also the same bundle without its source map (what the map costs the
// load), and the CLI's bundling itself.
//
//   node bench/bundle.ts [--rounds 9] [--kib 300]
//
// The bundle is generated: a package of many small functions, all reachable from the handler
// (so esbuild keeps them), grown until the bundle with its map is --kib KiB.

import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { bundleHandler } from '../cli/src/bundle/bundle.ts';
import { startGateway } from '../test/helpers/platform.ts';
import { nodeStartMs, poolReady } from './lib/pool.ts';
import { machineDescription } from './lib/stats.ts';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '9' }, kib: { type: 'string', default: '300' } } });
const ROUNDS = Number(values.rounds);
const TARGET_BYTES = Number(values.kib) * 1024;
const HELLO = `export default (req, res) => res.json({ hello: 'world' })`;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/** A package of `n` functions in node_modules, each with a table and a loop, as libraries have. */
function packageSource(n: number): string {
  const fns: string[] = [];
  for (let i = 0; i < n; i++) {
    fns.push(`function op${i}(input) {
  const table = { a: ${i}, b: '${i.toString(36)}', c: [${i}, ${i + 1}, ${i + 2}] };
  let out = 0;
  for (const k of Object.keys(table)) out += String(table[k]).length * (input.length + ${i});
  if (out < 0) throw new RangeError('op${i}: negative result for ' + JSON.stringify(input));
  return { name: 'op${i}', out };
}`);
  }
  return `${fns.join('\n')}\nexport const ops = { ${Array.from({ length: n }, (_, i) => `op${i}`).join(', ')} };\n`;
}

async function makeBundle(dir: string): Promise<{ code: string; bundleMs: number }> {
  await mkdir(join(dir, 'node_modules', 'bench-ops'), { recursive: true });
  await writeFile(join(dir, 'package.json'), '{ "name": "bench-bundle", "private": true, "type": "module" }\n');
  await writeFile(join(dir, 'node_modules', 'bench-ops', 'package.json'), '{ "name": "bench-ops", "version": "1.0.0", "type": "module", "main": "index.js" }\n');
  await writeFile(join(dir, 'handler.ts'), "import { ops } from 'bench-ops';\n\nexport default (req: { query: Record<string, string> }, res: { json(v: unknown): void }) => {\n  const op = (ops as Record<string, (s: string) => unknown>)[req.query.op ?? 'op0'] ?? ops.op0;\n  res.json(op('x'));\n};\n");
  // Grow the package until the bundle (map included) reaches the target size.
  let n = 100;
  for (;;) {
    await writeFile(join(dir, 'node_modules', 'bench-ops', 'index.js'), packageSource(n));
    const t0 = performance.now();
    const bundle = await bundleHandler(join(dir, 'handler.ts'), dir);
    const bundleMs = performance.now() - t0;
    if (bundle.bytes >= TARGET_BYTES) return { code: bundle.code, bundleMs };
    n = Math.ceil(n * Math.max(1.02, (TARGET_BYTES / bundle.bytes) * 1.01));
  }
}

type Gateway = Awaited<ReturnType<typeof startGateway>>;

async function createToFirst200(gw: Gateway, name: string, code: string): Promise<number> {
  const t0 = performance.now();
  const r = await fetch(`${gw.url}/api/v1/functions`, { method: 'POST', headers: { authorization: `Bearer ${gw.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ name, code }) });
  if (r.status !== 201) throw new Error(`create ${name}: ${r.status} ${await r.text()}`);
  const fn = (await r.json()) as { function_id: string; invocation_url: string };
  for (;;) {
    const call = await fetch(fn.invocation_url);
    await call.arrayBuffer();
    if (call.status === 200) break;
  }
  const ms = performance.now() - t0;
  await (await fetch(`${gw.url}/api/v1/functions/${fn.function_id}`, { method: 'DELETE', headers: { authorization: `Bearer ${gw.token}` } })).arrayBuffer();
  return ms;
}

const dir = await mkdtemp(join(tmpdir(), 'fnhost-bench-bundle-'));
const gw = await startGateway({ env: { FNHOST_QUIET: '1', FNHOST_WARM_POOL: '1' } });
/** Creates so far: each takes the pool's runtime, so the next waits for the refill. */
let takes = 0;
const measured = async (name: string, code: string) => {
  await poolReady(gw, takes + 1);
  takes++;
  return createToFirst200(gw, name, code);
};
try {
  const { code: mapped, bundleMs } = await makeBundle(dir);
  const bare = mapped.replace(/\n\/\/# sourceMappingURL=data:[^\n]*\n?$/, '\n');
  const info = (await (await fetch(`${gw.url}/api/v1/info`, { headers: { authorization: `Bearer ${gw.token}` } })).json()) as { sandbox?: { enabled: boolean } };
  console.log(`fnhost bundle P5 bench — ${new Date().toISOString()} — ${machineDescription()} — sandbox ${info.sandbox?.enabled ? 'on' : 'off'}`);
  console.log(`bundle: ${(Buffer.byteLength(mapped) / 1024).toFixed(0)} KiB with its inline source map, ${(Buffer.byteLength(bare) / 1024).toFixed(0)} KiB without; bundled by the CLI's bundler in ${bundleMs.toFixed(0)} ms`);
  const load0 = loadavg();
  for (let i = 0; i < 2; i++) {
    await measured(`warm-h${i}`, HELLO);
    await measured(`warm-m${i}`, mapped);
  }
  const node: number[] = [];
  const hello: number[] = [];
  const big: number[] = [];
  const bigBare: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    node.push(nodeStartMs());
    hello.push(await measured(`hello-${round}`, HELLO));
    big.push(await measured(`mapped-${round}`, mapped));
    bigBare.push(await measured(`bare-${round}`, bare));
  }
  const load1 = loadavg();
  const n = median(node);
  const fmt = (xs: number[]) => `median ${median(xs).toFixed(0)} ms (min ${Math.min(...xs).toFixed(0)}, max ${Math.max(...xs).toFixed(0)}) = ${(median(xs) / n).toFixed(2)}× node -e 0`;
  console.log(`P5 create → first 200, ${ROUNDS} interleaved rounds after 2 warm-ups; ${cpus().length} cores, load ${load0.map((l) => l.toFixed(2)).join(' ')} → ${load1.map((l) => l.toFixed(2)).join(' ')}`);
  console.log(`  node -e 0:                      median ${n.toFixed(0)} ms`);
  console.log(`  hello handler:                  ${fmt(hello)}`);
  console.log(`  300 KiB bundle with source map: ${fmt(big)} (target ≤ 3×)`);
  console.log(`  the same without its map:       ${fmt(bigBare)}`);
} finally {
  await gw.stop();
  await rm(dir, { recursive: true, force: true });
}
