import { DatabaseSync } from 'node:sqlite';
import { parentPort, workerData } from 'node:worker_threads';

// The worker side of ./checkpointer.ts: its own connection to the database
// file, copying the WAL's frames into it every `intervalMs`. A PASSIVE
// checkpoint never waits for or blocks the writer; the fsync it ends with
// happens on this thread, not on the gateway's event loop.

const { path, intervalMs } = workerData as { path: string; intervalMs: number };
const db = new DatabaseSync(path);
const timer = setInterval(() => {
  try {
    db.exec('PRAGMA wal_checkpoint(PASSIVE)');
  } catch {
    // Busy or failing this time: the next tick tries again, and the writer's backstop bounds the WAL meanwhile.
  }
}, intervalMs);

parentPort!.once('message', () => {
  clearInterval(timer);
  db.close();
  parentPort!.close();
});
