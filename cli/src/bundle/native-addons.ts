import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Plugin } from 'esbuild';

// A native addon (a compiled `.node` file) cannot go into a JavaScript bundle, and the runtime
// loads no file but the function's module: refuse it at create, naming the package, instead of a
// function that answers every call with "Cannot find module". Two signs, because most addons load
// their `.node` file through a computed path esbuild never sees (`require('bindings')('x')`,
// node-gyp-build): the `.node` file imported directly, and a package whose own package.json says it
// is built by node-gyp (`gypfile`, a binding.gyp) or loads prebuilt binaries.

/** Packages that exist to find and load a compiled addon of the package that depends on them. */
const ADDON_LOADERS = ['bindings', 'node-gyp-build', 'node-gyp-build-optional-packages', 'prebuild-install', 'node-pre-gyp', '@mapbox/node-pre-gyp', 'nan', 'node-addon-api'];

/** The package a file belongs to: the nearest package.json above it that has a name (a `{"type": "module"}` one inside a package has none). */
export function packageOf(file: string): { name: string; dir: string } | undefined {
  let dir = dirname(file);
  for (;;) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest)) {
      try {
        const { name } = JSON.parse(readFileSync(manifest, 'utf8')) as { name?: unknown };
        if (typeof name === 'string' && name !== '') return { name, dir };
      } catch {
        // Not JSON: not a package's manifest; look further up.
      }
    }
    const up = dirname(dir);
    if (up === dir) return undefined;
    dir = up;
  }
}

/** Why the package in `dir` is a native addon, or undefined when nothing says so. */
export function nativeAddonSign(dir: string): string | undefined {
  if (existsSync(join(dir, 'binding.gyp'))) return 'it has a binding.gyp (compiled by node-gyp)';
  let manifest: { gypfile?: unknown; dependencies?: Record<string, unknown> };
  try {
    manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as typeof manifest;
  } catch {
    return undefined;
  }
  if (manifest.gypfile === true) return 'its package.json says "gypfile": true (compiled by node-gyp)';
  const loader = ADDON_LOADERS.find((name) => manifest.dependencies?.[name] !== undefined);
  return loader === undefined ? undefined : `it depends on ${loader}, which loads a compiled addon`;
}

export function nativeAddonMessage(name: string, why: string): string {
  return `package "${name}" is a native addon: ${why}; fnhost runs JavaScript only, so use a pure-JavaScript or WebAssembly alternative`;
}

/** The esbuild plugin that refuses native addons, at the import that brings one in (so the error has its file, line and column). */
export function refuseNativeAddons(): Plugin {
  const checked = new Map<string, string | undefined>();
  const again = Symbol('fnhost-resolving');
  return {
    name: 'fnhost-refuse-native-addons',
    setup(build) {
      build.onResolve({ filter: /\.node$/ }, (args) => {
        const pkg = packageOf(args.importer);
        return { errors: [{ text: nativeAddonMessage(pkg?.name ?? args.path, `it imports the compiled file ${args.path}`) }] };
      });
      // A package import: resolve it as esbuild would, then one look at that package's manifest.
      build.onResolve({ filter: /^[^./]/ }, async (args) => {
        if ((args.pluginData as { [again]?: true } | undefined)?.[again]) return undefined;
        const resolved = await build.resolve(args.path, { kind: args.kind, importer: args.importer, resolveDir: args.resolveDir, pluginData: { [again]: true } });
        // Not found, a built-in: esbuild's own resolution (again, from its cache) reports or keeps it.
        if (resolved.errors.length > 0 || resolved.external) return undefined;
        const pkg = packageOf(resolved.path);
        // The project itself (a tsconfig "paths" alias, a self-reference) is the user's code, not a package.
        if (pkg === undefined || pkg.dir === build.initialOptions.absWorkingDir) return undefined;
        if (!checked.has(pkg.dir)) checked.set(pkg.dir, nativeAddonSign(pkg.dir));
        const why = checked.get(pkg.dir);
        return why === undefined ? undefined : { errors: [{ text: nativeAddonMessage(pkg.name, why) }] };
      });
    },
  };
}
