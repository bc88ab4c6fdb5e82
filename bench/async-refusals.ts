// What a refused asynchronous call costs the gateway (issue 30: a flood past a bound must be
// cheap to refuse): a slow function's async queue is filled (2 MiB), then N calls of 64 KiB are
// sent 8 at a time over keep-alive connections, every one of them refused 429 `async_queue_full`,
// and the gateway's own CPU time over them is divided by N. CPU time per request is the figure
// a loaded machine moves least; the baseline runs in the same rounds, interleaved.
//
//   node bench/async-refusals.ts [--requests 3000] [--rounds 2] [--baseline <checkout>/gateway/src/main.ts]

import { Agent, request } from 'node:http';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { startGateway } from '../test/helpers/platform.ts';
import { cpuMicros } from './lib/proc.ts';
import { median } from './lib/load.ts';
import { machineDescription } from './lib/stats.ts';

const { values } = parseArgs({ options: { requests: { type: 'string', default: '3000' }, rounds: { type: 'string', default: '2' }, baseline: { type: 'string' } } });
const REQUESTS = Number(values.requests);
const ROUNDS = Number(values.rounds);
if (!Number.isInteger(REQUESTS) || REQUESTS < 1 || !Number.isInteger(ROUNDS) || ROUNDS < 1) throw new Error(`--requests and --rounds take whole numbers ≥ 1, got ${values.requests} and ${values.rounds}`);
const BODY = Buffer.alloc(64 * 1024, 'x');
const SLOW = `export default async (req, res) => { await new Promise((r) => setTimeout(r, 60000)); res.json({ ok: true }) }`;

/** One gateway: fill the queue, then REQUESTS refused calls; the gateway's CPU µs per refused call. */
async function round(main: string | undefined): Promise<{ cpuPerRequestUs: number; statuses: Record<string, number> }> {
  const gw = await startGateway({ main, env: { FNHOST_ASYNC_QUEUE_FUNCTION_BYTES: String(2 * 1024 * 1024), FNHOST_ASYNC_QUEUE_TOTAL_BYTES: String(4 * 1024 * 1024) } });
  const agent = new Agent({ keepAlive: true, maxSockets: 8 });
  try {
    const created = await fetch(`${gw.url}/api/v1/functions`, { method: 'POST', headers: { authorization: `Bearer ${gw.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'slow', code: SLOW, timeout_seconds: 120 }) });
    const { function_id: id } = (await created.json()) as { function_id: string };
    const statuses: Record<string, number> = {};
    const call = () => new Promise<number | string>((resolve) => {
      const req = request(`${gw.url}/async-invoke/${id}`, { method: 'POST', agent, headers: { 'content-type': 'application/octet-stream', 'content-length': BODY.length } }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode!));
      });
      req.on('error', (err) => resolve(err.message));
      req.end(BODY);
    });
    // Fill the queue: until the first refusal.
    for (let i = 0; i < 200 && (await call()) !== 429; i++);
    let sent = 0;
    const before = cpuMicros([gw.pid]);
    await Promise.all(Array.from({ length: 8 }, async () => {
      while (sent < REQUESTS) {
        sent++;
        const status = await call();
        statuses[status] = (statuses[status] ?? 0) + 1;
      }
    }));
    return { cpuPerRequestUs: (cpuMicros([gw.pid]) - before) / REQUESTS, statuses };
  } finally {
    agent.destroy();
    await gw.stop();
  }
}

const load0 = loadavg();
const variants = [{ name: 'this checkout', main: undefined as string | undefined }, ...(values.baseline === undefined ? [] : [{ name: 'baseline', main: values.baseline }])];
const results = variants.map(() => [] as number[]);
for (let r = 0; r < ROUNDS; r++) {
  for (const [i, v] of variants.entries()) {
    const { cpuPerRequestUs, statuses } = await round(v.main);
    if (Object.keys(statuses).some((s) => s !== '429')) throw new Error(`${v.name}: every measured call should be refused 429, got ${JSON.stringify(statuses)}`);
    results[i]!.push(cpuPerRequestUs);
  }
}
console.log(`machine: ${machineDescription()}; ${new Date().toISOString()}; load average ${load0.map((l) => l.toFixed(2)).join(' ')} → ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
console.log(`gateway CPU per refused async call (64 KiB body, queue full), µs, ${REQUESTS} calls a round:`);
console.log('| gateway | median | rounds |');
console.log('|---|---|---|');
for (const [i, v] of variants.entries()) console.log(`| ${v.name} | ${median(results[i]!).toFixed(0)} | ${results[i]!.map((x) => x.toFixed(0)).join(', ')} |`);
if (variants.length === 2) console.log(`this / baseline: ${(median(results[0]!) / median(results[1]!)).toFixed(3)}×`);
