import { parse } from 'acorn';
import { FnhostError } from '@fnhost/core';

// What a runtime says about a module that did not load, made into the texts the owner and the
// caller see. Whether code parses is V8's answer, given by the runtime that loaded it (the
// sandboxed one, never this process); acorn only places V8's SyntaxError in the source, because
// V8 gives a module's SyntaxError no position outside a fatal exit (`node --check` prints it from
// an internal field). acorn parses, it runs nothing. When the two disagree (syntax newer than
// acorn), the text says V8's error without a position rather than a wrong one.

/** Why a runtime's module did not load (docs/internal-protocol.md "Load errors"). */
export type LoadFailureKind = 'syntax' | 'no_handler' | 'failed';

/** `line L, column C` (both 1-based) of the first syntax error acorn finds in the code, as the runtime would parse it. */
export function syntaxErrorPosition(code: string, module: boolean): string | undefined {
  try {
    parse(code, {
      ecmaVersion: 'latest',
      sourceType: module ? 'module' : 'script',
      allowHashBang: true,
      // A CommonJS module is a function body: `return` is allowed at its top level.
      allowReturnOutsideFunction: !module,
      allowAwaitOutsideFunction: module,
      locations: true,
    });
    return undefined;
  } catch (err) {
    const loc = (err as { loc?: { line: number; column: number } }).loc;
    return loc === undefined ? undefined : `line ${loc.line}, column ${loc.column + 1}`;
  }
}

/** The owner's text of a load failure: the runtime's own, with the position of a syntax error added. */
export function loadFailureText(kind: LoadFailureKind | undefined, message: string, code: string, module: boolean): string {
  if (kind !== 'syntax' && !/^SyntaxError:/.test(message)) return message;
  const where = /\(line \d+, column \d+\)$/.test(message) ? undefined : syntaxErrorPosition(code, module);
  return where === undefined ? message : `${message} (${where})`;
}

/**
 * Create or deploy of code that does not parse or exports no handler: 400 like every bad input,
 * with a code of its own (`invalid_code`), because the fix is in the code, not in the request: the
 * CLI exits 1 for it, not 2 (a usage error), and the panel can show it beside the code.
 */
export class CodeRefusedError extends FnhostError {
  readonly kind: CodeRefusal;
  constructor(kind: CodeRefusal, text: string) {
    super('invalid_code', 400, refusalText(kind, text), { expose: true });
    this.kind = kind;
  }
}

/** Why a write of code is refused: it does not parse, exports no handler, its top level threw while loading, or its load did not end within its bound. */
export type CodeRefusal = 'syntax' | 'no_handler' | 'load' | 'load_timeout';

function refusalText(kind: CodeRefusal, text: string): string {
  if (kind === 'syntax') return `code does not parse: ${text}`;
  if (kind === 'no_handler') return `code exports no handler: ${text.replace(/^the module exports no handler: /, '')}`;
  if (kind === 'load_timeout') return `code does not finish loading: ${text}`;
  return `code throws while loading: ${text.replace(/^the module threw while loading: /, '')}`;
}

/**
 * A function whose module cannot load, as its callers see it: a generic body, neither the
 * module's path nor its error (that text is the owner's: the execution record, function:test).
 */
export class FunctionFailedToLoadError extends FnhostError {
  /** The full text for the record. */
  readonly detail: string;
  constructor(detail: string) {
    super('function_failed_to_load', 500, 'the function could not be loaded; its owner can see why in its logs', { expose: true });
    this.detail = detail;
  }
}
