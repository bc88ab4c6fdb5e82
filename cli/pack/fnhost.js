#!/usr/bin/env node
// The fnhost command of the packed CLI (@fnhost/cli): plain JavaScript any
// Node can parse, so an older Node gets a clear message instead of a syntax
// error. The CLI itself is dist/main.js, one bundle of the CLI, @fnhost/core
// and their dependencies (cli/pack/build.ts).
const [major, minor] = process.versions.node.split('.').map(Number);
// 20.16: process.getBuiltinModule, which the HTTP client uses (cli/src/api/client.ts).
if (major < 20 || (major === 20 && minor < 16)) {
  process.stderr.write('error: fnhost needs Node.js 20.16 or newer; this is Node.js ' + process.versions.node + '\n');
  process.exit(1);
}
// Ink 8 (the terminal UI) says Node >= 22; the one newer API in the bundle is
// Promise.withResolvers, which its concurrent-mode render flush awaits. On
// Node 20 it is this (test/cli/package.int.test.ts runs the table there).
if (typeof Promise.withResolvers !== 'function') {
  Promise.withResolvers = function withResolvers() {
    let resolve;
    let reject;
    const promise = new this((res, rej) => {
      resolve = res;
      reject = rej;
    });
    return { promise, resolve, reject };
  };
}
const { enableCompileCache } = await import('node:module');
if (enableCompileCache && !process.env.NODE_DISABLE_COMPILE_CACHE) {
  try {
    enableCompileCache();
  } catch {
    // A read-only cache directory must not stop the CLI.
  }
}
const { main } = await import('../dist/main.js');
process.exitCode = await main(process.argv.slice(2));
