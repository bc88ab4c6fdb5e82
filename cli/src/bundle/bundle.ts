import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { build, type BuildFailure, type BuildOptions, type Message, type Metafile } from 'esbuild';
import { MAX_CODE_REF_BYTES } from '@fnhost/core/limits.ts';
import { BundleError } from '../errors.ts';
import { packageOf, refuseNativeAddons } from './native-addons.ts';

// A handler and everything it imports, made into the one ES module fnhost stores and runs
// (docs/cli.md "Packages and bundling"). esbuild resolves imports from the project the file lives
// in (node_modules beside its package.json, its tsconfig.json), strips TypeScript, leaves Node's
// built-ins to the runtime and appends an inline source map, which the runtime uses to put the
// user's files and lines in a thrown error's stack. The source map has no source text in it
// (only positions): the stack needs no more, and the code limit applies to the whole module.

export interface Bundle {
  code: string;
  bytes: number;
  /** The folder the bundle's source paths are relative to (the handler's project). */
  projectDir: string;
  warnings: string[];
}

/**
 * ESM output has no `require`, yet a bundled CommonJS package may require a built-in (debug
 * requires `tty`): esbuild's stand-in then throws "Dynamic require is not supported". A real one,
 * made once at the top, is what esbuild's documentation suggests for Node.
 */
const REQUIRE_BANNER = "import { createRequire as __fnhostCreateRequire } from 'node:module'; const require = __fnhostCreateRequire(import.meta.url);";

/** The nearest folder at or above the file's that has a package.json (else the file's own). */
export function projectDirOf(file: string): string {
  let dir = dirname(file);
  for (;;) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    const up = dirname(dir);
    if (up === dir) return dirname(file);
    dir = up;
  }
}

/** `path:line:column: text` (1-based, as editors count), the path as the user would type it from `cwd`. */
export function describeMessage(m: Message, projectDir: string, cwd: string): string {
  const loc = m.location;
  if (loc === null) return m.text;
  const path = relative(cwd, resolve(projectDir, loc.file)) || loc.file;
  return `${path}:${loc.line}:${loc.column + 1}: ${m.text}`;
}

/** The inputs that weigh most in the bundle, summed per package: what to cut when over the limit. */
export function heaviestInputs(meta: Metafile, projectDir: string, top = 5): string {
  const weights = new Map<string, number>();
  for (const output of Object.values(meta.outputs)) {
    for (const [path, { bytesInOutput }] of Object.entries(output.inputs)) {
      const abs = resolve(projectDir, path);
      const name = abs.includes(`${sep}node_modules${sep}`) ? (packageOf(abs)?.name ?? path) : path;
      weights.set(name, (weights.get(name) ?? 0) + bytesInOutput);
    }
  }
  return [...weights]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([name, bytes]) => `${name} ${Math.ceil(bytes / 1024)} KiB`)
    .join(', ');
}

/**
 * esbuild's warning for a `.js` file written as CommonJS (module.exports) that the nearest
 * package.json declares an ES module ("type": "module"): Node would fail to load it, and esbuild
 * bundles `module` as an undefined global. A handler copied from an example, or written in a
 * project whose root declares ES modules, is still plainly CommonJS to its author.
 */
const COMMONJS_IN_ESM = 'commonjs-variable-in-esm';

/** A CommonJS-written entry in an ES-module package: bundle it as CommonJS (see COMMONJS_IN_ESM). */
export function isCommonJsInEsmPackage(warnings: Message[], entryInProject: string): boolean {
  return warnings.some((w) => w.id === COMMONJS_IN_ESM && w.location?.file === entryInProject);
}

function isBuildFailure(err: unknown): err is BuildFailure {
  return err instanceof Error && Array.isArray((err as Partial<BuildFailure>).errors);
}

/** Bundles `file` (absolute) into one ES module under the code limit, or throws BundleError. */
export async function bundleHandler(file: string, cwd: string): Promise<Bundle> {
  const projectDir = projectDirOf(file);
  let result;
  try {
    const options: BuildOptions & { metafile: true; write: false } = {
      entryPoints: [file],
      absWorkingDir: projectDir,
      // Never written (write: false); it names the bundle so the map's sources are relative to the project.
      outfile: join(projectDir, 'fnhost-bundle.mjs'),
      write: false,
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node24',
      sourcemap: 'inline',
      sourcesContent: false,
      // Whitespace and syntax only: identifiers keep their names, so a stack's function names
      // and a package's checks of constructor.name stay as written.
      minifyWhitespace: true,
      minifySyntax: true,
      banner: { js: REQUIRE_BANNER },
      metafile: true,
      logLevel: 'silent',
      plugins: [refuseNativeAddons()],
    };
    result = await build(options);
    const entryInProject = relative(projectDir, file).split(sep).join('/');
    if (isCommonJsInEsmPackage(result.warnings, entryInProject)) {
      // The entry as standard input has no package.json to take a module type from, so esbuild
      // reads its syntax as Node does for a file no package types: CommonJS. Its imports still
      // resolve from its folder, and the source map names the same file.
      const { entryPoints: _entry, ...rest } = options;
      result = await build({ ...rest, stdin: { contents: readFileSync(file, 'utf8'), sourcefile: basename(file), resolveDir: dirname(file), loader: 'js' } });
    }
  } catch (err) {
    if (!isBuildFailure(err)) throw err;
    const lines = err.errors.slice(0, 5).map((m) => describeMessage(m, projectDir, cwd));
    if (err.errors.length > 5) lines.push(`(and ${err.errors.length - 5} more)`);
    const missing = err.errors.map((m) => /^Could not resolve "([^"]+)"/.exec(m.text)?.[1]).find((name) => name !== undefined && !name.startsWith('.'));
    const project = relative(cwd, projectDir) || 'this folder';
    throw new BundleError(`cannot bundle ${relative(cwd, file) || file}:\n  ${lines.join('\n  ')}`, {
      hint: missing === undefined ? undefined : `packages resolve from the handler's project (${project}): run npm install ${missing} there`,
      cause: err,
    });
  }
  const code = result.outputFiles[0]!.text;
  const bytes = Buffer.byteLength(code);
  if (bytes > MAX_CODE_REF_BYTES) {
    throw new BundleError(`the bundle of ${relative(cwd, file) || file} is ${bytes} bytes with its source map; the limit is ${MAX_CODE_REF_BYTES} bytes (50 MiB)`, {
      hint: `the heaviest parts: ${heaviestInputs(result.metafile, projectDir)}`,
    });
  }
  return { code, bytes, projectDir, warnings: result.warnings.map((m) => describeMessage(m, projectDir, cwd)) };
}
