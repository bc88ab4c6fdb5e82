import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { MongoClient } from 'mongodb';
import { CodeDigestMismatchError, digestOf } from '../../core/src/code/index.ts';
import * as limits from '../../core/src/limits.ts';
import { openMongoStores } from '../../core/src/store/mongo/index.ts';
import { openSqliteStores } from '../../core/src/store/sqlite/index.ts';
import { startMongoServer, type MongoTestServer } from '../helpers/mongo-server.ts';
import { chunksOf, describeCodeStoreContract, readAll } from './code-store-contract.ts';

// The code store (core/src/code/) on both stores: files under the data folder with SQLite
// rows, and GridFS on the MongoDB stand-in.

describe('code store: SQLite mode (files in the data folder)', () => {
  let dir: string;
  let n = 0;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'fnhost-code-'));
  });
  after(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  describeCodeStoreContract('SQLite', async () => openSqliteStores({ path: join(dir, `db-${++n}.db`), codeDir: join(dir, `code-${n}`) }));

  it('writes blobs as code/sha256/<hex> beside the database, keeps them across a reopen, and leaves no temp file from a refused upload', async () => {
    const path = join(dir, 'reopen.db');
    const bytes = randomBytes(500_000);
    const digest = digestOf(bytes);
    let stores = openSqliteStores({ path });
    await stores.code.put(chunksOf(bytes), { expectedDigest: digest, namespace: 'default', maxBytes: limits.MAX_CODE_REF_BYTES, bounds: { maxTotalBytes: 1e9, maxNamespaceBytes: 1e9 }, now: 1 });
    const wrong = await stores.code.put(chunksOf(randomBytes(400_000)), { expectedDigest: digest.replace(/.$/, '0'), namespace: 'default', maxBytes: limits.MAX_CODE_REF_BYTES, bounds: { maxTotalBytes: 1e9, maxNamespaceBytes: 1e9 }, now: 1 }).catch((err: Error) => err);
    expect(wrong).to.be.instanceOf(CodeDigestMismatchError);
    expect(readdirSync(join(dir, 'code', 'sha256'))).to.deep.equal([digest.slice(7)]);
    await stores.close();
    stores = openSqliteStores({ path });
    expect((await readAll((await stores.code.openRead('default', digest))!)).equals(bytes)).to.equal(true);
    await stores.close();
  });
});

describe('code store: MongoDB (GridFS on the stand-in)', function () {
  this.timeout(180_000);
  let server: MongoTestServer;
  before(async () => {
    server = await startMongoServer();
  });
  after(async () => {
    await server?.stop();
  });
  describeCodeStoreContract('MongoDB GridFS', () => openMongoStores({ url: server.url, dbName: `fnhost_code_${randomUUID().slice(0, 8)}`, retry: { log: () => {} } }));

  it('leaves no chunk of a refused upload in GridFS', async () => {
    const dbName = `fnhost_code_${randomUUID().slice(0, 8)}`;
    const stores = await openMongoStores({ url: server.url, dbName, retry: { log: () => {} } });
    const bytes = randomBytes(700_000);
    const err = await stores.code.put(chunksOf(bytes), { expectedDigest: digestOf('other'), namespace: 'a', maxBytes: limits.MAX_CODE_REF_BYTES, bounds: { maxTotalBytes: 1e9, maxNamespaceBytes: 1e9 }, now: 1 }).catch((e: Error) => e);
    expect(err).to.be.instanceOf(CodeDigestMismatchError);
    const client = await MongoClient.connect(server.url);
    try {
      expect(await client.db(dbName).collection('code.chunks').countDocuments()).to.equal(0);
      expect(await client.db(dbName).collection('code.files').countDocuments()).to.equal(0);
    } finally {
      await client.close();
      await stores.close();
    }
  });
});
