// Issue 31's "a startup snapshot" option for the runtime's idle memory, measured on its smallest
// case: a bare node:http hello server started plainly vs started from a user-land startup snapshot
// (`node --build-snapshot`, then `--snapshot-blob`). The runtime's own server cannot be in the
// snapshot at all: building one whose entry loads node:http before the snapshot is taken fails
// (printed below), so only the rest of a runtime's code could be, and this measures what the
// snapshot itself costs a process. RSS from /proc/<pid>/status 1.5 s after the server listens.
//
//   node bench/startup-snapshot.ts [rounds=3]

import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { machineDescription } from './lib/stats.ts';

const rounds = Number(process.argv[2] ?? 3);
const dir = mkdtempSync(join(tmpdir(), 'fnhost-snapshot-'));
const SERVE = `require('node:http').createServer((req, res) => { res.setHeader('content-type', 'application/json'); res.end('{"hello":"world"}'); }).listen(0, () => console.log('up'));`;
writeFileSync(join(dir, 'plain.cjs'), SERVE);
// node:http is loaded only once the snapshot is deserialized: taken before, the build fails.
writeFileSync(join(dir, 'lazy-http.cjs'), `require('node:v8').startupSnapshot.setDeserializeMainFunction(() => { ${SERVE} });`);
writeFileSync(join(dir, 'eager-http.cjs'), `require('node:http'); require('node:v8').startupSnapshot.setDeserializeMainFunction(() => { ${SERVE} });`);

function build(entry: string, blob: string): { ok: boolean; why: string } {
  const r = spawnSync(process.execPath, ['--snapshot-blob', join(dir, blob), '--build-snapshot', join(dir, entry)], { encoding: 'utf8' });
  const fatal = /Fatal error.*\n#\s*\n?#?\s*(.*)/.exec(r.stderr)?.[1]?.trim();
  return { ok: r.status === 0, why: r.status === 0 ? '' : `exit ${r.status ?? r.signal}: ${fatal ?? r.stderr.trim().split('\n').at(-1)}` };
}

interface Rss { rss: number; anon: number; file: number }

async function idleRss(args: string[]): Promise<Rss> {
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'ignore'] });
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => { if (d.toString().includes('up')) resolve(); });
    child.on('exit', (code) => reject(new Error(`${args.join(' ')} exited ${code}`)));
  });
  await sleep(1500);
  const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)![1]) / 1024;
  child.kill();
  return { rss: kib('VmRSS'), anon: kib('RssAnon'), file: kib('RssFile') };
}

console.log(machineDescription());
const eager = build('eager-http.cjs', 'eager.blob');
console.log(`snapshot with node:http loaded before it is taken: ${eager.ok ? 'built' : `not built (${eager.why})`}`);
const lazy = build('lazy-http.cjs', 'lazy.blob');
if (!lazy.ok) throw new Error(`the snapshot without node:http did not build: ${lazy.why}`);
console.log(`snapshot with node:http loaded after: built, blob ${(statSync(join(dir, 'lazy.blob')).size / 2 ** 20).toFixed(1)} MiB\n`);
const plain: Rss[] = [];
const snap: Rss[] = [];
for (let i = 0; i < rounds; i++) {
  plain.push(await idleRss([join(dir, 'plain.cjs')]));
  snap.push(await idleRss(['--snapshot-blob', join(dir, 'lazy.blob')]));
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const row = (name: string, rs: Rss[]) => `| ${name} | ${median(rs.map((r) => r.rss)).toFixed(1)} | ${median(rs.map((r) => r.anon)).toFixed(1)} | ${median(rs.map((r) => r.file)).toFixed(1)} |`;
console.log(`idle RSS, MiB, medians of ${rounds} interleaved rounds:\n| process | RSS | anon | file |\n|---|---|---|---|`);
console.log(row('node:http hello', plain));
console.log(row('node:http hello, started from a startup snapshot', snap));
rmSync(dir, { recursive: true, force: true });
