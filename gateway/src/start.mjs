// `npm start` (`make start`): the one-machine gateway's entry. It is plain JavaScript, so that Node
// reads it without its TypeScript stripper (amaro, a WebAssembly build of swc), turns on Node's
// compile cache in the data folder, and only then loads the gateway (./main.ts). From the second
// start of a checkout on, no module of the gateway is stripped or compiled again: ≈ 31 MiB less
// memory for the gateway's life (bench/RESULTS.md, issue 31). The cache is
// keyed by each file's content and Node's version, so an edited checkout recompiles what changed.
// The Kubernetes image keeps `node gateway/src/main.ts`: a pod starts with no data folder to keep one.
import { mkdirSync } from 'node:fs';
import module from 'node:module';
import { join, resolve } from 'node:path';

// The data folder as gateway/src/config.ts resolves it.
const dataDir = resolve(process.env.FNHOST_DATA_DIR?.trim() || '.fnhost');
try {
  // Made here as main.ts makes it (0700), before Node's cache would make it with its own mode.
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const cacheDir = join(dataDir, 'gateway-compile-cache');
  module.enableCompileCache(cacheDir);
  // The gateway's worker threads (the SQLite checkpoints) read it from the environment when they
  // start. Its child processes do not see it: runtimes and sandboxes get an environment of their own.
  process.env.NODE_COMPILE_CACHE = cacheDir;
} catch {
  // A data folder that cannot be made: main.ts says so in its own words; the gateway runs without the cache.
}
await import('./main.ts');
