// What counting a killed gateway's lost records costs the log path (issue 8):
// the writer's batches carry its progress (MongoDB: a few more fields in the
// batch's note and one $max update of the instance document per batch;
// SQLite: one UPDATE inside the batch's transaction), and while executions
// begin, one progress write per interval (FNHOST_LOG_PROGRESS_INTERVAL_MS,
// 20 ms). Nothing is written per invocation.
//
//   npx node bench/log-progress.ts [--batches 100] [--batch 500] [--rounds 5] [--heartbeats 2000] [--store sqlite|mongo|both]
//
// For each store: insert throughput in batches of --batch (the writer's
// batch size) without and with progress, alternating batch by batch (each
// round gives both; medians over rounds compared), then the latency of one
// progress write. MongoDB is MONGODB_URL
// when set, otherwise the mongo-java-server stand-in (NOT MongoDB: only
// ratios in one run mean something). A benchmark, not a test.

import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { MongoClient } from 'mongodb';
import { openMongoStores } from '../core/src/store/mongo/index.ts';
import { openSqliteStores } from '../core/src/store/sqlite/index.ts';
import type { StoredLog, Stores } from '../core/src/stores.ts';
import { startMongoServer } from '../test/helpers/mongo-server.ts';
import { machineDescription, percentile } from './lib/stats.ts';
import { reportFigure } from './lib/summary.ts';

const { values } = parseArgs({
  options: {
    batches: { type: 'string', default: '100' },
    batch: { type: 'string', default: '500' },
    rounds: { type: 'string', default: '5' },
    heartbeats: { type: 'string', default: '2000' },
    store: { type: 'string', default: 'both' },
  },
});
const BATCHES = Number(values.batches);
const BATCH = Number(values.batch);
const ROUNDS = Number(values.rounds);
const HEARTBEATS = Number(values.heartbeats);

let serial = 0;
function records(functionId: string, n: number): StoredLog[] {
  return Array.from({ length: n }, (_, i) => {
    const k = ++serial;
    const status = k % 7 === 0 ? 500 : 200;
    return {
      id: `log_${k.toString(36).padStart(9, '0')}progressbench`,
      function_id: functionId,
      status_code: status,
      execution_time_ms: k % 250,
      error_message: status >= 400 ? 'Error: something went wrong in the handler' : null,
      executed_at: new Date(Date.UTC(2100, 0, 1) + serial * 10 + i).toISOString(),
      trigger: 'http' as const,
      expires_at: null,
    };
  });
}

const median = (xs: number[]) => percentile(xs, 50);

async function measure(label: string, stores: Stores): Promise<void> {
  const instance = 'gw_bench_' + randomUUID().slice(0, 8);
  await stores.instances.register({ id: instance, host: 'bench', pid: process.pid, startedAt: Date.now() }, Date.now());
  const fn = randomUUID();
  let written = 0;
  const insert = async (withProgress: boolean): Promise<number> => {
    const batch = records(fn, BATCH);
    const start = process.hrtime.bigint();
    if (withProgress) {
      await stores.logs.insert(batch, { instance, accepted: written + BATCH + 37, written: written + BATCH, at: Date.now() });
      written += BATCH;
    } else {
      await stores.logs.insert(batch);
    }
    return Number(process.hrtime.bigint() - start) / 1e9;
  };
  // A round: BATCHES batches of each kind, alternating batch by batch, so that whatever
  // comes periodically (a WAL checkpoint, a GC, another process) falls on both alike.
  const round = async (): Promise<[number, number]> => {
    const seconds = [0, 0];
    for (let b = 0; b < 2 * BATCHES; b++) seconds[b % 2]! += await insert(b % 2 === 1);
    return [(BATCHES * BATCH) / seconds[0]!, (BATCHES * BATCH) / seconds[1]!];
  };
  await round(); // warm-up
  const without: number[] = [];
  const withP: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const [a, b] = await round();
    without.push(a);
    withP.push(b);
  }
  console.log(`${label}: insert, ${BATCH}/batch, ${BATCHES * BATCH} records each way a round, ${ROUNDS} rounds`);
  console.log(`  without progress: median ${Math.round(median(without))} records/s (rounds: ${without.map(Math.round).join(', ')})`);
  console.log(`  with progress:    median ${Math.round(median(withP))} records/s (rounds: ${withP.map(Math.round).join(', ')})`);
  const ratios = withP.map((w, i) => w / without[i]!);
  console.log(`  ratio with/without: ${(median(withP) / median(without)).toFixed(3)} (medians), ${median(ratios).toFixed(3)} (median of per-round ratios, range ${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`);
  reportFigure({ target: 'issue 8', what: `${label}: log batches with / without the writer's progress`, measured: `${median(ratios).toFixed(2)}×`, bound: 'no visible cost (≥ 0.9×)', met: median(ratios) >= 0.9 });
  const samples: number[] = [];
  for (let i = 0; i < HEARTBEATS; i++) {
    const start = process.hrtime.bigint();
    await stores.instances.heartbeat({ instance, accepted: written + 40 + i, written, at: Date.now() });
    samples.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  console.log(`  one progress write (heartbeat), ${HEARTBEATS} in a row: p50 ${percentile(samples, 50).toFixed(3)} ms, p99 ${percentile(samples, 99).toFixed(3)} ms`);
  await stores.instances.end({ instance, accepted: written, written, at: Date.now() }, Date.now());
}

console.log(`log progress bench — ${new Date().toISOString()} — ${machineDescription()}`);
console.log(`load average at start: ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
console.log(`command: npx node bench/log-progress.ts ${process.argv.slice(2).join(' ')}`.trimEnd());

if (values.store === 'sqlite' || values.store === 'both') {
  const dir = mkdtempSync(join(tmpdir(), 'fnhost-progress-bench-'));
  const stores = openSqliteStores({ path: join(dir, 'bench.db') });
  try {
    await measure('SQLite (file, WAL)', stores);
  } finally {
    await stores.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (values.store === 'mongo' || values.store === 'both') {
  const server = await startMongoServer();
  const dbName = 'fnhost_bench_' + randomUUID().slice(0, 8);
  const stores = await openMongoStores({ url: server.url, dbName });
  try {
    await measure(server.standIn ? 'MongoDB wire protocol: mongo-java-server 1.47.0 stand-in (in memory, NOT MongoDB)' : 'MongoDB (MONGODB_URL)', stores);
  } finally {
    await stores.close();
    if (!server.standIn) {
      const client = await MongoClient.connect(server.url);
      await client.db(dbName).dropDatabase();
      await client.close();
    }
    await server.stop();
  }
}
console.log(`load average at the end: ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
