// One error class per failure family. Each carries the machine-readable `code`
// the API puts in `{ "error": CODE, "message": TEXT }`, the HTTP status, and
// `expose` (Koa's convention: may the message be shown to the caller?).

export class FnhostError extends Error {
  readonly code: string;
  readonly status: number;
  readonly expose: boolean;
  constructor(code: string, status: number, message: string, options?: { cause?: unknown; expose?: boolean }) {
    // A refusal (4xx) is an answer to the caller, not a fault: no stack of it is ever shown or
    // logged, and capturing one is most of what building it costs (≈ 8 µs of ≈ 9 at a call depth
    // of 15 on this machine), paid on the paths a flood drives: refused console posts, 401s, 429s.
    const stackTraceLimit = Error.stackTraceLimit;
    if (status < 500) Error.stackTraceLimit = 0;
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    Error.stackTraceLimit = stackTraceLimit;
    this.name = new.target.name;
    this.code = code;
    this.status = status;
    this.expose = options?.expose ?? status < 500;
  }
}

/** Bad input: the message names the bad value and the rule. */
export class ValidationError extends FnhostError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('invalid_argument', 400, message, options);
  }
}

export class NotFoundError extends FnhostError {
  constructor(message: string) {
    super('not_found', 404, message);
  }
}

/** The function exists, the execution log asked for does not (never did, or retention removed it): apart from not_found, so a client can tell which. */
export class LogNotFoundError extends FnhostError {
  constructor(message: string) {
    super('log_not_found', 404, message);
  }
}

/** A name that is taken, or a change that conflicts with the current state. */
export class ConflictError extends FnhostError {
  constructor(message: string) {
    super('conflict', 409, message);
  }
}

/**
 * A write made from a view of the record that another writer has since changed (cluster mode:
 * another gateway, kubectl): refused rather than undo that change. The one who made it reads
 * again and makes it anew.
 */
export class ConcurrentChangeError extends ConflictError {}

/** A store (SQLite, MongoDB) failed; the message is not shown to callers. */
export class StoreError extends FnhostError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('store_unavailable', 503, message, { ...options, expose: false });
  }
}

/**
 * A function that exists but is served as nothing (cluster mode: a Function refused
 * FunctionIdTaken has no id of its own to be called by): apart from not_found, so a
 * call by name says why instead of that it does not exist.
 */
export class FunctionRefusedError extends FnhostError {
  readonly reason: string;
  constructor(reason: string, message: string) {
    super('function_refused', 409, message);
    this.reason = reason;
  }
}

/**
 * A Kubernetes ResourceQuota of the namespace refused the object (cluster mode: the number of
 * Functions, `count/functions.fnhost.dev`): the API server's message names the quota, its limit
 * and what is used, and is passed on as it is.
 */
export class KubernetesQuotaError extends FnhostError {
  constructor(message: string) {
    super('quota_exceeded', 403, message);
  }
}
