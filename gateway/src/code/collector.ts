import { collectableCode, referencedDigests, type CodeStore } from '@fnhost/core';
import type { Background } from '../background.ts';
import type { Logger } from '../log.ts';

// One machine's code GC: every interval, blobs no function references and last uploaded (or
// used) longer ago than the grace are deleted. The decision is core's collectableCode (cluster
// mode's GC makes the same one); the store's delete refuses a blob uploaded or used since the
// listing, so a create racing the sweep keeps its code.

export interface CodeCollectorOptions {
  store: CodeStore;
  /** The code references of every function, and of anything else a runtime may load (throwaways). */
  references: () => Iterable<{ digest: string; size: number } | undefined>;
  graceMs: number;
  intervalMs: number;
  now: () => number;
  background: Pick<Background, 'guard' | 'failed'>;
  logger: Logger;
}

export class CodeCollector {
  readonly #o: CodeCollectorOptions;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<number> | undefined;

  constructor(options: CodeCollectorOptions) {
    this.#o = options;
  }

  start(): void {
    this.#timer = setInterval(this.#o.background.guard('code_gc', () => this.collect()), this.#o.intervalMs);
    this.#timer.unref();
  }

  /** One sweep (one at a time); resolves to how many blobs were deleted. */
  collect(): Promise<number> {
    this.#running ??= this.#sweep().finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  async #sweep(): Promise<number> {
    const now = this.#o.now();
    const blobs = await this.#o.store.list();
    const doomed = collectableCode(blobs, referencedDigests(this.#o.references()), now, this.#o.graceMs);
    let deleted = 0;
    for (const digest of doomed) if (await this.#o.store.delete(digest, now - this.#o.graceMs + 1)) deleted++;
    if (deleted > 0) this.#o.logger.info('unreferenced code collected', { blobs: deleted });
    return deleted;
  }

  async close(): Promise<void> {
    clearInterval(this.#timer);
    await this.#running?.catch(() => undefined);
  }
}
