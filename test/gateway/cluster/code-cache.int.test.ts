import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CodeBlobInfo, CodeStore } from '@fnhost/core';
import { DiskCodeCache } from '../../../gateway/src/cluster/code-cache.ts';
import { MemoryLogger } from './fakes.ts';

// A gateway replica's disk cache of code blobs (docs/cluster-mode.md "Large code"), on real files,
// over a store stand-in that counts its reads: a blob is read from the store once and then served
// from the file; a namespace that did not upload a digest gets nothing, cached or not; the folder
// stays within its bound; bytes that do not match their digest are never cached.

const MiB = 1024 * 1024;
const blob = (fill: string, size: number) => Buffer.alloc(size, fill);
const digestOf = (b: Buffer) => `sha256:${createHash('sha256').update(b).digest('hex')}`;

function store(blobs: Map<string, Buffer>, uploaders: Map<string, Set<string>>, corrupt = new Set<string>()) {
  const reads: string[] = [];
  const s: Pick<CodeStore, 'stat' | 'openRead'> = {
    async stat(ns, digest): Promise<CodeBlobInfo | null> {
      return uploaders.get(digest)?.has(ns) ? { digest, size: blobs.get(digest)!.length, uploadedAt: 0 } : null;
    },
    async openRead(ns, digest) {
      if (!uploaders.get(digest)?.has(ns)) return null;
      reads.push(digest);
      const bytes = corrupt.has(digest) ? Buffer.from('not the bytes') : blobs.get(digest)!;
      return (async function* () {
        for (let i = 0; i < bytes.length; i += 64 * 1024) yield bytes.subarray(i, i + 64 * 1024);
      })();
    },
  };
  return { s, reads };
}

async function readAll(source: AsyncIterable<Uint8Array> | null): Promise<Buffer | null> {
  if (source === null) return null;
  const chunks: Buffer[] = [];
  for await (const c of source) chunks.push(Buffer.from(c));
  return Buffer.concat(chunks);
}

describe('cluster mode: the gateway replica\'s disk cache of code blobs', function () {
  this.timeout(30_000);
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'fnhost-code-cache-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reads a blob from the store once, then serves the file; two pods starting at once share one read', async () => {
    const a = blob('a', 3 * MiB);
    const { s, reads } = store(new Map([[digestOf(a), a]]), new Map([[digestOf(a), new Set(['team-a'])]]));
    const cache = new DiskCodeCache({ dir, maxBytes: 64 * MiB, log: new MemoryLogger() });
    const [one, two] = await Promise.all([readAll(await cache.openRead(s, 'team-a', digestOf(a))), readAll(await cache.openRead(s, 'team-a', digestOf(a)))]);
    expect(one!.equals(a)).to.equal(true);
    expect(two!.equals(a)).to.equal(true);
    expect((await readAll(await cache.openRead(s, 'team-a', digestOf(a))))!.equals(a)).to.equal(true);
    expect(reads).to.deep.equal([digestOf(a)]);
    expect(cache.hits, 'the third read at least is a hit').to.be.at.least(1);
  });

  it('another namespace gets nothing, also once the blob is cached (tenancy stays the store\'s)', async () => {
    const a = blob('a', MiB);
    const { s } = store(new Map([[digestOf(a), a]]), new Map([[digestOf(a), new Set(['team-a'])]]));
    const cache = new DiskCodeCache({ dir, maxBytes: 64 * MiB, log: new MemoryLogger() });
    await readAll(await cache.openRead(s, 'team-a', digestOf(a)));
    expect(await cache.openRead(s, 'team-b', digestOf(a))).to.equal(null);
  });

  it('keeps the folder within its bound, the least recently served blob going first', async () => {
    const blobs = ['a', 'b', 'c'].map((f) => blob(f, 30 * MiB));
    const { s } = store(new Map(blobs.map((b) => [digestOf(b), b])), new Map(blobs.map((b) => [digestOf(b), new Set(['ns'])])));
    const cache = new DiskCodeCache({ dir, maxBytes: 64 * MiB, log: new MemoryLogger() });
    for (const b of blobs) await readAll(await cache.openRead(s, 'ns', digestOf(b)));
    const left = (await readdir(dir)).filter((n) => !n.endsWith('.part'));
    expect(left.sort()).to.deep.equal([digestOf(blobs[1]!), digestOf(blobs[2]!)].map((d) => d.slice(7)).sort());
  });

  it('never caches bytes that do not match their digest (served from the store, nothing kept)', async () => {
    const a = blob('a', MiB);
    const { s } = store(new Map([[digestOf(a), a]]), new Map([[digestOf(a), new Set(['ns'])]]), new Set([digestOf(a)]));
    const log = new MemoryLogger();
    const cache = new DiskCodeCache({ dir, maxBytes: 64 * MiB, log });
    await readAll(await cache.openRead(s, 'ns', digestOf(a)));
    expect(await readdir(dir)).to.deep.equal([]);
    expect(log.lines.some((l) => l.msg.includes('code cache fill failed'))).to.equal(true);
  });
});
