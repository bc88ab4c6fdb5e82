import { parse } from 'acorn';

// How a function's code is written for its runtime to load.

/** ES module syntax where a statement starts: at a line's start, or after `;` or `}` on the same line. */
const MODULE_STATEMENT = /(?:^|[;}])\s*(?:import\s*[\w{*'"]|export[\s{*])/m;

/**
 * The module file extension. `.mjs` when module syntax is plain to see (Node then loads it as an
 * ES module without trying CommonJS first: a bundle is parsed once). Otherwise `.js`, which the
 * runtime's loader tries as CommonJS and, when module syntax stops that, as an ES module, as
 * cluster mode's runtimes load every function: `const a = 1; export default …` on one line is
 * still a module. Never `.cjs`, which forbids that second try. Neither extension lets the nearest
 * package.json's "type" decide (runtime-image/src/loader.ts).
 */
export function moduleExtension(code: string): '.mjs' | '.js' {
  return MODULE_STATEMENT.test(code) ? '.mjs' : '.js';
}

/** Whether a load failure of this code is to be placed as a module's (true) or a script's: as the runtime's loader decides. */
export function loadsAsModule(code: string): boolean {
  if (MODULE_STATEMENT.test(code)) return true;
  try {
    parse(code, { ecmaVersion: 'latest', sourceType: 'script', allowHashBang: true, allowReturnOutsideFunction: true });
    return false;
  } catch (err) {
    return /'import' and 'export' may appear only with 'sourceType: module'|Cannot use 'import\.meta' outside a module/.test((err as Error).message);
  }
}
