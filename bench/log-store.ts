// P3 and P4 for a log store: listing latency at 1,000,000 records of one
// function (page 1, a middle page, the last page; each with status all,
// success and error, and under count/time retention read filters) and insert
// throughput, batched and one record at a time.
//
//   npx node bench/log-store.ts [--records 1000000] [--runs 200] [--per-second 10] [--path /tmp/x.db]
//
// Run directly it measures the SQLite store on a fresh database file. Other
// stores call runLogStoreBench with their own factory (the MongoDB engineer's
// bench imports it). This is a benchmark, not a test: it asserts nothing but
// that the listings return what the filters say.

import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { RetentionPolicy, StatusFilter } from '../core/src/model.ts';
import type { StoredLog, Stores } from '../core/src/stores.ts';
import { machineDescription, percentile, timeRuns } from './lib/stats.ts';
import { reportFigure } from './lib/summary.ts';

export interface LogStoreBenchOptions {
  /** Records of the one big function (1,000,000 for P3). */
  records: number;
  /** Timed listings per case (page 1 cases get this many; deeper pages a quarter, at least 20). */
  runs: number;
  /** Records per insert() call while filling. */
  batchSize: number;
  /** Records inserted one insert() call each, for the unbatched rate. */
  singleInserts: number;
  /** Records per second of executed_at (10 by default; 20,000 puts a million records in under a minute). */
  perSecond?: number;
  log?: (line: string) => void;
}

export interface ListingResult {
  case: string;
  totalCount: number;
  p50: number;
  p99: number;
  max: number;
}

export interface LogStoreBenchResult {
  fillSeconds: number;
  batchedPerSecond: number;
  singlePerSecond: number;
  listings: ListingResult[];
}

const START = Date.UTC(2100, 0, 1);
const LIMIT = 50;

/** Status mix: 80% 200, 15% 500, 3% 404, 2% 302 (a 3xx that neither filter selects). */
function statusFor(i: number): number {
  const r = (i * 2654435761) % 100;
  return r < 80 ? 200 : r < 95 ? 500 : r < 98 ? 404 : 302;
}

function record(functionId: string, i: number, perSecond = 10): StoredLog {
  const status = statusFor(i);
  return {
    id: 'log_' + i.toString(36).padStart(8, '0') + 'benchbenchbench',
    function_id: functionId,
    status_code: status,
    execution_time_ms: i % 250,
    error_message: status >= 400 ? 'Error: something went wrong in the handler' : null,
    // Groups of ten records share one executed_at (ties are common), perSecond records a second.
    executed_at: new Date(START + Math.floor((Math.floor(i / 10) * 10_000) / perSecond)).toISOString(),
    trigger: 'http',
    expires_at: null,
  };
}

export async function runLogStoreBench(open: () => Promise<Stores>, options: LogStoreBenchOptions): Promise<LogStoreBenchResult> {
  const say = options.log ?? ((line: string) => console.log(line));
  const stores = await open();
  const perSecond = options.perSecond ?? 10;
  try {
    const fnId = randomUUID();
    // Fill, batched, as the gateway's writer does.
    let start = performance.now();
    for (let i = 0; i < options.records; i += options.batchSize) {
      const batch: StoredLog[] = [];
      for (let j = i; j < Math.min(options.records, i + options.batchSize); j++) batch.push(record(fnId, j, perSecond));
      await stores.logs.insert(batch);
    }
    const fillSeconds = (performance.now() - start) / 1000;
    const batchedPerSecond = options.records / fillSeconds;
    say(`insert batched (${options.batchSize}/call): ${options.records} records in ${fillSeconds.toFixed(2)} s = ${Math.round(batchedPerSecond)} records/s`);

    const singleFn = randomUUID();
    start = performance.now();
    for (let i = 0; i < options.singleInserts; i++) await stores.logs.insert([record(singleFn, i)]);
    const singleSeconds = (performance.now() - start) / 1000;
    const singlePerSecond = options.singleInserts / singleSeconds;
    say(`insert one per call: ${options.singleInserts} records in ${singleSeconds.toFixed(2)} s = ${Math.round(singlePerSecond)} records/s`);

    type Where = 'first' | 'middle' | 'last';
    const cases: { label: string; status: StatusFilter; retention: RetentionPolicy; where: Where; at: number; runs?: number }[] = [];
    const add = (label: string, retention: RetentionPolicy, at: number, wheres: Where[], runs?: number) => {
      for (const status of ['all', 'success', 'error'] as const) for (const where of wheres) cases.push({ label, status, retention, where, at, runs });
    };
    const spanMs = Math.ceil((options.records / perSecond) * 1000);
    const now = START + spanMs + 1000;
    // P3 proper: every record visible.
    add('none', { type: 'none' }, now, ['first', 'middle', 'last']);
    // A time window hiding the oldest 1% (what is left between sweeper runs).
    add('time, 1% expired', { type: 'time', days: 1 }, START + Math.floor(spanMs / 100) + 86_400_000, ['first', 'middle', 'last']);
    // A count window 1% smaller than what is stored (between sweeper runs).
    add('count, 1% over', { type: 'count', count: Math.floor(options.records * 0.99) }, now, ['first', 'middle', 'last']);
    // The worst case before any sweep: count set to half of what is stored.
    add('count N/2 unswept', { type: 'count', count: Math.floor(options.records / 2) }, now, ['first', 'last'], 20);
    const listings: ListingResult[] = [];
    say('');
    say(`listing, limit ${LIMIT}: case | totalCount | p50 ms | p99 ms | max ms`);
    for (const c of cases) {
      const { label, at } = c;
      const first = await stores.logs.list(fnId, { status: c.status, limit: LIMIT, page: 1 }, c.retention, at);
      const pages = first.pagination.totalPages;
      const page = c.where === 'first' ? 1 : c.where === 'middle' ? Math.ceil(pages / 2) : pages;
      const runs = c.runs ?? (c.where === 'first' ? options.runs : Math.max(20, Math.floor(options.runs / 4)));
      let returned = 0;
      const samples = await timeRuns(runs, 3, async () => {
        const result = await stores.logs.list(fnId, { status: c.status, limit: LIMIT, page }, c.retention, at);
        returned = result.logs.length;
        if (c.status === 'success' && result.logs.some((l) => l.status_code < 200 || l.status_code > 299)) throw new Error('success filter returned a non-2xx record');
        if (c.status === 'error' && result.logs.some((l) => l.status_code < 400)) throw new Error('error filter returned a record below 400');
      });
      if (returned === 0) throw new Error(`${c.status} page ${page} came back empty`);
      const result: ListingResult = {
        case: `${label}, status ${c.status}, ${c.where} page (${page} of ${pages})`,
        totalCount: first.pagination.totalCount,
        p50: percentile(samples, 50),
        p99: percentile(samples, 99),
        max: Math.max(...samples),
      };
      listings.push(result);
      say(`${result.case} | ${result.totalCount} | ${result.p50.toFixed(2)} | ${result.p99.toFixed(2)} | ${result.max.toFixed(2)}`);
    }
    return { fillSeconds, batchedPerSecond, singlePerSecond, listings };
  } finally {
    await stores.close();
  }
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      records: { type: 'string', default: '1000000' },
      runs: { type: 'string', default: '200' },
      batch: { type: 'string', default: '1000' },
      single: { type: 'string', default: '20000' },
      'per-second': { type: 'string', default: '10' },
      path: { type: 'string' },
    },
  });
  const { openSqliteStores } = await import('../core/src/store/sqlite/index.ts');
  const dir = values.path === undefined ? mkdtempSync(join(tmpdir(), 'fnhost-bench-')) : undefined;
  const path = values.path ?? join(dir!, 'logs.db');
  console.log(`log store bench: SQLite at ${path}`);
  console.log(`machine: ${machineDescription()}`);
  console.log(`date: ${new Date().toISOString()}, load average ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  console.log(`command: npx node bench/log-store.ts ${process.argv.slice(2).join(' ')}`.trimEnd());
  try {
    const result = await runLogStoreBench(async () => openSqliteStores({ path }), {
      records: Number(values.records),
      runs: Number(values.runs),
      batchSize: Number(values.batch),
      singleInserts: Number(values.single),
      perSecond: Number(values['per-second']),
    });
    console.log(`load average at the end: ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
    console.log(`database file: ${(statSync(path).size / 2 ** 20).toFixed(0)} MiB`);
    // P3 proper: every record visible (retention 'none'); the retention cases are printed above.
    const plain = result.listings.filter((l) => l.case.startsWith('none,'));
    const page1 = Math.max(...plain.filter((l) => l.case.includes('first page')).map((l) => l.p99));
    const anyPage = Math.max(...plain.map((l) => l.p99));
    reportFigure({ target: 'P3', what: `SQLite, ${values.records} records: page 1 p99 (worst case)`, measured: `${page1.toFixed(2)} ms`, bound: '≤ 10 ms', met: page1 <= 10 });
    reportFigure({ target: 'P3', what: `SQLite, ${values.records} records: any page p99 (worst case)`, measured: `${anyPage.toFixed(2)} ms`, bound: '≤ 50 ms', met: anyPage <= 50 });
    reportFigure({ target: 'P4', what: 'SQLite ingest, batched', measured: `${Math.round(result.batchedPerSecond)} records/s`, bound: '≥ 20,000/s', met: result.batchedPerSecond >= 20_000 });
  } finally {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  }
}
