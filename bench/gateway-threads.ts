// Where a gateway's CPU goes by thread under hello load: the main thread (the event loop),
// V8's helper threads (concurrent marking, parallel scavenges, compilers), libuv's pool and
// the SQLite checkpoint worker, from /proc/<pid>/task/*/stat around one autocannon run, with
// recording on and off (FNHOST_BENCH_DISABLE_RECORDING=1). A --cpu-prof profile shows the main
// thread only; the CPU per request that bench/gateway.ts prints counts every thread.
//
//   node bench/gateway-threads.ts [--seconds 8] [--connections 50] [--main <checkout>/gateway/src/main.ts] [--flags "<node options of the gateway>"]

import { readdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { startGateway } from '../test/helpers/platform.ts';
import { createHello, load, nodeOptionsOf } from './lib/load.ts';

// autocannon ships no types.
const autocannon = (await import('autocannon' as string)).default as (o: Record<string, unknown>) => Promise<{ requests: { total: number; average: number } }>;

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '8' }, connections: { type: 'string', default: '50' }, main: { type: 'string' }, flags: { type: 'string', default: '' } } });
const TICK_US = 1e6 / 100; // USER_HZ

/** CPU µs per thread name (threads of one name summed). */
function threads(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // ended meanwhile
    }
    const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const us = (Number(fields[11]) + Number(fields[12])) * TICK_US;
    out.set(name, (out.get(name) ?? 0) + us);
  }
  return out;
}

console.log(`gateway CPU by thread — ${new Date().toISOString()} — load ${loadavg().map((l) => l.toFixed(2)).join(' ')}${values.flags === '' ? '' : ` — node options ${values.flags}`}`);
for (const [label, env] of [['recording on', {}], ['recording off', { FNHOST_BENCH_DISABLE_RECORDING: '1' }]] as const) {
  const gw = await startGateway({ main: values.main, env: { FNHOST_QUIET: '1', ...env }, nodeArgs: nodeOptionsOf(values.flags) });
  try {
    const url = await createHello(gw);
    await load('warm-up', url, undefined, { connections: Number(values.connections), seconds: 1 });
    const before = threads(gw.pid);
    const r = await autocannon({ url, connections: Number(values.connections), duration: Number(values.seconds) });
    const after = threads(gw.pid);
    const requests = r.requests.total;
    const parts = [...after].map(([name, us]) => [name, (us - (before.get(name) ?? 0)) / requests] as const).filter(([, us]) => us >= 0.5).sort((a, b) => b[1] - a[1]);
    const all = parts.reduce((n, [, us]) => n + us, 0);
    console.log(`\n${label}: ${r.requests.average.toFixed(0)} req/s, ${all.toFixed(0)} µs/req in all; by thread (µs/req): ${parts.map(([n, us]) => `${n} ${us.toFixed(1)} (${((100 * us) / all).toFixed(0)} %)`).join(', ')}`);
  } finally {
    await gw.stop();
  }
}
