// How a function's code is written for its runtime to load.

/** The module file extension: .mjs for ES module syntax, .cjs otherwise, so the nearest package.json's "type" never matters. */
export function moduleExtension(code: string): '.mjs' | '.cjs' {
  return /^\s*(import\s*[\w{*'"]|export\s)/m.test(code) ? '.mjs' : '.cjs';
}
