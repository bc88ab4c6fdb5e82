// Loads the user's module and finds its handler. A `.js` file may be ESM or CommonJS:
// compiling it as a CommonJS function body decides (import/export or top-level await do not
// compile there), the same test Node's own syntax detection makes, but independent of
// whatever package.json "type" happens to sit above the file.
// Not an ES import of node:fs (see hide-secrets.ts).
const { readFileSync, realpathSync } = process.getBuiltinModule('node:fs');
import { dirname, extname } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ownerStack } from './error-stack.ts';

export type Handler = (req: unknown, res: unknown) => unknown;

/**
 * Why a module did not load: `syntax` (it does not parse), `no_handler` (it loaded and exports no
 * function), `failed` (its top level threw, or it is missing). The gateway refuses the first two at
 * create and deploy (docs/internal-protocol.md "Load errors").
 */
export type LoadErrorKind = 'syntax' | 'no_handler' | 'failed';

/** A load failure; its message names no path (the caller's code has none it knows of) but the line and column when known. */
export class LoadError extends Error {
  override name = 'LoadError';
  readonly kind: LoadErrorKind;
  constructor(kind: LoadErrorKind, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.kind = kind;
  }
}

/** `line L, column C` of the first stack frame in the module file (1-based, as editors count), or undefined. */
export function positionIn(err: unknown, file: string): string | undefined {
  const stack = (err as { stack?: unknown } | null)?.stack;
  if (typeof stack !== 'string') return undefined;
  const url = pathToFileURL(file).href;
  for (const line of stack.split('\n')) {
    for (const name of [url, file]) {
      const at = line.indexOf(name + ':');
      if (at === -1) continue;
      const m = /^:(\d+):(\d+)/.exec(line.slice(at + name.length));
      if (m !== null) return `line ${m[1]}, column ${m[2]}`;
    }
  }
  return undefined;
}

const ESM_SYNTAX = /Cannot use import statement|Unexpected token 'export'|import\.meta|await is only valid|Cannot use 'import\.meta'|Unexpected reserved word/;

export function pickHandler(exported: unknown, kind: 'esm' | 'cjs'): Handler {
  const candidates: unknown[] = [];
  if (kind === 'esm') {
    const ns = exported as Record<string, unknown>;
    candidates.push(ns.default, ns.handler, (ns.default as Record<string, unknown> | undefined)?.handler, (ns.default as Record<string, unknown> | undefined)?.default);
  } else {
    const m = exported as Record<string, unknown> | ((...a: unknown[]) => unknown) | undefined;
    candidates.push(m, (m as Record<string, unknown> | undefined)?.handler, (m as Record<string, unknown> | undefined)?.default);
  }
  for (const c of candidates) if (typeof c === 'function') return c as Handler;
  throw new LoadError(
    'no_handler',
    `the module exports no handler: use \`export default function (req, res) {…}\`, \`export function handler(req, res) {…}\` or \`module.exports = (req, res) => {…}\``,
  );
}

async function importEsm(file: string, source: string): Promise<Record<string, unknown>> {
  try {
    return (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  } catch (err) {
    // A .js ESM file under a package.json "type": "commonjs": load the source itself as a module.
    if (err instanceof SyntaxError && ESM_SYNTAX.test(err.message) && extname(file) === '.js') {
      return (await import('data:text/javascript;base64,' + Buffer.from(source).toString('base64'))) as Record<string, unknown>;
    }
    throw err;
  }
}

let defaultLoader: number | undefined;

/**
 * vm's USE_MAIN_CONTEXT_DEFAULT_LOADER. Node prints an experimental warning at its first use, which
 * would land in the handler's console output as if the handler had written it: it is used once
 * here, with warnings held back for that one synchronous call (Node warns once per process).
 */
function quietDefaultLoader(): number {
  if (defaultLoader !== undefined) return defaultLoader;
  const vm = process.getBuiltinModule('node:vm');
  defaultLoader = vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER as number;
  const first = vm.compileFunction('return import("node:path")', [], { importModuleDynamically: defaultLoader }) as () => Promise<unknown>;
  const emitWarning = process.emitWarning;
  process.emitWarning = () => undefined;
  try {
    first().catch(() => undefined);
  } finally {
    process.emitWarning = emitWarning;
  }
  return defaultLoader;
}

function runCjs(file: string, fn: (...args: unknown[]) => unknown): unknown {
  const module = { exports: {} as unknown, id: file, filename: file, loaded: false };
  const require = process.getBuiltinModule('node:module').createRequire(file);
  fn.call(module.exports, module.exports, require, module, file, dirname(file));
  module.loaded = true;
  return module.exports;
}

/**
 * `at src/handler.ts:3:7`: where a bundle's top level threw, in the user's source (Node maps a
 * bundle's frames through its source map, so none is in the module file itself), or undefined.
 */
function sourcePosition(err: unknown, file: string): string | undefined {
  let real = file;
  try {
    real = realpathSync(file);
  } catch {
    // Keep the path as given.
  }
  return ownerStack(err, [file, real])?.split('\n')[0]!.replace(/^at (?:.* \()?(.*?)\)?$/, 'at $1');
}

export async function loadHandler(file: string): Promise<Handler> {
  const ext = extname(file).toLowerCase();
  try {
    if (ext === '.mjs') return pickHandler(await import(pathToFileURL(file).href), 'esm');
    // node:vm and node:module are taken only here (a .mjs never needs them): fewer modules in the worker's heap.
    const source = readFileSync(file, 'utf8');
    let compiled: ((...args: unknown[]) => unknown) | undefined;
    try {
      compiled = process.getBuiltinModule('node:vm').compileFunction(source, ['exports', 'require', 'module', '__filename', '__dirname'], {
        filename: file,
        // import() in a CommonJS handler (a node: module, an ES module beside it) through Node's own loader:
        // without this V8 refuses it (ERR_VM_DYNAMIC_IMPORT_CALLBACK_MISSING).
        importModuleDynamically: quietDefaultLoader(),
      }) as (...args: unknown[]) => unknown;
    } catch (err) {
      if (ext === '.cjs' || !(err instanceof SyntaxError) || !ESM_SYNTAX.test(err.message)) throw err;
    }
    if (compiled === undefined) return pickHandler(await importEsm(file, source), 'esm');
    return pickHandler(runCjs(file, compiled), 'cjs');
  } catch (err) {
    if (err instanceof LoadError) throw err;
    const e = err as Error & { code?: string };
    if ((e.code === 'ENOENT' || e.code === 'ERR_MODULE_NOT_FOUND') && String(e.message).includes(`'${file}'`)) throw new LoadError('failed', 'the function module does not exist', { cause: err });
    // A SyntaxError of the module itself has no stack frame in it; the gateway locates it in the source.
    if (err instanceof SyntaxError && positionIn(err, file) === undefined) {
      throw new LoadError('syntax', `SyntaxError: ${e.message}`, { cause: err });
    }
    const where = positionIn(err, file) ?? sourcePosition(err, file);
    const what = `${e.name ?? 'Error'}: ${String(e.message).split(file).join('<module>')}`;
    throw new LoadError('failed', `the module threw while loading: ${what}${where === undefined ? '' : ` (${where})`}`, { cause: err });
  }
}
