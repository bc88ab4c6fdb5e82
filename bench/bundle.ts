// P5 for a handler that imports packages (issue 19): create → first 200 of a ~300 KiB bundle
// (the module the CLI makes, inline source map included) on one machine, vs a hello handler and
// vs `node -e 0`, in interleaved rounds through one gateway with its defaults (warm pool, sandbox
// where the machine can). Also the same bundle without its source map (what the map costs the
// load), and the CLI's bundling itself.
//
// P14 (issue 30) with `--kib 5120`: a 5 MiB bundle, over the inline limit, is created as the CLI
// creates it, by reference: `PUT /api/v1/code/{digest}` of its bytes, then the create naming
// `code_ref`; the time is from the upload's start to the first 200 (the upload's share printed
// beside it). Each round's bundle differs by a first comment line, so no round finds its digest
// already stored or cached by the runtime.
//
//   node bench/bundle.ts [--rounds 9] [--kib 300]
//
// The bundle is generated (deterministic for a --kib): a package of many small functions, all
// reachable from the handler (so esbuild keeps them), grown until the bundle with its map is
// --kib KiB.

import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { digestOf } from '../core/src/code/digest.ts';
import { INLINE_CODE_BYTES } from '../core/src/limits.ts';
import { startGateway } from '../test/helpers/platform.ts';
import { makeBundle } from './lib/generated-bundle.ts';
import { nodeStartMs, poolReady } from './lib/pool.ts';
import { machineDescription } from './lib/stats.ts';
import { reportFigure } from './lib/summary.ts';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '9' }, kib: { type: 'string', default: '300' } } });
const ROUNDS = Number(values.rounds);
const TARGET_BYTES = Number(values.kib) * 1024;
const HELLO = `export default (req, res) => res.json({ hello: 'world' })`;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/** Node alone importing the module from a file (no platform): the floor any runtime pays for this code. */
function nodeImportMs(file: string): number {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', `await import(${JSON.stringify(file)})`]);
  if (r.status !== 0) throw new Error(`node importing ${file}: ${r.stderr}`);
  return performance.now() - t0;
}

type Gateway = Awaited<ReturnType<typeof startGateway>>;

/** Code over the inline size goes as the CLI sends it: uploaded by digest, then named by `code_ref`. */
async function codeSource(gw: Gateway, code: string): Promise<{ code: string } | { code_ref: { digest: string; size: number } }> {
  const bytes = Buffer.from(code);
  if (bytes.length <= INLINE_CODE_BYTES) return { code };
  const digest = digestOf(bytes);
  const put = await fetch(`${gw.url}/api/v1/code/${digest}`, { method: 'PUT', headers: { authorization: `Bearer ${gw.token}`, 'content-type': 'application/octet-stream' }, body: bytes });
  if (put.status !== 200 && put.status !== 201) throw new Error(`upload ${digest}: ${put.status} ${await put.text()}`);
  await put.arrayBuffer();
  return { code_ref: { digest, size: bytes.length } };
}

/** The last create's upload time (0 for inline code), and until the create was answered (upload included). */
let lastUploadMs = 0;
let lastCreatedMs = 0;

async function createToFirst200(gw: Gateway, name: string, code: string): Promise<number> {
  const t0 = performance.now();
  const source = await codeSource(gw, code);
  lastUploadMs = performance.now() - t0;
  const r = await fetch(`${gw.url}/api/v1/functions`, { method: 'POST', headers: { authorization: `Bearer ${gw.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ name, ...source }) });
  if (r.status !== 201) throw new Error(`create ${name}: ${r.status} ${await r.text()}`);
  const fn = (await r.json()) as { function_id: string; invocation_url: string };
  lastCreatedMs = performance.now() - t0;
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
  const { code: mapped, bundleMs } = await makeBundle(dir, TARGET_BYTES);
  const bare = mapped.replace(/\n\/\/# sourceMappingURL=data:[^\n]*\n?$/, '\n');
  const info = (await (await fetch(`${gw.url}/api/v1/info`, { headers: { authorization: `Bearer ${gw.token}` } })).json()) as { sandbox?: { enabled: boolean } };
  console.log(`fnhost bundle P5 bench — ${new Date().toISOString()} — ${machineDescription()} — sandbox ${info.sandbox?.enabled ? 'on' : 'off'}`);
  console.log(`bundle: ${(Buffer.byteLength(mapped) / 1024).toFixed(0)} KiB with its inline source map, ${(Buffer.byteLength(bare) / 1024).toFixed(0)} KiB without; bundled by the CLI's bundler in ${bundleMs.toFixed(0)} ms`);
  const load0 = loadavg();
  // A first line of its own per create: a new digest each time (nothing found stored or cached).
  const unique = (code: string, tag: string) => `// ${tag}\n${code}`;
  for (let i = 0; i < 2; i++) {
    await measured(`warm-h${i}`, HELLO);
    await measured(`warm-m${i}`, unique(mapped, `warm-${i}`));
  }
  await writeFile(join(dir, 'mapped.mjs'), mapped);
  await writeFile(join(dir, 'bare.mjs'), bare);
  const node: number[] = [];
  const nodeImport: number[] = [];
  const nodeImportBare: number[] = [];
  const hello: number[] = [];
  const big: number[] = [];
  const bigUpload: number[] = [];
  const bigCreated: number[] = [];
  const bigBare: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    node.push(nodeStartMs());
    nodeImport.push(nodeImportMs(join(dir, 'mapped.mjs')));
    nodeImportBare.push(nodeImportMs(join(dir, 'bare.mjs')));
    hello.push(await measured(`hello-${round}`, HELLO));
    big.push(await measured(`mapped-${round}`, unique(mapped, `mapped-${round}`)));
    bigUpload.push(lastUploadMs);
    bigCreated.push(lastCreatedMs);
    bigBare.push(await measured(`bare-${round}`, unique(bare, `bare-${round}`)));
  }
  const load1 = loadavg();
  const n = median(node);
  const fmt = (xs: number[]) => `median ${median(xs).toFixed(0)} ms (min ${Math.min(...xs).toFixed(0)}, max ${Math.max(...xs).toFixed(0)}) = ${(median(xs) / n).toFixed(2)}× node -e 0`;
  console.log(`P5 create → first 200, ${ROUNDS} interleaved rounds after 2 warm-ups; ${cpus().length} cores, load ${load0.map((l) => l.toFixed(2)).join(' ')} → ${load1.map((l) => l.toFixed(2)).join(' ')}`);
  const kib = (Buffer.byteLength(mapped) / 1024).toFixed(0);
  const byRef = Buffer.byteLength(mapped) > INLINE_CODE_BYTES;
  console.log(`  node -e 0:                      median ${n.toFixed(0)} ms`);
  console.log(`  hello handler:                  ${fmt(hello)}`);
  console.log(`  ${kib} KiB bundle with source map${byRef ? ' (by reference)' : ''}: ${fmt(big)} (target ≤ 3×); of it${byRef ? ` the upload: median ${median(bigUpload).toFixed(0)} ms,` : ''} until the create was answered: ${median(bigCreated).toFixed(0)} ms`);
  console.log(`  the same without its map:       ${fmt(bigBare)}`);
  console.log(`  bundle / hello:                 ${(median(big) / median(hello)).toFixed(2)}×`);
  console.log(`  node alone importing the bundle from a file: ${fmt(nodeImport)}; without its map: ${fmt(nodeImportBare)}`);
  reportFigure({ target: Buffer.byteLength(mapped) >= 5 * 1024 * 1024 ? 'P14' : 'P5', what: `create → first 200 of a ${kib} KiB bundle${byRef ? ' (by reference)' : ''} vs node -e 0`, measured: `${(median(big) / n).toFixed(2)}×`, bound: '≤ 3×', met: median(big) / n <= 3 });
} finally {
  await gw.stop();
  await rm(dir, { recursive: true, force: true });
}
