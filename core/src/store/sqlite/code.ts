import { randomBytes } from 'node:crypto';
import { closeSync, createReadStream, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, renameSync, unlinkSync } from 'node:fs';
import { open, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { checkCodeBounds } from '../../code/bounds.ts';
import { digestHex, parseDigest } from '../../code/digest.ts';
import { receiveCode } from '../../code/receive.ts';
import type { CodeBlobInfo, CodeBounds, CodePutResult, CodeStore } from '../../stores.ts';
import type { SqliteDb } from './db.ts';

// One machine's code store: each blob a file `<dir>/sha256/<hex>` (mode 0600), written to a temp
// file in the same folder, fsynced and renamed (a crash leaves a whole blob or none), and its
// rows in SQLite (schema.ts 13 -> 14): the blob once complete, and each namespace that uploaded
// it. The commit (bound check, rename, rows) runs without yielding, so it is atomic against
// other commits and GC's delete on this one event loop.

const TEMP_PREFIX = '.upload-';

interface UsageRow {
  bytes: number | null;
  blobs: number;
}

export class SqliteCodeStore implements CodeStore {
  readonly #db: SqliteDb;
  readonly #dir: string;
  /** Bytes of uploads in flight, in all and per namespace (their temp files). */
  #inFlight = 0;
  readonly #inFlightByNamespace = new Map<string, number>();

  constructor(db: SqliteDb, dir: string) {
    this.#db = db;
    this.#dir = join(dir, 'sha256');
    mkdirSync(this.#dir, { recursive: true, mode: 0o700 });
    // Temp files of uploads a crash or kill interrupted: never a blob, never referenced.
    for (const name of readdirSync(this.#dir)) if (name.startsWith(TEMP_PREFIX)) unlinkSync(join(this.#dir, name));
  }

  #file(digest: string): string {
    return join(this.#dir, digestHex(digest));
  }

  #usageNow(digest: string, namespace: string) {
    const total = this.#db.get<UsageRow>('SELECT sum(size) AS bytes, count(*) AS blobs FROM code_blobs')!;
    const ns = this.#nsUsage(namespace);
    return {
      totalBytes: total.bytes ?? 0,
      namespaceBytes: ns.bytes ?? 0,
      blobStored: this.#db.get('SELECT 1 FROM code_blobs WHERE digest = ?', digest) !== undefined && existsSync(this.#file(digest)),
      namespaceHas: this.#db.get('SELECT 1 FROM code_uploads WHERE digest = ? AND namespace = ?', digest, namespace) !== undefined,
    };
  }

  #nsUsage(namespace: string): UsageRow {
    return this.#db.get<UsageRow>('SELECT sum(b.size) AS bytes, count(*) AS blobs FROM code_uploads u JOIN code_blobs b ON b.digest = u.digest WHERE u.namespace = ?', namespace)!;
  }

  async put(source: AsyncIterable<Uint8Array>, o: { expectedDigest: string; namespace: string; maxBytes: number; bounds: CodeBounds; now: number }): Promise<CodePutResult> {
    const digest = parseDigest(o.expectedDigest);
    return this.#db.guardAsync('code put', async () => {
      const temp = join(this.#dir, `${TEMP_PREFIX}${randomBytes(8).toString('hex')}`);
      const fh = await open(temp, 'wx', 0o600);
      let held = 0;
      const hold = (size: number): void => {
        this.#inFlight += size - held;
        this.#inFlightByNamespace.set(o.namespace, (this.#inFlightByNamespace.get(o.namespace) ?? 0) + size - held);
        held = size;
      };
      let closed = false;
      try {
        const size = await receiveCode(source, digest, o.maxBytes, async (chunk) => {
          await fh.write(chunk);
        }, (size) => {
          // Bound on the bytes as they come: a flood cannot fill the disk with temp files past it.
          checkCodeBounds({ ...this.#usageNow(digest, o.namespace), inFlightBytes: this.#inFlight - held, inFlightNamespaceBytes: (this.#inFlightByNamespace.get(o.namespace) ?? 0) - held }, size, o.bounds, o.namespace);
          hold(size);
        });
        await fh.sync();
        await fh.close();
        closed = true;
        // The commit: no await from here on.
        hold(0);
        const usage = this.#usageNow(digest, o.namespace);
        checkCodeBounds({ ...usage, inFlightBytes: this.#inFlight, inFlightNamespaceBytes: this.#inFlightByNamespace.get(o.namespace) ?? 0 }, size, o.bounds, o.namespace);
        if (!usage.blobStored) {
          renameSync(temp, this.#file(digest));
          syncDir(this.#dir);
        } else unlinkSync(temp);
        this.#db.transaction(() => {
          this.#db.run('INSERT INTO code_blobs (digest, size, created_ms) VALUES (?, ?, ?) ON CONFLICT (digest) DO NOTHING', digest, size, o.now);
          this.#db.run('INSERT INTO code_uploads (digest, namespace, uploaded_ms) VALUES (?, ?, ?) ON CONFLICT (digest, namespace) DO UPDATE SET uploaded_ms = max(uploaded_ms, excluded.uploaded_ms)', digest, o.namespace, o.now);
        });
        return { digest, size, created: !usage.blobStored };
      } finally {
        hold(0);
        if (!closed) await fh.close().catch(() => undefined);
        await unlink(temp).catch(() => undefined);
      }
    });
  }

  #stat(namespace: string, digest: string): CodeBlobInfo | null {
    if (!/^sha256:[0-9a-f]{64}$/.test(digest)) return null;
    const row = this.#db.get<{ size: number; uploaded: number }>(
      'SELECT b.size AS size, (SELECT max(uploaded_ms) FROM code_uploads WHERE digest = b.digest) AS uploaded FROM code_blobs b JOIN code_uploads u ON u.digest = b.digest WHERE b.digest = ? AND u.namespace = ?',
      digest, namespace);
    if (row === undefined || !existsSync(this.#file(digest))) return null;
    return { digest, size: row.size, uploadedAt: row.uploaded };
  }

  stat(namespace: string, digest: string): Promise<CodeBlobInfo | null> {
    return this.#db.guard('code stat', () => this.#stat(namespace, digest));
  }

  use(namespace: string, digest: string, now: number): Promise<CodeBlobInfo | null> {
    return this.#db.guard('code use', () => {
      if (this.#stat(namespace, digest) === null) return null;
      this.#db.run('UPDATE code_uploads SET uploaded_ms = max(uploaded_ms, ?) WHERE digest = ? AND namespace = ?', now, digest, namespace);
      return this.#stat(namespace, digest);
    });
  }

  openRead(namespace: string, digest: string): Promise<AsyncIterable<Uint8Array> | null> {
    return this.#db.guard('code read', () => {
      if (this.#stat(namespace, digest) === null) return null;
      // Opened now (a GC unlink after this still leaves the open file readable).
      const fd = openSync(this.#file(digest), 'r');
      return createReadStream('', { fd, highWaterMark: 256 * 1024 });
    });
  }

  usage(namespace?: string): Promise<{ bytes: number; blobs: number }> {
    return this.#db.guard('code usage', () => {
      const row = namespace === undefined ? this.#db.get<UsageRow>('SELECT sum(size) AS bytes, count(*) AS blobs FROM code_blobs')! : this.#nsUsage(namespace);
      return { bytes: row.bytes ?? 0, blobs: row.blobs };
    });
  }

  list(): Promise<CodeBlobInfo[]> {
    return this.#db.guard('code list', () => this.#db.all<{ digest: string; size: number; uploaded: number | null; created: number }>(
      'SELECT b.digest AS digest, b.size AS size, b.created_ms AS created, (SELECT max(uploaded_ms) FROM code_uploads WHERE digest = b.digest) AS uploaded FROM code_blobs b ORDER BY b.digest',
    ).map((r) => ({ digest: r.digest, size: r.size, uploadedAt: r.uploaded ?? r.created })));
  }

  delete(digest: string, uploadedBefore: number): Promise<boolean> {
    return this.#db.guard('code delete', () => {
      if (!/^sha256:[0-9a-f]{64}$/.test(digest)) return false;
      const row = this.#db.get<{ uploaded: number | null; created: number }>(
        'SELECT created_ms AS created, (SELECT max(uploaded_ms) FROM code_uploads WHERE digest = ?) AS uploaded FROM code_blobs WHERE digest = ?', digest, digest);
      if (row === undefined || (row.uploaded ?? row.created) >= uploadedBefore) return false;
      this.#db.transaction(() => {
        this.#db.run('DELETE FROM code_uploads WHERE digest = ?', digest);
        this.#db.run('DELETE FROM code_blobs WHERE digest = ?', digest);
      });
      try {
        unlinkSync(this.#file(digest));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
      return true;
    });
  }
}

/** A rename is durable once its folder is synced. */
function syncDir(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
