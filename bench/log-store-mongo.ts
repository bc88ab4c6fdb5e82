// P3 and P4 for the MongoDB log store: the SQLite engineer's runner
// (bench/log-store.ts runLogStoreBench) with the MongoDB factory.
//
//   npx node bench/log-store-mongo.ts [--records 1000000] [--runs 200] [--batch 1000] [--single 20000]
//   npx node bench/log-store-mongo.ts --sample [--records 1000000] [--runs 5]
//
// --sample fills the same way but times only a few headline listings (page 1
// and the last page, all and error, no retention and count retention): on the
// stand-in every listing scans, so the full case list at 1,000,000 records
// would take hours.
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
import { machineDescription, percentile, timeRuns } from './lib/stats.ts';
import type { RetentionPolicy, StatusFilter } from '../core/src/model.ts';
import type { StoredLog, Stores } from '../core/src/stores.ts';

const { values } = parseArgs({
  options: {
    records: { type: 'string', default: '1000000' },
    runs: { type: 'string', default: '200' },
    batch: { type: 'string', default: '1000' },
    single: { type: 'string', default: '20000' },
    'per-second': { type: 'string', default: '10' },
    sample: { type: 'boolean', default: false },
  },
});

/** The shared bench's record shape: 80% 200, 15% 500, 3% 404, 2% 302; ten records per executed_at, ten per second. */
function sampleRecord(functionId: string, i: number): StoredLog {
  const r = (i * 2654435761) % 100;
  const status = r < 80 ? 200 : r < 95 ? 500 : r < 98 ? 404 : 302;
  return {
    id: 'log_' + i.toString(36).padStart(8, '0') + 'samplesample',
    function_id: functionId,
    status_code: status,
    execution_time_ms: i % 250,
    error_message: status >= 400 ? 'Error: something went wrong in the handler' : null,
    executed_at: new Date(Date.UTC(2100, 0, 1) + Math.floor(i / 10) * 1000).toISOString(),
    trigger: 'http',
    expires_at: null,
  };
}

async function runSample(stores: Stores, records: number, batch: number, runs: number): Promise<void> {
  const fnId = randomUUID();
  const start = performance.now();
  for (let i = 0; i < records; i += batch) {
    await stores.logs.insert(Array.from({ length: Math.min(batch, records - i) }, (_, j) => sampleRecord(fnId, i + j)));
  }
  const seconds = (performance.now() - start) / 1000;
  console.log(`insert batched (${batch}/call): ${records} records in ${seconds.toFixed(2)} s = ${Math.round(records / seconds)} records/s`);
  const now = Date.UTC(2100, 0, 1) + records * 100 + 1000;
  const cases: [string, StatusFilter, RetentionPolicy, 'first' | 'last'][] = [
    ['none', 'all', { type: 'none' }, 'first'],
    ['none', 'error', { type: 'none' }, 'first'],
    ['none', 'all', { type: 'none' }, 'last'],
    ['count 99%', 'all', { type: 'count', count: Math.floor(records * 0.99) }, 'first'],
    ['count 99%', 'error', { type: 'count', count: Math.floor(records * 0.99) }, 'first'],
  ];
  console.log('');
  console.log('listing, limit 50: case | totalCount | p50 ms | p99 ms | max ms');
  for (const [label, status, retention, where] of cases) {
    const first = await stores.logs.list(fnId, { status, limit: 50, page: 1 }, retention, now);
    const page = where === 'first' ? 1 : first.pagination.totalPages;
    const samples = await timeRuns(runs, 1, () => stores.logs.list(fnId, { status, limit: 50, page }, retention, now));
    console.log(`${label}, status ${status}, ${where} page (${page} of ${first.pagination.totalPages}) | ${first.pagination.totalCount} | ${percentile(samples, 50).toFixed(2)} | ${percentile(samples, 99).toFixed(2)} | ${Math.max(...samples).toFixed(2)}`);
  }
}

const server = await startMongoServer();
const dbName = 'fnhost_bench_' + randomUUID().slice(0, 8);
console.log(`log store bench: MongoDB at ${server.standIn ? `mongo-java-server 1.47.0 stand-in (in-memory, NOT MongoDB) on ${server.url}` : 'MONGODB_URL'}, database ${dbName}`);
console.log(`machine: ${machineDescription()}`);
console.log(`date: ${new Date().toISOString()}, load average ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
console.log(`command: npx node bench/log-store-mongo.ts ${process.argv.slice(2).join(' ')}`.trimEnd());
try {
  if (values.sample) {
    const stores = await openMongoStores({ url: server.url, dbName });
    try {
      await runSample(stores, Number(values.records), Number(values.batch), Number(values.runs));
    } finally {
      await stores.close();
    }
  } else {
    await runLogStoreBench(async () => openMongoStores({ url: server.url, dbName }), {
      records: Number(values.records),
      runs: Number(values.runs),
      batchSize: Number(values.batch),
      singleInserts: Number(values.single),
      perSecond: Number(values['per-second']),
    });
  }
  console.log(`load average at the end: ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
} finally {
  if (!server.standIn) {
    const client = await MongoClient.connect(server.url);
    await client.db(dbName).dropDatabase();
    await client.close();
  }
  await server.stop();
}
