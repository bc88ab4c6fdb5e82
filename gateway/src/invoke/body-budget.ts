import { FnhostError } from '@fnhost/core';

// The memory budget for request bodies the gateway holds (issue 27: 150
// connections each sending 6 MiB - 1 of a declared 6 MiB body and stalling
// added 0.8 GB to the gateway's RSS). Every invocation body is read whole
// before it is sent (a call refused by a runtime that just died is sent again,
// to a new one, with the same body; a recording keeps its start), so each byte
// held is taken from this budget first: a declared Content-Length up front,
// a chunked body chunk by chunk. Past the budget the call is refused at once
// with 503 and Retry-After (never buffered), and the budget comes back when the
// call's body has been handed to the runtime (or the call ended).
//
// Seam for large uploads (code bundles up to 50 MiB, another issue): they are
// to stream to a file in the data folder and never take from this budget; a
// reader that writes to disk simply does not take a lease.

export class BodyMemoryError extends FnhostError {
  constructor(budget: number) {
    super('body_memory', 503, `the gateway holds its budget of request bodies (${budget} bytes, FNHOST_BODY_MEMORY_BYTES) already; retry shortly`, { expose: true });
  }
}

export class BodyTimeoutError extends FnhostError {
  constructor(idleMs: number) {
    super('request_timeout', 408, `no byte of the request body arrived for ${idleMs} ms`, { expose: true });
  }
}

export class BodyBudget {
  readonly limit: number;
  #used = 0;

  constructor(limitBytes: number) {
    this.limit = limitBytes;
  }

  get used(): number {
    return this.#used;
  }

  /** A lease holding `initial` bytes (a declared length), or undefined when the budget cannot give them. */
  lease(initial: number): BodyLease | undefined {
    if (!this.#take(initial)) return undefined;
    return new BodyLease(this, initial);
  }

  /** @internal (BodyLease) */
  _take(n: number): boolean {
    return this.#take(n);
  }

  /** @internal (BodyLease) */
  _give(n: number): void {
    this.#used = Math.max(0, this.#used - n);
  }

  #take(n: number): boolean {
    if (n > 0 && this.#used + n > this.limit) return false;
    this.#used += n;
    return true;
  }
}

/** One request's hold on the budget: grows as its body arrives past what it declared; released once. */
export class BodyLease {
  readonly #budget: BodyBudget;
  #held: number;
  #released = false;

  constructor(budget: BodyBudget, held: number) {
    this.#budget = budget;
    this.#held = held;
  }

  get held(): number {
    return this.#held;
  }

  /** The budget's size, for the refusal's message. */
  get budgetLimit(): number {
    return this.#budget.limit;
  }

  /** Makes the lease cover `total` bytes; false when the budget cannot give the difference. */
  cover(total: number): boolean {
    if (this.#released || total <= this.#held) return true;
    if (!this.#budget._take(total - this.#held)) return false;
    this.#held = total;
    return true;
  }

  release(): void {
    if (this.#released) return;
    this.#released = true;
    this.#budget._give(this.#held);
    this.#held = 0;
  }
}
