import { randomBytes } from 'node:crypto';
import { ConfigError } from '../config.ts';
import type { Logger } from '../log.ts';
import { backoffMs, loggingOnly, type BackgroundFailures } from '../background.ts';
import { RuntimeProcess } from './process.ts';

// The warm pool (as Fission's pool manager keeps generic pods): a few runtime processes started
// ahead with no function. A function's first start takes one and specializes it (docs/internal-
// protocol.md "Warm pool"), which skips the part of a start that does not depend on the function
// (Node's own start, the runtime's modules, its HTTP server); another generic process is started
// in the background to take its place.

/** A refill waits this long after a take, so the new process does not compete for CPU with the specialization it follows. */
export const REFILL_DELAY_MS = 300;
/** After a generic process died on its own, refills back off from this up to MAX_REFILL_BACKOFF_MS. */
export const REFILL_BACKOFF_MS = 1000;
export const MAX_REFILL_BACKOFF_MS = 30_000;
export const MAX_WARM_POOL = 16;

export interface GenericRuntime {
  proc: RuntimeProcess;
  /** The credential of its one specialization (FNHOST_SPECIALIZE_TOKEN). */
  token: string;
}

/** FNHOST_WARM_POOL: how many generic runtimes to keep (default 1; 0 turns the pool off). */
export function warmPoolSize(raw: string | undefined): number {
  if (raw === undefined || raw.trim() === '') return 1;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > MAX_WARM_POOL) throw new ConfigError(`FNHOST_WARM_POOL="${raw}" must be an integer from 0 to ${MAX_WARM_POOL}`);
  return n;
}

export interface WarmPoolOptions {
  size: number;
  /** Starts one generic runtime with FNHOST_SPECIALIZE_TOKEN=token. */
  spawn: (token: string) => RuntimeProcess;
  logger: Logger;
  refillDelayMs?: number;
  /** Where a refill that failed (EMFILE, ENOSPC, a sandbox that cannot be made) is reported; it retries with backoff. */
  background?: BackgroundFailures;
}

export class WarmPool {
  readonly #o: WarmPoolOptions;
  readonly #idle: GenericRuntime[] = [];
  #refill: NodeJS.Timeout | undefined;
  #failures = 0;
  #closed = false;

  constructor(options: WarmPoolOptions) {
    this.#o = options;
  }

  get size(): number {
    return this.#o.size;
  }

  /** Pids of the generic runtimes waiting now. */
  pids(): number[] {
    return this.#idle.flatMap((g) => (g.proc.pid === undefined ? [] : [g.proc.pid]));
  }

  /** How many generic runtimes are listening and waiting. */
  get ready(): number {
    let n = 0;
    for (const g of this.#idle) if (g.proc.origin !== undefined && !g.proc.exited) n++;
    return n;
  }

  /**
   * Starts generic runtimes until the pool is full. Runs from timers, so it never throws: a
   * start that fails (out of descriptors, a full disk) is reported and retried with backoff,
   * and calls meanwhile start their runtimes without the pool.
   */
  fill(): void {
    if (this.#closed) return;
    try {
      while (this.#idle.length < this.#o.size) this.#startOne();
    } catch (err) {
      this.#failures++;
      const delay = backoffMs(this.#failures, REFILL_BACKOFF_MS, MAX_REFILL_BACKOFF_MS);
      (this.#o.background ?? loggingOnly(this.#o.logger)).failed('warm_pool_refill', err, { retry_in_ms: delay });
      this.#scheduleRefill(delay);
    }
  }

  #startOne(): void {
    const token = randomBytes(32).toString('base64url');
    const proc = this.#o.spawn(token);
    const generic: GenericRuntime = { proc, token };
    this.#idle.push(generic);
    proc.listening.then(
      (origin) => {
        this.#failures = 0;
        this.#o.logger.info('warm-pool runtime ready', { pid: proc.pid, origin, sandbox: proc.sandbox?.id });
      },
      () => undefined,
    );
    void proc.exit.then(() => {
      const at = this.#idle.indexOf(generic);
      if (at === -1) return; // taken, or the pool is closing
      this.#idle.splice(at, 1);
      if (this.#closed) return;
      // Died while waiting (killed, or it cannot start): start another, backing off if this repeats.
      this.#failures++;
      const delay = backoffMs(this.#failures, REFILL_BACKOFF_MS, MAX_REFILL_BACKOFF_MS);
      this.#o.logger.warn('a warm-pool runtime ended while waiting; starting another', { pid: proc.pid, code: proc.exitCode, signal: proc.exitSignal, retry_in_ms: delay });
      this.#scheduleRefill(delay);
    });
  }

  #scheduleRefill(delayMs: number): void {
    if (this.#closed || this.#refill !== undefined) return;
    this.#refill = setTimeout(() => {
      this.#refill = undefined;
      this.fill();
    }, delayMs);
    this.#refill.unref();
  }

  /** A generic runtime for a function (undefined when none waits); a replacement starts shortly after. */
  take(): GenericRuntime | undefined {
    if (this.#closed || this.#o.size === 0) return undefined;
    let taken: GenericRuntime | undefined;
    while (taken === undefined && this.#idle.length > 0) {
      const g = this.#idle.shift()!;
      if (!g.proc.exited) taken = g;
    }
    this.#scheduleRefill(taken === undefined ? 0 : (this.#o.refillDelayMs ?? REFILL_DELAY_MS));
    return taken;
  }

  /** Stops every waiting generic runtime; none starts afterwards. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#refill);
    this.#refill = undefined;
    const all = this.#idle.splice(0);
    await Promise.all(all.map((g) => g.proc.stop()));
  }
}
