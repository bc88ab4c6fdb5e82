import { fileURLToPath } from 'node:url';
import { cpuMicros } from './proc.ts';

// Closed-loop load (autocannon) of one target with the CPU its process spent, and the
// servers and helpers bench/gateway.ts and bench/queue-proxy.ts share.

export const HELLO = `export default (req, res) => res.json({ hello: 'world' })`;

const UNDICI = fileURLToPath(import.meta.resolve('undici'));

/** A minimal node:http server proxying to upstream with an undici Pool: P1's yardstick. */
export const HOP = (upstream: string): string => `
const http = require('node:http');
const { Pool } = require(${JSON.stringify(UNDICI)});
const pool = new Pool(${JSON.stringify(upstream)}, { connections: 128 });
const s = http.createServer(async (req, res) => {
  try {
    const r = await pool.request({ path: req.url, method: req.method, headers: req.headers, body: req.method === 'GET' ? null : req });
    const data = Buffer.from(await r.body.arrayBuffer());
    res.writeHead(r.statusCode, { 'content-type': r.headers['content-type'], 'content-length': data.length });
    res.end(data);
  } catch (e) { res.writeHead(502); res.end(); }
});
s.keepAliveTimeout = 65000;
s.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: s.address().port })));`;

// autocannon ships no types.
type Autocannon = (opts: Record<string, unknown>) => Promise<{
  requests: { average: number; total: number };
  latency: { p50: number; p99: number; average: number };
  non2xx: number;
  errors: number;
  timeouts: number;
}>;
export const autocannon = (await import('autocannon' as string)).default as Autocannon;

export interface Row {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  /** CPU of the measured process per request, µs; NaN when no process is measured. */
  cpuUs: number;
}

export interface LoadOptions {
  connections: number;
  seconds: number;
}

/** One warm-up second, then `seconds` of load; cpuUs from the CPU the pid used meanwhile. */
export async function load(name: string, url: string, pid: number | undefined, o: LoadOptions): Promise<Row> {
  await autocannon({ url, connections: o.connections, duration: 1 }); // warm-up
  const cpu0 = pid === undefined ? Number.NaN : cpuMicros([pid]);
  const r = await autocannon({ url, connections: o.connections, duration: o.seconds });
  const cpu = (pid === undefined ? Number.NaN : cpuMicros([pid])) - cpu0;
  return { name, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors + r.timeouts + r.non2xx, cpuUs: cpu / (r.requests.average * o.seconds) };
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/** The per-round medians of one target's rows. */
export function medianRow(rs: Row[]): Row {
  return { name: rs[0]!.name, rps: median(rs.map((r) => r.rps)), p50: median(rs.map((r) => r.p50)), p99: median(rs.map((r) => r.p99)), errors: rs.reduce((n, r) => n + r.errors, 0), cpuUs: median(rs.map((r) => r.cpuUs)) };
}

export function signed(ms: number): string {
  return (ms >= 0 ? '+' : '') + ms.toFixed(2);
}

export function cpuCell(us: number): string {
  return Number.isNaN(us) ? '—' : us.toFixed(0);
}

/** Creates the hello function on a gateway and gives its invocation URL. */
export async function createHello(gw: { url: string; token: string }, name = 'hello'): Promise<string> {
  const r = await fetch(`${gw.url}/api/v1/functions`, { method: 'POST', headers: { authorization: `Bearer ${gw.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ name, code: HELLO }) });
  if (r.status !== 201) throw new Error(`create ${name}: ${r.status} ${await r.text()}`);
  return ((await r.json()) as { invocation_url: string }).invocation_url;
}

/** A --flags value ("--a=1 --b") as the node options of a gateway process (startGateway's nodeArgs). */
export function nodeOptionsOf(text: string): string[] {
  return text.split(/\s+/).filter((f) => f !== '');
}
