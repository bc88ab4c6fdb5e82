import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readdir, rename, rm, stat, utimes } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Readable, Transform } from 'node:stream';
import { digestHex, type CodeStore } from '@fnhost/core';
import type { Logger } from '../log.ts';

// Each gateway replica keeps the code blobs its pods fetch (GET /internal/v1/code/{digest}) in a
// folder of its own (the chart's emptyDir `code-cache`), by digest: a blob is read from MongoDB's
// GridFS once per replica, and every later pod start (a scale-up, a rollout, a wake from zero)
// reads the file (docs/cluster-mode.md "Large code"). Blobs never change (a digest names its
// bytes), so a file is valid for ever; a fill is verified against its digest and renamed into
// place whole, two fills of one digest share one read, and the folder is bounded by `maxBytes`
// (least recently served files deleted first). Tenancy stays the store's: every read first asks
// the store whether the namespace uploaded the digest (a small query, not the blob).

export const DEFAULT_CODE_CACHE_MAX_BYTES = 768 * 1024 * 1024;

export class DiskCodeCache {
  readonly #dir: string;
  readonly #maxBytes: number;
  readonly #log: Logger;
  readonly #filling = new Map<string, Promise<string>>();
  hits = 0;
  misses = 0;

  constructor(options: { dir: string; maxBytes: number; log: Logger }) {
    this.#dir = options.dir;
    this.#maxBytes = options.maxBytes;
    this.#log = options.log;
  }

  /** The store with openRead served through this cache (everything else as the store does it). */
  wrap(store: CodeStore): CodeStore {
    return {
      put: (source, options) => store.put(source, options),
      stat: (namespace, digest) => store.stat(namespace, digest),
      use: (namespace, digest, now) => store.use(namespace, digest, now),
      usage: (namespace) => store.usage(namespace),
      list: () => store.list(),
      delete: async (digest, uploadedBefore) => {
        const removed = await store.delete(digest, uploadedBefore);
        if (removed) await rm(this.#file(digest), { force: true });
        return removed;
      },
      openRead: (namespace, digest) => this.openRead(store, namespace, digest),
    };
  }

  #file(digest: string): string {
    return join(this.#dir, digestHex(digest));
  }

  async openRead(store: Pick<CodeStore, 'stat' | 'openRead'>, namespace: string, digest: string): Promise<AsyncIterable<Uint8Array> | null> {
    // The namespace's right to the digest, every time (the store's rule: as missing otherwise).
    if ((await store.stat(namespace, digest)) === null) return null;
    const file = this.#file(digest);
    try {
      await stat(file);
      this.hits++;
      const now = new Date();
      await utimes(file, now, now).catch(() => undefined);
      return createReadStream(file);
    } catch {
      // Not cached yet: filled once, below.
    }
    this.misses++;
    let fill = this.#filling.get(digest);
    if (fill === undefined) {
      fill = this.#fill(store, namespace, digest).finally(() => this.#filling.delete(digest));
      this.#filling.set(digest, fill);
    }
    try {
      return createReadStream(await fill);
    } catch (err) {
      // The cache is an optimisation: a fill that failed (the folder full, a write error) serves from the store.
      this.#log.warn('code cache fill failed; served from the store', { digest, error: (err as Error).message });
      return store.openRead(namespace, digest);
    }
  }

  async #fill(store: Pick<CodeStore, 'openRead'>, namespace: string, digest: string): Promise<string> {
    const source = await store.openRead(namespace, digest);
    if (source === null) throw new Error(`code ${digest} left the store while being read`);
    await mkdir(this.#dir, { recursive: true, mode: 0o700 });
    const file = this.#file(digest);
    const temp = `${file}.${process.pid}.${Date.now()}.part`;
    const hash = createHash('sha256');
    let bytes = 0;
    try {
      await pipeline(
        Readable.from(source),
        new Transform({
          transform(chunk: Buffer, _enc, done) {
            hash.update(chunk);
            bytes += chunk.length;
            done(null, chunk);
          },
        }),
        createWriteStream(temp, { mode: 0o600 }),
      );
      const got = `sha256:${hash.digest('hex')}`;
      if (got !== digest) throw new Error(`the store's bytes of ${digest} hash to ${got}`);
      await this.#makeRoom(bytes);
      await rename(temp, file);
      return file;
    } catch (err) {
      await rm(temp, { force: true });
      throw err;
    }
  }

  /** Deletes the least recently served blobs until `adding` more bytes fit under maxBytes. */
  async #makeRoom(adding: number): Promise<void> {
    const entries: Array<{ path: string; size: number; at: number }> = [];
    for (const name of await readdir(this.#dir)) {
      if (!/^[0-9a-f]{64}$/.test(name)) continue;
      const path = join(this.#dir, name);
      const s = await stat(path).catch(() => undefined);
      if (s !== undefined) entries.push({ path, size: s.size, at: s.mtimeMs });
    }
    let total = entries.reduce((sum, e) => sum + e.size, 0);
    entries.sort((a, b) => a.at - b.at);
    for (const e of entries) {
      if (total + adding <= this.#maxBytes) break;
      await rm(e.path, { force: true });
      total -= e.size;
    }
  }
}
