import { FnhostError } from '@fnhost/core';

// The executor seam's errors, apart from any executor: the invocation path (invoke/) throws and
// catches them without knowing which executor runs the function, so it imports this file and
// never executor/local.ts (which would tie it to the one-machine executor and its sandbox).

/** No runtime answered for a call: it could not start, it ended while starting, or it broke off. */
export class RuntimeUnavailableError extends FnhostError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('runtime_unavailable', 502, message, { ...options, expose: true });
  }
}

/**
 * A function's module did not finish loading within its load bound (FNHOST_LOAD_TIMEOUT_SECONDS),
 * counted apart from the calls' time limit: its runtime was ended. The text names the bound only,
 * nothing of the function's code or environment, so the caller may see it.
 */
export class FunctionLoadTimeoutError extends FnhostError {
  constructor(boundMs: number) {
    super('function_load_timeout', 504, loadTimeoutText(boundMs), { expose: true });
  }
}

/** The text of a load past its bound (a call's record, the create's refusal, the log line). */
export function loadTimeoutText(boundMs: number): string {
  return `the function's module did not finish loading within its load bound of ${boundMs / 1000} s (its top level awaits something that does not settle, or loads too much); its runtime was ended`;
}
