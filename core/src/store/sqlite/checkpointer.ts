import { Worker } from 'node:worker_threads';
import type { SqliteDb } from './db.ts';

// WAL checkpoints off the event loop. By default SQLite checkpoints on the
// connection that commits the transaction taking the WAL past 1,000 pages:
// it copies those pages into the database file and fsyncs it, synchronously,
// on the gateway's one thread. Recorded requests (docs/replay.md) made the WAL
// fill several times faster, and the fsync stalled every call in flight
// (bench/RESULTS.md P1: ~45 us of event loop per recorded execution). A
// worker thread with its own connection checkpoints instead (PASSIVE: it never
// blocks the writer); the writer's own automatic checkpoint stays as a
// backstop at a larger WAL (SAFETY_PAGES), and returns to SQLite's default if
// the worker ends for any reason, so the WAL stays bounded.

/** The writer checkpoints by itself only past this many WAL pages (40 MiB at 4 KiB pages). */
const SAFETY_PAGES = 10_000;
const SQLITE_DEFAULT_PAGES = 1_000;

export class BackgroundCheckpointer {
  readonly #db: SqliteDb;
  readonly #worker: Worker;
  #stopping = false;
  #exited = false;

  constructor(db: SqliteDb, intervalMs = 250) {
    this.#db = db;
    db.db.exec(`PRAGMA wal_autocheckpoint = ${SAFETY_PAGES}`);
    this.#worker = new Worker(new URL('./checkpoint-worker.ts', import.meta.url), { workerData: { path: db.path, intervalMs } });
    this.#worker.unref();
    // A worker that fails (or could not start) leaves checkpoints to the writer, as without it.
    this.#worker.once('error', () => this.#fallBack());
    this.#worker.once('exit', () => {
      this.#exited = true;
      this.#fallBack();
    });
  }

  #fallBack(): void {
    if (this.#stopping || !this.#db.isOpen) return;
    this.#db.db.exec(`PRAGMA wal_autocheckpoint = ${SQLITE_DEFAULT_PAGES}`);
  }

  /** Stops the worker (its connection closed) before the store closes its own. */
  async stop(): Promise<void> {
    if (this.#stopping) return;
    this.#stopping = true;
    if (this.#exited) return;
    const exited = new Promise<void>((resolve) => this.#worker.once('exit', () => resolve()));
    this.#worker.ref(); // held until it is gone, or a process with nothing else to do would end before it
    this.#worker.postMessage('stop');
    await exited;
  }
}
