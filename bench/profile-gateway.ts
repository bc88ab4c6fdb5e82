// A CPU profile of the gateway on the hello path (issue 31): one gateway started with
// `--cpu-prof`, a hello function, autocannon at 50 connections, then the profile's self
// time grouped by function and by file, over the samples of the load window only.
//
//   node bench/profile-gateway.ts [--seconds 10] [--connections 50] [--main <checkout>/gateway/src/main.ts] [--top 40]
//
// The profile is written by the gateway when it exits (SIGTERM); its path is printed.

import { mkdtemp, readdir, readFile, writeFile, chmod } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startGateway } from '../test/helpers/platform.ts';
import { createHello, load } from './lib/load.ts';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '10' },
    connections: { type: 'string', default: '50' },
    main: { type: 'string' },
    top: { type: 'string', default: '40' },
  },
});

interface ProfileNode { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }
interface Profile { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[]; startTime: number }

const dir = await mkdtemp(join(tmpdir(), 'fnhost-prof-'));
// The flag goes to the gateway only: NODE_OPTIONS would reach the runtimes it starts as well.
const wrapper = join(dir, 'node.sh');
await writeFile(wrapper, `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} --cpu-prof --cpu-prof-dir=${JSON.stringify(dir)} "$@"\n`);
await chmod(wrapper, 0o755);
const gw = await startGateway({ node: wrapper, main: values.main, env: { FNHOST_QUIET: '1' } });
const url = await createHello(gw);
const t0 = Date.now();
const row = await load('gateway', url, gw.pid, { connections: Number(values.connections), seconds: Number(values.seconds) });
const t1 = Date.now();
await gw.stop();
const file = (await readdir(dir)).find((f) => f.endsWith('.cpuprofile'));
if (file === undefined) throw new Error(`no profile written in ${dir}`);
const profile = JSON.parse(await readFile(join(dir, file), 'utf8')) as Profile;

// Samples inside the load window (the profile's clock is µs since an arbitrary origin: take
// the last (seconds + 1 warm-up) before the gateway began stopping, found by the idle gap).
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const times: number[] = [];
let t = profile.startTime;
for (const d of profile.timeDeltas) times.push((t += d));
const end = times[times.length - 1]!;
const windowUs = (t1 - t0) * 1000;
const self = new Map<number, number>();
let total = 0;
let idle = 0;
for (let i = 0; i < profile.samples.length; i++) {
  if (times[i]! < end - windowUs - 2_000_000) continue;
  const n = byId.get(profile.samples[i]!)!;
  if (n.callFrame.functionName === '(idle)') { idle++; continue; }
  self.set(n.id, (self.get(n.id) ?? 0) + 1);
  total++;
}
const group = (key: (n: ProfileNode) => string): Array<[string, number]> => {
  const m = new Map<string, number>();
  for (const [id, c] of self) {
    const k = key(byId.get(id)!);
    m.set(k, (m.get(k) ?? 0) + c);
  }
  return [...m].sort((a, b) => b[1] - a[1]);
};
const short = (u: string): string => u.replace(/^file:\/\/.*?\/(gateway|core|node_modules)\//, '$1/').replace(/^node:/, 'node:');
const pct = (c: number): string => ((100 * c) / total).toFixed(1).padStart(5) + ' %';
console.log(`gateway profile — ${new Date().toISOString()} — load ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
console.log(`${row.rps.toFixed(0)} req/s, CPU ${row.cpuUs.toFixed(0)} µs/req; ${total} busy samples, ${idle} idle; profile ${join(dir, file)}\n`);
console.log('By function (self):');
for (const [k, c] of group((n) => `${n.callFrame.functionName || '(anonymous)'} ${short(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`).slice(0, Number(values.top))) console.log(`${pct(c)}  ${k}`);
console.log('\nBy file (self):');
for (const [k, c] of group((n) => short(n.callFrame.url) || `(${n.callFrame.functionName})`).slice(0, 30)) console.log(`${pct(c)}  ${k}`);
