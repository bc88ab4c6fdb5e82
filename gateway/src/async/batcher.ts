// Group commit for the dispatcher's store writes (docs/async.md "Drain"):
// attempts that end in the same turn of the event loop, or while the previous
// batch is being written, are written together in one store call (one SQLite
// transaction, one MongoDB bulkWrite) instead of one each. At most one write
// is under way at a time, so a slow store makes the batches larger rather than
// the writes more numerous; a batch holds at most `maxBatch` items.

export interface BatcherOptions<T, R> {
  /** Writes one batch; answers one result per item, in order. */
  write(items: readonly T[]): Promise<R[]>;
  /** The most items one write takes. */
  maxBatch: number;
  /** Runs fn after the current turn (setImmediate; a test passes its own). */
  schedule?: (fn: () => void) => void;
}

export class BatchLengthError extends Error {
  constructor(items: number, results: number) {
    super(`a batch of ${items} items was answered with ${results} results`);
  }
}

interface Pending<T, R> {
  item: T;
  resolve(result: R): void;
  reject(err: unknown): void;
}

export class Batcher<T, R> {
  readonly #o: BatcherOptions<T, R>;
  readonly #schedule: (fn: () => void) => void;
  #waiting: Pending<T, R>[] = [];
  #scheduled = false;
  #writing = false;

  constructor(options: BatcherOptions<T, R>) {
    if (!Number.isInteger(options.maxBatch) || options.maxBatch < 1) throw new RangeError(`maxBatch ${options.maxBatch} must be a whole number of at least 1`);
    this.#o = options;
    this.#schedule = options.schedule ?? ((fn) => setImmediate(fn));
  }

  /** Items waiting for a write (not yet handed to one). */
  get waiting(): number {
    return this.#waiting.length;
  }

  /** Resolves with the item's result once the batch holding it is written; rejects with the write's error. */
  add(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.#waiting.push({ item, resolve, reject });
      this.#kick();
    });
  }

  #kick(): void {
    if (this.#scheduled || this.#writing || this.#waiting.length === 0) return;
    this.#scheduled = true;
    this.#schedule(() => {
      this.#scheduled = false;
      void this.#flush();
    });
  }

  async #flush(): Promise<void> {
    if (this.#writing || this.#waiting.length === 0) return;
    this.#writing = true;
    const batch = this.#waiting.splice(0, this.#o.maxBatch);
    try {
      const results = await this.#o.write(batch.map((p) => p.item));
      if (results.length !== batch.length) throw new BatchLengthError(batch.length, results.length);
      batch.forEach((p, i) => p.resolve(results[i]!));
    } catch (err) {
      for (const p of batch) p.reject(err);
    } finally {
      this.#writing = false;
      this.#kick();
    }
  }
}
