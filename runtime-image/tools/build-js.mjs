// Writes the runtime's TypeScript sources as plain JavaScript, for the image:
//   node tools/build-js.mjs src dist
//
// Why: Node runs src/*.ts by stripping their types with amaro (its WebAssembly build of
// swc), in both the main thread and the worker. Without a filled compile cache that costs
// ≈ 40 MiB of idle RSS per runtime and a slower start, and a pod's cache (an emptyDir)
// always starts empty: measured 108 MiB idle from src/*.ts against 69 MiB from this output
// (docs/runtime.md, Memory). The one-machine executor keeps running src/*.ts, where the
// data folder's compile cache is warm after the first runtime.
//
// Node's own stripper does the work (module.stripTypeScriptTypes, mode "strip": types are
// replaced by spaces, so line and column numbers in stack traces stay those of the source).
// Relative specifiers ending in .ts become .js: `from './x.ts'`, `import('./x.ts')` and
// `new URL('./x.ts', import.meta.url)`. Any other quoted relative path to a .ts file that is
// left afterwards fails the build, naming the file and line, rather than making an image
// whose runtime dies on its first import.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { stripTypeScriptTypes } from 'node:module';
import { join } from 'node:path';

const SPECIFIER = /(\bfrom\s*|\bimport\s*\(\s*|\bimport\s+|\bnew\s+URL\(\s*)(['"])(\.\.?\/[^'"\n]*?)\.ts\2/g;
const LEFT_OVER = /(['"])\.\.?\/[^'"\n]*\.ts\1/;

export class BuildError extends Error {
  name = 'BuildError';
}

/** One source file's JavaScript. Throws BuildError naming `file` and the line of a .ts path it could not rewrite. */
export function toJavaScript(source, file) {
  let code;
  try {
    code = stripTypeScriptTypes(source, { mode: 'strip' });
  } catch (err) {
    throw new BuildError(`${file}: ${err.message}`, { cause: err });
  }
  code = code.replace(SPECIFIER, (_all, lead, quote, path) => `${lead}${quote}${path}.js${quote}`);
  const lines = code.split('\n');
  const at = lines.findIndex((line) => LEFT_OVER.test(line));
  if (at !== -1) {
    throw new BuildError(`${file}:${at + 1}: a relative path to a .ts file is left that only \`from\`, \`import()\` or \`new URL()\` forms are rewritten for: ${lines[at].trim()}`);
  }
  return code;
}

/** Every `*.ts` of `srcDir` (not `*.d.ts`) as `*.js` in `outDir`; returns the names written. */
export function buildDir(srcDir, outDir) {
  mkdirSync(outDir, { recursive: true });
  const written = [];
  for (const name of readdirSync(srcDir).sort()) {
    if (!name.endsWith('.ts') || name.endsWith('.d.ts')) continue;
    const js = name.slice(0, -'.ts'.length) + '.js';
    writeFileSync(join(outDir, js), toJavaScript(readFileSync(join(srcDir, name), 'utf8'), join(srcDir, name)));
    written.push(js);
  }
  if (written.length === 0) throw new BuildError(`${srcDir} has no .ts file to build`);
  return written;
}

if (import.meta.main) {
  const [srcDir, outDir] = process.argv.slice(2);
  if (srcDir === undefined || outDir === undefined) {
    process.stderr.write('usage: node tools/build-js.mjs SRC_DIR OUT_DIR\n');
    process.exit(2);
  }
  process.removeAllListeners('warning'); // the stripper's ExperimentalWarning, once per build
  try {
    const written = buildDir(srcDir, outDir);
    process.stdout.write(`${written.length} files written to ${outDir}: ${written.join(' ')}\n`);
  } catch (err) {
    if (!(err instanceof BuildError)) throw err;
    process.stderr.write(`build-js: ${err.message}\n`);
    process.exit(1);
  }
}
