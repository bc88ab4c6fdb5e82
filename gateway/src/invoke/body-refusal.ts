import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Refusals } from '../resources/refusals.ts';
import { RETRY_AFTER_SECONDS } from '../http/connection-bounds.ts';
import { limits } from '@fnhost/core';
import { BodyMemoryError, BodyTimeoutError, type BodyBudget, type BodyLease } from './body-budget.ts';
import { PayloadTooLargeError, writeError } from './errors.ts';

// How the invocation path admits a request body and answers one refused at a bound (./body-budget.ts).

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

/** A request whose body may be read: whether it has one, and the memory it holds in the budget. */
export interface AdmittedBody {
  hasBody: boolean;
  lease: BodyLease | undefined;
}

/**
 * Admits an invocation's body (/invoke, /async-invoke) before a byte of it is read: a declared
 * length past the invoke limit is answered 413 and the connection closed; a body the memory
 * budget cannot hold now is refused (refuseBody). Returns undefined when the request was answered.
 */
export function admitBody(req: IncomingMessage, res: ServerResponse, bodies: BodyBounds | undefined): AdmittedBody | undefined {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limits.MAX_INVOKE_BODY_BYTES) {
    writeError(res, new PayloadTooLargeError(limits.MAX_INVOKE_BODY_BYTES), { connection: 'close' });
    req.destroy();
    return undefined;
  }
  const hasBody = declared !== undefined ? declared !== '0' : req.headers['transfer-encoding'] !== undefined;
  if (!hasBody || bodies === undefined) return { hasBody, lease: undefined };
  const declaredBytes = declared === undefined ? 0 : Number(declared);
  // The body's memory is taken from the budget before a byte of it is read (./body-budget.ts).
  const lease = bodies.budget.lease(Number.isFinite(declaredBytes) ? declaredBytes : 0);
  if (lease === undefined) {
    refuseBody(req, res, new BodyMemoryError(bodies.budget.limit), bodies);
    return undefined;
  }
  return { hasBody, lease };
}

/**
 * Answers an invocation whose body failed while it was read: too large (413; the rest discarded
 * for a few seconds so the caller can read the answer), past a bound (refuseBody). Returns the
 * status written, or undefined when the caller left while sending (nobody to answer).
 */
export function answerBodyFailure(req: IncomingMessage, res: ServerResponse, err: unknown, bodies: BodyBounds | undefined): number | undefined {
  if (err instanceof PayloadTooLargeError) {
    const status = writeError(res, err, { connection: 'close' });
    req.resume();
    setTimeout(() => req.destroy(), 5000).unref();
    return status;
  }
  if ((err instanceof BodyMemoryError || err instanceof BodyTimeoutError) && bodies !== undefined) return refuseBody(req, res, err, bodies);
  return undefined;
}
