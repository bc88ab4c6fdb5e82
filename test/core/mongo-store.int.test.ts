import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { MongoClient } from 'mongodb';
import { openMongoStores } from '../../core/src/store/mongo/index.ts';
import type { Stores } from '../../core/src/stores.ts';
import { startMongoServer, type MongoTestServer } from '../helpers/mongo-server.ts';
import { describeStoreContract } from './store-contract.ts';

// The contract suite against MongoDB: the mongo-java-server stand-in started
// here (built by Maven on first use), or a real server from MONGODB_URL.

describe('MongoDB store', function () {
  this.timeout(180_000);
  let server: MongoTestServer;
  const dbNames: string[] = [];

  before(async () => {
    server = await startMongoServer();
  });

  after(async () => {
    if (!server) return;
    if (!server.standIn) {
      const client = await MongoClient.connect(server.url);
      for (const name of dbNames) await client.db(name).dropDatabase();
      await client.close();
    }
    await server.stop();
  });

  function open(): Promise<Stores> {
    const dbName = 'fnhost_test_' + randomUUID().slice(0, 8);
    dbNames.push(dbName);
    return openMongoStores({ url: server.url, dbName, retry: { log: () => {} } });
  }

  describeStoreContract('MongoDB', open, { timeoutMs: 120_000, expiresInBackground: !!process.env['MONGODB_URL'] });

  it('opens twice on one database: index creation is idempotent', async () => {
    const dbName = 'fnhost_test_' + randomUUID().slice(0, 8);
    dbNames.push(dbName);
    const first = await openMongoStores({ url: server.url, dbName });
    const second = await openMongoStores({ url: server.url, dbName });
    await first.close();
    await second.close();
  });
});
