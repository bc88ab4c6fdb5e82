// P3 and P4 for the MongoDB log store: the SQLite engineer's runner
// (bench/log-store.ts runLogStoreBench) with the MongoDB factory.
//
//   npx node bench/log-store-mongo.ts [--records 1000000] [--runs 200] [--batch 1000] [--single 20000]
//
// Uses MONGODB_URL when set (a real MongoDB: the figures that count);
// otherwise starts the mongo-java-server stand-in from test/mongo-server/
// (in-memory, no query planner worth the name: its figures say nothing about
// MongoDB, only that the code path works at this size). A benchmark, not a test.

import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { MongoClient } from 'mongodb';
import { openMongoStores } from '../core/src/store/mongo/index.ts';
import { startMongoServer } from '../test/helpers/mongo-server.ts';
import { runLogStoreBench } from './log-store.ts';
import { machineDescription } from './lib/stats.ts';

const { values } = parseArgs({
  options: {
    records: { type: 'string', default: '1000000' },
    runs: { type: 'string', default: '200' },
    batch: { type: 'string', default: '1000' },
    single: { type: 'string', default: '20000' },
    'per-second': { type: 'string', default: '10' },
  },
});

const server = await startMongoServer();
const dbName = 'fnhost_bench_' + randomUUID().slice(0, 8);
console.log(`log store bench: MongoDB at ${server.standIn ? `mongo-java-server 1.47.0 stand-in (in-memory, NOT MongoDB) on ${server.url}` : 'MONGODB_URL'}, database ${dbName}`);
console.log(`machine: ${machineDescription()}`);
console.log(`date: ${new Date().toISOString()}, load average ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
console.log(`command: npx node bench/log-store-mongo.ts ${process.argv.slice(2).join(' ')}`.trimEnd());
try {
  await runLogStoreBench(async () => openMongoStores({ url: server.url, dbName }), {
    records: Number(values.records),
    runs: Number(values.runs),
    batchSize: Number(values.batch),
    singleInserts: Number(values.single),
    perSecond: Number(values['per-second']),
  });
  console.log(`load average at the end: ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
} finally {
  if (!server.standIn) {
    const client = await MongoClient.connect(server.url);
    await client.db(dbName).dropDatabase();
    await client.close();
  }
  await server.stop();
}
