import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Refusals } from '../resources/refusals.ts';
import { RETRY_AFTER_SECONDS } from '../http/connection-bounds.ts';
import { BodyMemoryError, type BodyBudget, type BodyTimeoutError } from './body-budget.ts';
import { writeError } from './errors.ts';

// How the invocation path answers a body refused at a bound (./body-budget.ts).

/** The invocation path's bounds on request bodies: the shared budget, the idle timeout, where refusals are counted. */
export interface BodyBounds {
  budget: BodyBudget;
  idleTimeoutMs: number;
  refusals?: Refusals;
}

/**
 * A body refused at a bound (the memory budget: 503 with Retry-After; a stalled body: 408):
 * counted, answered, and the connection closed, so what the caller still sends is never
 * read into memory. Returns the status written.
 */
export function refuseBody(req: IncomingMessage, res: ServerResponse, err: BodyMemoryError | BodyTimeoutError, bodies: BodyBounds): number {
  const memory = err instanceof BodyMemoryError;
  if (memory) bodies.refusals?.refused('body_memory', 'a request body was refused: the gateway holds its budget of request bodies', { budget_bytes: bodies.budget.limit });
  else bodies.refusals?.refused('body_timeout', 'a request body stopped arriving; the request was ended', { body_idle_timeout_ms: bodies.idleTimeoutMs });
  // Not read on: reading the rest to discard it would still allocate a 64 KiB buffer per read,
  // which under an attack is the very memory being bounded. The connection is closed once the
  // answer is handed to the kernel (a second at most if the peer reads nothing).
  req.pause();
  const status = writeError(res, err, memory ? { connection: 'close', 'retry-after': String(RETRY_AFTER_SECONDS) } : { connection: 'close' });
  const close = () => req.destroy();
  res.once('finish', () => setImmediate(close));
  setTimeout(close, 1000).unref();
  return status;
}
