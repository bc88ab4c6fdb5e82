import { build } from 'esbuild';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { copyFile, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

// Builds the CLI as an npm package and packs it: `node cli/pack/build.ts`
// (make cli-package) writes cli/.build/package/ and
// cli/.build/fnhost-cli-<version>.tgz. esbuild bundles the CLI, @fnhost/core
// (private, never published) and every dependency (Ink, React, js-yaml,
// cron-parser) into dist/, split at the CLI's lazy imports so a command
// still loads only its own code. Its one dependency is esbuild, the bundler
// of function:create/deploy, whose native binary cannot be bundled.
// The package is scoped (@fnhost/cli) so no one else can publish under its
// name; its command is `fnhost`.

const CLI = fileURLToPath(new URL('..', import.meta.url));
const OUT = join(CLI, '.build');
const PKG = join(OUT, 'package');
/** The oldest Node the package runs on (the launcher and engines say so; test/cli/package.int.test.ts runs it on the machine's Node 20). */
export const MIN_NODE = '20.16.0';

/** The esbuild the CLI is developed with (cli/package.json), pinned in the package. */
const ESBUILD_VERSION = (JSON.parse(readFileSync(join(CLI, 'package.json'), 'utf8')) as { dependencies: Record<string, string> }).dependencies.esbuild!;

export async function buildPackage(): Promise<{ dir: string; tarball: string; version: string }> {
  const cli = JSON.parse(await readFile(join(CLI, 'package.json'), 'utf8')) as { version: string; description: string; license?: string };
  const root = JSON.parse(await readFile(join(CLI, '..', 'package.json'), 'utf8')) as { license: string };
  await rm(PKG, { recursive: true, force: true });
  await mkdir(join(PKG, 'bin'), { recursive: true });
  await build({
    entryPoints: { main: join(CLI, 'src', 'main.ts') },
    outdir: join(PKG, 'dist'),
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    // Ink loads react-devtools-core only when DEV=true; it is not shipped. esbuild (the
    // bundler of function:create/deploy) finds its native binary beside its own files, so it
    // cannot be bundled: it is the package's one dependency, installed with it.
    external: ['react-devtools-core', 'esbuild'],
    define: { 'process.env.NODE_ENV': '"production"' },
    // Bundled CommonJS (js-yaml's, React's) may call require(): give ESM one.
    banner: { js: "import { createRequire as __fnhostRequire } from 'node:module'; const require = __fnhostRequire(import.meta.url);" },
    legalComments: 'linked',
    logLevel: 'warning',
  });
  await copyFile(join(CLI, 'pack', 'fnhost.js'), join(PKG, 'bin', 'fnhost.js'));
  await copyFile(join(CLI, 'pack', 'README.md'), join(PKG, 'README.md'));
  const manifest = {
    name: '@fnhost/cli',
    version: cli.version,
    description: cli.description,
    license: root.license,
    type: 'module',
    bin: { fnhost: 'bin/fnhost.js' },
    engines: { node: `>=${MIN_NODE}` },
    dependencies: { esbuild: ESBUILD_VERSION },
    files: ['bin', 'dist'],
  };
  await writeFile(join(PKG, 'package.json'), JSON.stringify(manifest, null, 2) + '\n');
  const packed = spawnSync('npm', ['pack', PKG, '--pack-destination', OUT, '--json', '--loglevel=error'], { encoding: 'utf8' });
  if (packed.status !== 0) throw new Error(`npm pack failed: ${packed.stderr}`);
  const [result] = JSON.parse(packed.stdout) as { filename: string }[];
  if (result === undefined) throw new Error(`npm pack printed no result: ${packed.stdout}`);
  return { dir: PKG, tarball: join(OUT, result.filename), version: cli.version };
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { tarball } = await buildPackage();
  process.stdout.write(`${tarball}\n`);
}
