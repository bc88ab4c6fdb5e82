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
