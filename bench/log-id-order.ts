// What the order of log ids costs the SQLite store (issue 31): the real SqliteLogStore, batches
// the size the log writer makes at a busy gateway's rate, ids of 120 random bits (the format
// before) against core's newLogId (a millisecond prefix that sorts in time order, then 13 random
// characters), with a given number of records already stored. Prints the process's CPU per stored
// record (user and system), WAL checkpoints included, as the gateway's checkpoint worker runs
// them in the same process.
//
//   node bench/log-id-order.ts [--stored 100000,500000] [--batches 200] [--batch 750] [--rounds 2]
//
// The two kinds alternate within each round, each on a new database file.

import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { newLogId } from '../core/src/ids.ts';
import { openSqliteStores } from '../core/src/store/sqlite/index.ts';
import type { StoredLog } from '../core/src/stores.ts';
import { machineDescription } from './lib/stats.ts';

const { values } = parseArgs({
  options: {
    stored: { type: 'string', default: '100000,500000' },
    batches: { type: 'string', default: '200' },
    batch: { type: 'string', default: '750' },
    rounds: { type: 'string', default: '2' },
  },
});
const BATCHES = Number(values.batches);
const BATCH = Number(values.batch);

const KINDS = {
  'random (before)': () => 'log_' + randomBytes(15).toString('base64url'),
  'time-ordered (newLogId)': (ms: number) => newLogId(ms),
} as const;
type Kind = keyof typeof KINDS;

function record(id: string, ms: number): StoredLog {
  return {
    id, function_id: 'f0000000-0000-4000-8000-000000000001', status_code: 200, execution_time_ms: 1,
    error_message: null, executed_at: new Date(ms).toISOString(), trigger: 'http', expires_at: null,
  };
}

async function measure(kind: Kind, stored: number): Promise<{ user: number; system: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'fnhost-log-ids-'));
  const stores = openSqliteStores({ path: join(dir, 'fnhost.db') });
  const id = KINDS[kind];
  // 20,000 records a second of simulated time, as a busy one-machine gateway writes them.
  let ms = Date.now() - 3_600_000;
  try {
    for (let done = 0; done < stored; done += 5000) {
      const batch: StoredLog[] = [];
      for (let i = 0; i < Math.min(5000, stored - done); i++) batch.push(record(id(Math.floor((ms += 0.05))), Math.floor(ms)));
      await stores.logs.insert(batch);
    }
    const before = process.cpuUsage();
    for (let b = 0; b < BATCHES; b++) {
      const batch: StoredLog[] = [];
      for (let i = 0; i < BATCH; i++) batch.push(record(id(Math.floor((ms += 0.05))), Math.floor(ms)));
      await stores.logs.insert(batch);
    }
    const used = process.cpuUsage(before);
    const n = BATCHES * BATCH;
    return { user: used.user / n, system: used.system / n };
  } finally {
    await stores.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const load0 = loadavg();
console.log(`${machineDescription()}; load average ${load0.map((l) => l.toFixed(2)).join(' ')}`);
console.log(`batches of ${BATCH} records, ${BATCHES} batches per measurement; CPU µs per stored record (user + system), record building included\n`);
console.log('| stored before | ids | round | CPU µs / record | user | system |');
console.log('|---|---|---|---|---|---|');
for (const stored of values.stored.split(',').map(Number)) {
  const totals = new Map<Kind, number[]>();
  for (let round = 1; round <= Number(values.rounds); round++) {
    for (const kind of Object.keys(KINDS) as Kind[]) {
      const r = await measure(kind, stored);
      (totals.get(kind) ?? totals.set(kind, []).get(kind)!).push(r.user + r.system);
      console.log(`| ${stored.toLocaleString('en')} | ${kind} | ${round} | ${(r.user + r.system).toFixed(2)} | ${r.user.toFixed(2)} | ${r.system.toFixed(2)} |`);
    }
  }
  const [random, ordered] = (Object.keys(KINDS) as Kind[]).map((k) => totals.get(k)!.reduce((a, b) => a + b, 0) / totals.get(k)!.length);
  console.log(`| ${stored.toLocaleString('en')} | time-ordered / random | mean | **${(ordered! / random!).toFixed(2)}×** | | |`);
}
console.log(`\nload average after: ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
