#!/usr/bin/env node
// The fnhost command. This file stays plain JavaScript that any Node can parse,
// so that an old Node gets a clear message instead of a syntax error; the CLI
// itself is TypeScript that Node 24 runs natively.
const major = Number(process.versions.node.split('.')[0]);
if (major < 24) {
  process.stderr.write(
    'error: fnhost needs Node.js 24 or newer; this is Node.js ' + process.versions.node + '\n' +
      'hint: run it through npx (npx fnhost ...), which uses the Node 24 the project installs\n',
  );
  process.exit(1);
}
// The compile cache keeps type stripping and parsing off the start-up path on
// the second and later runs (see docs/cli.md, "Start-up time").
const { enableCompileCache } = await import('node:module');
if (enableCompileCache && !process.env.NODE_DISABLE_COMPILE_CACHE) {
  try {
    enableCompileCache();
  } catch {
    // A read-only cache directory must not stop the CLI.
  }
}
const { main } = await import('../src/main.ts');
process.exitCode = await main(process.argv.slice(2));
