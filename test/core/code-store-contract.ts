import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { CodeDigestMismatchError, CodeStoreFullError, CodeTooLargeError, digestOf } from '../../core/src/code/index.ts';
import * as limits from '../../core/src/limits.ts';
import type { CodeBounds, CodeStore } from '../../core/src/stores.ts';

// The contract every CodeStore keeps (core/src/stores.ts), registered as mocha tests. Store-
// agnostic: random blobs and namespaces, so a store may be shared between tests.

const BIG: CodeBounds = { maxTotalBytes: 2 ** 40, maxNamespaceBytes: 2 ** 40 };
const HOUR = 3_600_000;
const T0 = Date.UTC(2100, 0, 1);

/** Bytes as an upload streams them: in chunks of `chunk`. */
export async function* chunksOf(bytes: Buffer, chunk = 64 * 1024): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < bytes.length; at += chunk) yield bytes.subarray(at, at + chunk);
}

export async function readAll(source: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const part of source) parts.push(Buffer.from(part));
  return Buffer.concat(parts);
}

function blob(size = 300 * 1024): { bytes: Buffer; digest: string } {
  const bytes = randomBytes(size);
  return { bytes, digest: digestOf(bytes) };
}

const ns = (): string => `team-${randomBytes(3).toString('hex')}`;

async function refusal(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a refusal');
}

export function describeCodeStoreContract(name: string, open: () => Promise<{ code: CodeStore; close(): Promise<void> }>): void {
  describe(`code store contract: ${name}`, () => {
    let store: { code: CodeStore; close(): Promise<void> };
    beforeEach(async () => {
      store = await open();
    });
    afterEach(async () => {
      await store.close();
    });
    const put = (b: { bytes: Buffer; digest: string }, namespace: string, o: { bounds?: CodeBounds; now?: number; maxBytes?: number; digest?: string } = {}) =>
      store.code.put(chunksOf(b.bytes), { expectedDigest: o.digest ?? b.digest, namespace, maxBytes: o.maxBytes ?? limits.MAX_CODE_REF_BYTES, bounds: o.bounds ?? BIG, now: o.now ?? T0 });

    it('stores a streamed blob once, reads it back, and says whether it was new', async () => {
      const b = blob(600 * 1024 + 17);
      const team = ns();
      expect(await put(b, team)).to.deep.equal({ digest: b.digest, size: b.bytes.length, created: true });
      expect(await put(b, team, { now: T0 + 5 })).to.deep.equal({ digest: b.digest, size: b.bytes.length, created: false });
      expect(await store.code.stat(team, b.digest)).to.deep.equal({ digest: b.digest, size: b.bytes.length, uploadedAt: T0 + 5 });
      const read = await store.code.openRead(team, b.digest);
      expect((await readAll(read!)).equals(b.bytes)).to.equal(true);
      expect(await store.code.usage(team)).to.deep.equal({ bytes: b.bytes.length, blobs: 1 });
      expect((await store.code.list()).find((x) => x.digest === b.digest)).to.deep.equal({ digest: b.digest, size: b.bytes.length, uploadedAt: T0 + 5 });
    });

    it('refuses bytes that are not the digest named, storing nothing', async () => {
      const b = blob();
      const other = blob().digest;
      const team = ns();
      const err = await refusal(put(b, team, { digest: other }));
      expect(err).to.be.instanceOf(CodeDigestMismatchError);
      expect(err.message).to.include(other).and.include(b.digest);
      expect(await store.code.stat(team, other)).to.equal(null);
      expect(await store.code.stat(team, b.digest)).to.equal(null);
      expect((await store.code.list()).some((x) => x.digest === other || x.digest === b.digest)).to.equal(false);
      expect(await store.code.usage(team)).to.deep.equal({ bytes: 0, blobs: 0 });
    });

    it('refuses a blob past maxBytes as it streams', async () => {
      const b = blob(200 * 1024);
      const team = ns();
      expect(await refusal(put(b, team, { maxBytes: 100 * 1024 }))).to.be.instanceOf(CodeTooLargeError);
      expect(await store.code.stat(team, b.digest)).to.equal(null);
    });

    it('answers a namespace that never uploaded a digest as for a missing one, until it uploads the bytes itself', async () => {
      const b = blob();
      const [a, other] = [ns(), ns()];
      await put(b, a);
      expect(await store.code.stat(other, b.digest)).to.equal(null);
      expect(await store.code.openRead(other, b.digest)).to.equal(null);
      expect(await store.code.use(other, b.digest, T0)).to.equal(null);
      expect(await put(b, other, { now: T0 + 1 })).to.include({ created: false });
      expect(await store.code.stat(other, b.digest)).to.include({ size: b.bytes.length });
      expect(await store.code.usage(other)).to.deep.equal({ bytes: b.bytes.length, blobs: 1 });
      expect(await store.code.stat(a, 'sha256:nonsense')).to.equal(null);
    });

    it('refuses an upload past the total or the namespace bound, storing nothing', async () => {
      const team = ns();
      const first = blob(100 * 1024);
      await put(first, team);
      const total = (await store.code.usage()).bytes;
      const second = blob(100 * 1024);
      const full = await refusal(put(second, team, { bounds: { maxTotalBytes: total + 50 * 1024, maxNamespaceBytes: 2 ** 40 } }));
      expect(full).to.be.instanceOf(CodeStoreFullError).and.to.include({ scope: 'total', status: 507 });
      const nsFull = await refusal(put(second, team, { bounds: { maxTotalBytes: 2 ** 40, maxNamespaceBytes: 150 * 1024 } }));
      expect(nsFull).to.be.instanceOf(CodeStoreFullError).and.to.include({ scope: 'namespace' });
      expect(nsFull.message).to.include(`namespace "${team}" holds ${100 * 1024} bytes`);
      expect(await store.code.stat(team, second.digest)).to.equal(null);
      expect(await store.code.usage(team)).to.deep.equal({ bytes: 100 * 1024, blobs: 1 });
      // A blob the namespace has already adds nothing: within any bound.
      expect(await put(first, team, { bounds: { maxTotalBytes: 1, maxNamespaceBytes: 1 } })).to.include({ created: false });
    });

    it('takes two uploads of one digest at once, keeping one blob', async () => {
      const b = blob(1024 * 1024);
      const [a, other] = [ns(), ns()];
      const results = await Promise.all([put(b, a), put(b, other), put(b, a)]);
      expect(results.every((r) => r.digest === b.digest && r.size === b.bytes.length)).to.equal(true);
      expect((await store.code.list()).filter((x) => x.digest === b.digest)).to.have.length(1);
      expect((await readAll((await store.code.openRead(other, b.digest))!)).equals(b.bytes)).to.equal(true);
    });

    it('deletes a blob only when its newest upload or use is before the time given', async () => {
      const b = blob();
      const team = ns();
      await put(b, team, { now: T0 });
      expect(await store.code.delete(b.digest, T0)).to.equal(false);
      expect(await store.code.use(team, b.digest, T0 + 2 * HOUR)).to.deep.include({ uploadedAt: T0 + 2 * HOUR });
      expect(await store.code.delete(b.digest, T0 + HOUR)).to.equal(false);
      expect(await store.code.stat(team, b.digest)).to.not.equal(null);
      expect(await store.code.delete(b.digest, T0 + 3 * HOUR)).to.equal(true);
      expect(await store.code.stat(team, b.digest)).to.equal(null);
      expect(await store.code.openRead(team, b.digest)).to.equal(null);
      expect((await store.code.list()).some((x) => x.digest === b.digest)).to.equal(false);
      expect(await store.code.delete(b.digest, T0 + 3 * HOUR)).to.equal(false);
      // And it can be uploaded again.
      expect(await put(b, team, { now: T0 + 4 * HOUR })).to.include({ created: true });
    });
  });
}
