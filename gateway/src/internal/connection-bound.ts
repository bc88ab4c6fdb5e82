import type { Socket } from 'node:net';
import type { Logger } from '../log.ts';
import type { Metrics, RefusalReason } from '../metrics.ts';

// A bound on the connections one function (or, before it is known, one source: a sandbox's own
// socket, a pod's address) holds open on a listener runtimes reach: the internal API and the
// egress proxy (docs/security.md "Resources: internal API, egress, console"). A function's child
// processes could otherwise open connections until the gateway ran out of descriptors (issue 27).
// The key of a connection is known before its first request wherever it can be: one machine gives
// every sandbox sockets of its own (sandbox/gateway-sockets.ts), so the socket a connection came on
// names the function; cluster mode keys TCP connections by the pod's address at accept, and by the
// function its runtime token names once the first request shows it. Either way a connection that
// has not sent its first request is ended after a short timeout, so idle ones cannot pile up.

/** Per function (nginx's limit_conn and Envoy's per-downstream bounds are the same shape: a count per key). */
export const CONNECTION_DEFAULTS = {
  /** Internal API (KV, policy check, console): a runtime keeps a few; 64 leaves a handler's parallel KV calls room. */
  internalPerFunction: 64,
  /** Egress: the 64 tunnels FNHOST_EGRESS_MAX_CONNECTIONS allows, and as many again for DNS questions and refusals. */
  egressPerFunction: 128,
  /** From accept to the first request: a runtime sends its request at once; nginx's client_header_timeout is 60 s for strangers. */
  firstRequestTimeoutMs: 10_000,
};

/** Open connections per key, up to a limit. Pure bookkeeping: no sockets here. */
export class ConnectionCounts {
  readonly limit: number;
  readonly #counts = new Map<string, number>();

  constructor(limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`a connection bound must be a positive integer, got ${limit}`);
    this.limit = limit;
  }

  /** Takes a place for key; false when key holds `limit` already. */
  tryAcquire(key: string): boolean {
    const n = this.#counts.get(key) ?? 0;
    if (n >= this.limit) return false;
    this.#counts.set(key, n + 1);
    return true;
  }

  release(key: string): void {
    const n = (this.#counts.get(key) ?? 1) - 1;
    if (n <= 0) this.#counts.delete(key);
    else this.#counts.set(key, n);
  }

  count(key: string): number {
    return this.#counts.get(key) ?? 0;
  }

  /** Keys holding a place now (tests, metrics). */
  get keys(): number {
    return this.#counts.size;
  }
}

/**
 * One log line per key and reason per interval: a flood of refusals must not become a flood of
 * log lines. The first refusal logs at once; later ones in the interval are counted and the count
 * rides on the next line.
 */
export class RefusalLog {
  readonly #logger: Logger;
  readonly #intervalMs: number;
  readonly #now: () => number;
  readonly #last = new Map<string, { at: number; suppressed: number }>();

  constructor(logger: Logger, options: { intervalMs?: number; now?: () => number } = {}) {
    this.#logger = logger;
    this.#intervalMs = options.intervalMs ?? 10_000;
    this.#now = options.now ?? Date.now;
  }

  /** `fields` may be a function: worked out only when a line is written. */
  refused(reason: RefusalReason, subject: string, message: string, fields: Record<string, unknown> | (() => Record<string, unknown>) = {}): void {
    const key = `${reason} ${subject}`;
    const now = this.#now();
    const last = this.#last.get(key);
    if (last !== undefined && now - last.at < this.#intervalMs) {
      last.suppressed++;
      return;
    }
    // The map stays bounded: entries past their interval are dropped as new ones come.
    if (this.#last.size > 1000) for (const [k, v] of this.#last) if (now - v.at >= this.#intervalMs) this.#last.delete(k);
    this.#logger.warn(message, { reason, ...(typeof fields === 'function' ? fields() : fields), ...(last?.suppressed ? { refused_since_last_line: last.suppressed } : {}) });
    this.#last.set(key, { at: now, suppressed: 0 });
  }
}

/** What a key stands for in a log line: `function_id`, or the sandbox or address before a function is known. */
export function subjectFields(key: string): Record<string, string> {
  const colon = key.indexOf(':');
  if (colon > 0 && (key.startsWith('sandbox:') || key.startsWith('address:'))) return { [key.slice(0, colon)]: key.slice(colon + 1) };
  return { function_id: key };
}

export interface ConnectionGuardOptions {
  counts: ConnectionCounts;
  reason: RefusalReason;
  /** What the listener is, for log lines: "internal API", "egress proxy". */
  what: string;
  metrics: Metrics;
  log: RefusalLog;
  firstRequestTimeoutMs: number;
  /** Cluster mode: the function (its Service, `namespace/fn-<name>`) whose pod has an address, for log lines. */
  serviceOfAddress?: (address: string) => string | undefined;
}

const TOO_MANY = (what: string, limit: number) => {
  const body = JSON.stringify({ error: 'too_many_connections', message: `this function holds ${limit} connections to the gateway's ${what} already; close some` });
  return `HTTP/1.1 429 Too Many Requests\r\nretry-after: 1\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`;
};

/**
 * The connections of one listener: admitted under a key (or refused at once: a 429 written and
 * the descriptor closed, no request read), tagged later with the function a runtime token names,
 * and ended when no first request came within the timeout.
 */
export class ConnectionGuard {
  readonly #o: ConnectionGuardOptions;
  readonly #keys = new WeakMap<Socket, string>();
  readonly #waiting = new WeakMap<Socket, NodeJS.Timeout>();
  /** The function a shared listener's connection was counted for, at its first authenticated request. */
  readonly #functionOf = new WeakMap<Socket, string>();

  constructor(options: ConnectionGuardOptions) {
    this.#o = options;
  }

  get limit(): number {
    return this.#o.counts.limit;
  }

  /** A connection just accepted, its key known (a sandbox's socket, a pod's address): true when admitted. */
  admit(socket: Socket, key: string): boolean {
    if (!this.#take(socket, key)) {
      this.#refuse(socket, key);
      return false;
    }
    const timer = setTimeout(() => {
      this.#waiting.delete(socket);
      socket.destroy();
    }, this.#o.firstRequestTimeoutMs);
    timer.unref();
    this.#waiting.set(socket, timer);
    socket.once('close', () => clearTimeout(this.#waiting.get(socket)));
    return true;
  }

  /**
   * A request arrived on the connection, from the function its credential names: the first-request
   * timer stops, and a connection admitted under no function's key (a shared listener: the unsandboxed
   * one machine, cluster mode's pods) now also counts for that function. False when that is over the
   * bound: the caller answers 429 and closes the connection.
   */
  served(socket: Socket, functionId: string): boolean {
    this.spoke(socket);
    const key = this.#keys.get(socket);
    // A sandbox's own socket: counted under its function (or its sandbox) since accept.
    if (key === functionId || key?.startsWith('sandbox:') === true) return true;
    // Keyed by a pod's address, or not at all: the function is counted too, once per connection.
    if (this.#functionOf.has(socket)) return true;
    if (!this.#o.counts.tryAcquire(functionId)) {
      this.#note(functionId);
      return false;
    }
    this.#functionOf.set(socket, functionId);
    socket.once('close', () => this.#o.counts.release(functionId));
    return true;
  }

  /** Clears the first-request timer without naming a function (a request that failed its credential still was a request). */
  spoke(socket: Socket): void {
    const timer = this.#waiting.get(socket);
    if (timer === undefined) return;
    clearTimeout(timer);
    this.#waiting.delete(socket);
  }

  /** The connections under a key now (tests). */
  count(key: string): number {
    return this.#o.counts.count(key);
  }

  #take(socket: Socket, key: string): boolean {
    if (!this.#o.counts.tryAcquire(key)) return false;
    this.#keys.set(socket, key);
    socket.once('close', () => this.#o.counts.release(key));
    return true;
  }

  #refuse(socket: Socket, key: string): void {
    this.#note(key);
    socket.on('error', () => undefined);
    // Written before any request was read: a client that sends one reads the 429; the descriptor is closed at once either way.
    if (socket.writable) socket.write(TOO_MANY(this.#o.what, this.#o.counts.limit));
    socket.destroy();
  }

  #note(key: string): void {
    this.#o.metrics.refused(this.#o.reason);
    this.#o.log.refused(this.#o.reason, key, `connection refused: the ${this.#o.what}'s bound on open connections per function was reached`, () => {
      const fields: Record<string, string | number> = { ...subjectFields(key), limit: this.#o.counts.limit };
      const service = typeof fields.address === 'string' ? this.#o.serviceOfAddress?.(fields.address) : undefined;
      if (service !== undefined) fields.function_service = service;
      return fields;
    });
  }
}
