import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { bundleHandler } from '../../cli/src/bundle/bundle.ts';

// A handler bundle of a chosen size for the P5/P14 benches (bench/bundle.ts, bench/cluster.ts),
// made by the CLI's own bundler: a package of many small functions in node_modules, each with a
// table and a loop as libraries have, all reachable from the handler (so esbuild keeps them),
// grown until the bundle with its inline source map reaches the target. Deterministic: the same
// target gives the same bytes.

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

/** Writes the project into `dir` and bundles it; the module as the CLI makes it, and how long bundling took. */
export async function makeBundle(dir: string, targetBytes: number): Promise<{ code: string; bundleMs: number }> {
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
    if (bundle.bytes >= targetBytes) return { code: bundle.code, bundleMs };
    n = Math.ceil(n * Math.max(1.02, (targetBytes / bundle.bytes) * 1.01));
  }
}

