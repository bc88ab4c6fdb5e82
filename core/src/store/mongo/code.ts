import { GridFSBucket, type Db, type ObjectId } from 'mongodb';
import { checkCodeBounds } from '../../code/bounds.ts';
import { isDigest, parseDigest } from '../../code/digest.ts';
import { receiveCode } from '../../code/receive.ts';
import { StoreError } from '../../errors.ts';
import type { CodeBlobInfo, CodeBounds, CodePutResult, CodeStore } from '../../stores.ts';
import type { MongoContext } from './context.ts';

// Cluster mode's code store: the blobs in GridFS (bucket `code`: collections code.files and
// code.chunks, filename = digest), which splits them into 255 KiB chunks under MongoDB's 16 MiB
// document limit; which namespaces uploaded each in `code_uploads` (one document per digest and
// namespace, with the size, so a namespace's bytes need no join). GridFS writes a file's
// document after its last chunk, so a file document means a complete blob. Two uploads of one
// digest at once both write; the one with the smaller _id is kept and the other deleted.

export const CODE_BUCKET = 'code';
const UPLOADS = 'code_uploads';
/** GridFS's default chunk size (255 KiB): a 50 MiB blob is ~200 chunk documents. */
const CHUNK_BYTES = 255 * 1024;

interface UploadDoc {
  _id: string;
  digest: string;
  namespace: string;
  size: number;
  uploaded_ms: number;
}

interface FileDoc {
  _id: ObjectId;
  filename: string;
  length: number;
}

export async function ensureCodeIndexes(db: Db): Promise<void> {
  await db.collection(UPLOADS).createIndexes([
    { key: { digest: 1 }, name: 'by_digest' },
    { key: { namespace: 1 }, name: 'by_namespace' },
  ]);
  // The bucket's own indexes (files by filename, chunks by file and n) are made by the driver on its first write.
}

function uploadId(digest: string, namespace: string): string {
  return `${digest}/${namespace}`;
}

export class MongoCodeStore implements CodeStore {
  readonly #db: Db;
  readonly #ctx: MongoContext;
  readonly #bucket: GridFSBucket;
  #inFlight = 0;
  readonly #inFlightByNamespace = new Map<string, number>();

  constructor(db: Db, ctx: MongoContext) {
    this.#db = db;
    this.#ctx = ctx;
    this.#bucket = new GridFSBucket(db, { bucketName: CODE_BUCKET, chunkSizeBytes: CHUNK_BYTES });
  }

  get #files() {
    return this.#db.collection<FileDoc>(`${CODE_BUCKET}.files`);
  }

  get #uploads() {
    return this.#db.collection<UploadDoc>(UPLOADS);
  }

  /** The kept file of a digest (the smallest _id of its complete files), or null. */
  async #file(digest: string): Promise<FileDoc | null> {
    const [file] = await this.#files.find({ filename: digest }, { projection: { _id: 1, filename: 1, length: 1 } }).sort({ _id: 1 }).limit(1).toArray();
    return file ?? null;
  }

  async #usageNow(digest: string, namespace: string) {
    const [files, mine, has] = await Promise.all([
      this.#files.find({}, { projection: { filename: 1, length: 1 } }).toArray(),
      this.#uploads.find({ namespace }, { projection: { size: 1 } }).toArray(),
      this.#uploads.findOne({ _id: uploadId(digest, namespace) }, { projection: { _id: 1 } }),
    ]);
    const distinct = new Map(files.map((f) => [f.filename, f.length]));
    return {
      totalBytes: [...distinct.values()].reduce((a, b) => a + b, 0),
      namespaceBytes: mine.reduce((a, u) => a + u.size, 0),
      blobStored: distinct.has(digest),
      namespaceHas: has !== null,
    };
  }

  #hold(namespace: string, delta: number): void {
    this.#inFlight += delta;
    this.#inFlightByNamespace.set(namespace, (this.#inFlightByNamespace.get(namespace) ?? 0) + delta);
  }

  async put(source: AsyncIterable<Uint8Array>, o: { expectedDigest: string; namespace: string; maxBytes: number; bounds: CodeBounds; now: number }): Promise<CodePutResult> {
    const digest = parseDigest(o.expectedDigest);
    const before = await this.#ctx.run('code usage', true, () => this.#usageNow(digest, o.namespace));
    // Stored already: the bytes are still read and hashed (an uploader proves it has them before
    // its namespace may use the digest) but not written again.
    const upload = before.blobStored ? undefined : this.#bucket.openUploadStream(digest, { chunkSizeBytes: CHUNK_BYTES });
    let held = 0;
    let size: number;
    try {
      size = await receiveCode(source, digest, o.maxBytes, async (chunk) => {
        if (upload === undefined) return;
        if (!upload.write(chunk)) await new Promise<void>((resolve, reject) => {
          const done = (err?: Error): void => {
            upload.off('drain', done);
            upload.off('error', done);
            if (err) reject(err);
            else resolve();
          };
          upload.once('drain', done);
          upload.once('error', done);
        });
      }, (grown) => {
        if (upload === undefined) return;
        checkCodeBounds({ ...before, inFlightBytes: this.#inFlight - held, inFlightNamespaceBytes: (this.#inFlightByNamespace.get(o.namespace) ?? 0) - held }, grown, o.bounds, o.namespace);
        this.#hold(o.namespace, grown - held);
        held = grown;
      });
      const now = await this.#ctx.run('code usage', true, () => this.#usageNow(digest, o.namespace));
      this.#hold(o.namespace, -held);
      held = 0;
      checkCodeBounds({ ...now, inFlightBytes: this.#inFlight, inFlightNamespaceBytes: this.#inFlightByNamespace.get(o.namespace) ?? 0 }, size, o.bounds, o.namespace);
      if (upload !== undefined) {
        await new Promise<void>((resolve, reject) => {
          upload.once('error', reject);
          upload.end(() => resolve());
        });
        // A concurrent upload of the same digest finished too: keep the smallest _id.
        const kept = await this.#file(digest);
        if (kept !== null && !kept._id.equals(upload.id)) await this.#bucket.delete(upload.id).catch(() => undefined);
      }
    } catch (err) {
      this.#hold(o.namespace, -held);
      if (upload !== undefined && !upload.closed) await upload.abort().catch(() => undefined);
      else if (upload !== undefined) await this.#bucket.delete(upload.id).catch(() => undefined);
      throw err;
    }
    await this.#ctx.run('code upload record', true, () => this.#uploads.updateOne(
      { _id: uploadId(digest, o.namespace) },
      { $max: { uploaded_ms: o.now }, $set: { digest, namespace: o.namespace, size } },
      { upsert: true },
    ));
    // GC may have taken the blob between the check above and the record (its grace makes this all but impossible).
    if (await this.#file(digest) === null) throw new StoreError(`code ${digest} was collected while it was uploaded again; upload it once more`);
    return { digest, size, created: !before.blobStored };
  }

  async #stat(namespace: string, digest: string): Promise<CodeBlobInfo | null> {
    if (!isDigest(digest)) return null;
    const [mine, file, all] = await Promise.all([
      this.#uploads.findOne({ _id: uploadId(digest, namespace) }),
      this.#file(digest),
      this.#uploads.find({ digest }, { projection: { uploaded_ms: 1 } }).toArray(),
    ]);
    if (mine === null || file === null) return null;
    return { digest, size: file.length, uploadedAt: Math.max(...all.map((u) => u.uploaded_ms)) };
  }

  stat(namespace: string, digest: string): Promise<CodeBlobInfo | null> {
    return this.#ctx.run('code stat', true, () => this.#stat(namespace, digest));
  }

  use(namespace: string, digest: string, now: number): Promise<CodeBlobInfo | null> {
    return this.#ctx.run('code use', true, async () => {
      if (!isDigest(digest)) return null;
      const updated = await this.#uploads.updateOne({ _id: uploadId(digest, namespace) }, { $max: { uploaded_ms: now } });
      if (updated.matchedCount === 0) return null;
      return this.#stat(namespace, digest);
    });
  }

  openRead(namespace: string, digest: string): Promise<AsyncIterable<Uint8Array> | null> {
    return this.#ctx.run('code read', true, async () => {
      if ((await this.#stat(namespace, digest)) === null) return null;
      const file = await this.#file(digest);
      return file === null ? null : this.#bucket.openDownloadStream(file._id);
    });
  }

  usage(namespace?: string): Promise<{ bytes: number; blobs: number }> {
    return this.#ctx.run('code usage', true, async () => {
      if (namespace !== undefined) {
        const mine = await this.#uploads.find({ namespace }, { projection: { size: 1 } }).toArray();
        return { bytes: mine.reduce((a, u) => a + u.size, 0), blobs: mine.length };
      }
      const files = await this.#files.find({}, { projection: { filename: 1, length: 1 } }).toArray();
      const distinct = new Map(files.map((f) => [f.filename, f.length]));
      return { bytes: [...distinct.values()].reduce((a, b) => a + b, 0), blobs: distinct.size };
    });
  }

  list(): Promise<CodeBlobInfo[]> {
    return this.#ctx.run('code list', true, async () => {
      const [files, uploads] = await Promise.all([
        this.#files.find({}, { projection: { filename: 1, length: 1, uploadDate: 1 } }).toArray(),
        this.#uploads.find({}, { projection: { digest: 1, uploaded_ms: 1 } }).toArray(),
      ]);
      const newest = new Map<string, number>();
      for (const u of uploads) newest.set(u.digest, Math.max(newest.get(u.digest) ?? 0, u.uploaded_ms));
      const out = new Map<string, CodeBlobInfo>();
      for (const f of files as Array<FileDoc & { uploadDate: Date }>) {
        if (!isDigest(f.filename) || out.has(f.filename)) continue;
        out.set(f.filename, { digest: f.filename, size: f.length, uploadedAt: newest.get(f.filename) ?? f.uploadDate.getTime() });
      }
      return [...out.values()].sort((a, b) => (a.digest < b.digest ? -1 : 1));
    });
  }

  delete(digest: string, uploadedBefore: number): Promise<boolean> {
    return this.#ctx.run('code delete', true, async () => {
      if (!isDigest(digest)) return false;
      const files = await this.#files.find({ filename: digest }, { projection: { _id: 1, uploadDate: 1 } }).toArray() as Array<FileDoc & { uploadDate: Date }>;
      if (files.length === 0) return false;
      // Uploaded or used again since GC listed it: kept.
      if ((await this.#uploads.countDocuments({ digest, uploaded_ms: { $gte: uploadedBefore } })) > 0) return false;
      if (files.some((f) => f.uploadDate.getTime() >= uploadedBefore)) return false;
      await this.#uploads.deleteMany({ digest, uploaded_ms: { $lt: uploadedBefore } });
      if ((await this.#uploads.countDocuments({ digest })) > 0) return false;
      for (const f of files) await this.#bucket.delete(f._id).catch(() => undefined);
      return true;
    });
  }
}
