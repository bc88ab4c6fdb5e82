// P8 on the kube-context path: wall time of `fnhost function:list --output json`
// against a cluster-mode gateway when the namespace comes from the current kube
// context (the CLI asks GET /api/v1/info, then reads and parses KUBECONFIG),
// against `node -e 0`, beside the same command with `-n` (kube context not
// read) and with no kubeconfig file (mode not asked). Prints a table of medians
// and ratios; the server's own time for the requests each path makes is
// measured in the same run and subtracted for the P8 figure.
//
//   node bench/cli-kube.ts [--runs 20] [--bin path/to/fnhost.js]
//
// --bin times another checkout's CLI (say, an older commit's `cli/` extracted
// with git archive next to a node_modules link) under the same conditions.
//
// A cluster-mode gateway needs a cluster, so the server is the same kind of
// stand-in test/cli/namespace.int.test.ts uses: an in-process node:http server
// that answers /api/v1/info with {"mode":"cluster"} and a function list from
// memory (server time ~0). The kubeconfig is a realistic one: three clusters,
// users and contexts with certificate data, 15 KB.

import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { reportFigure } from './lib/summary.ts';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '20' }, bin: { type: 'string' } } });
const BIN = values.bin ?? fileURLToPath(new URL('../cli/bin/fnhost.js', import.meta.url));
const RUNS = Number(values.runs);
const TOKEN = 'bench-token';

const functions = Array.from({ length: 20 }, (_, i) => ({ function_id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`, name: `fn-${i}`, namespace: 'team-a', active: true }));
const server = createServer((req, res) => {
  req.resume();
  const url = new URL(req.url!, 'http://stand-in');
  res.setHeader('content-type', 'application/json');
  if (req.headers.authorization !== `Bearer ${TOKEN}`) {
    res.writeHead(401);
    res.end(JSON.stringify({ error: 'unauthorized', message: 'the token is wrong' }));
  } else if (url.pathname === '/api/v1/info') res.end(JSON.stringify({ mode: 'cluster', default_namespace: 'default' }));
  else res.end(JSON.stringify({ functions }));
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

const dir = mkdtempSync(join(tmpdir(), 'fnhost-bench-kube-'));
const blob = Buffer.alloc(1200, 7).toString('base64');
const lines = ['apiVersion: v1', 'kind: Config', 'preferences: {}', 'clusters:'];
for (const c of ['prod', 'staging', 'dev']) lines.push(`- name: ${c}`, '  cluster:', `    server: https://${c}.example.com:6443`, `    certificate-authority-data: ${blob}`);
lines.push('users:');
for (const c of ['prod', 'staging', 'dev']) lines.push(`- name: ${c}-admin`, '  user:', `    client-certificate-data: ${blob}`, `    client-key-data: ${blob}`);
lines.push('contexts:');
for (const c of ['prod', 'staging', 'dev']) lines.push(`- name: ${c}`, '  context:', `    cluster: ${c}`, `    user: ${c}-admin`, `    namespace: team-${c === 'dev' ? 'a' : c}`);
lines.push('current-context: dev', '');
const kubeconfig = join(dir, 'config');
writeFileSync(kubeconfig, lines.join('\n'));

/** Wall time of one run, spawned asynchronously so the in-process server keeps answering. */
function time(argv: string[], env: NodeJS.ProcessEnv, expect?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const start = process.hrtime.bigint();
    const child = spawn(argv[0]!, argv.slice(1), { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      const ms = Number(process.hrtime.bigint() - start) / 1e6;
      if (code !== 0) reject(new Error(`${argv.join(' ')} exited ${code}: ${stderr}`));
      else if (expect !== undefined && !stdout.includes(expect)) reject(new Error(`${argv.join(' ')} printed no ${expect}: ${stdout}`));
      else resolve(ms);
    });
  });
}

/** The server's own time for one request: a fresh connection each time, as the CLI makes. */
function serverTime(path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const start = process.hrtime.bigint();
    const req = request(`${base}${path}`, { agent: false, headers: { authorization: `Bearer ${TOKEN}` } }, (res) => {
      res.resume();
      res.on('end', () => resolve(Number(process.hrtime.bigint() - start) / 1e6));
    });
    req.on('error', reject);
    req.end();
  });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

try {
  const env = { ...process.env, FNHOST_URL: base, FNHOST_TOKEN: TOKEN, FNHOST_NAMESPACE: '', HOME: dir, XDG_CONFIG_HOME: join(dir, 'xdg') };
  const kubeEnv = { ...env, KUBECONFIG: kubeconfig };
  const noKubeEnv = { ...env, KUBECONFIG: join(dir, 'missing') };
  const node = [process.execPath, '-e', '0'];
  const list = [process.execPath, BIN, 'function:list', '--output', 'json'];
  const listNamed = [...list, '-n', 'team-a'];
  // Warm-up: fills Node's compile cache and the OS file cache, as any second run would find them.
  for (let i = 0; i < 3; i++) {
    await time(node, env);
    await time(list, kubeEnv, 'fn-19');
    await time(listNamed, kubeEnv, 'fn-19');
    await time(list, noKubeEnv, 'fn-19');
  }
  const s = { node: [] as number[], kube: [] as number[], named: [] as number[], none: [] as number[], info: [] as number[], list: [] as number[] };
  for (let i = 0; i < RUNS; i++) {
    s.node.push(await time(node, env));
    s.kube.push(await time(list, kubeEnv, 'fn-19'));
    s.named.push(await time(listNamed, kubeEnv, 'fn-19'));
    s.none.push(await time(list, noKubeEnv, 'fn-19'));
    s.info.push(await serverTime('/api/v1/info'));
    s.list.push(await serverTime('/api/v1/functions?namespace=team-a'));
  }
  const b = median(s.node);
  const kubeNet = median(s.kube) - median(s.info) - median(s.list);
  const rows: Array<[string, number, number]> = [
    ['node -e 0', b, 1],
    ['function:list -o json, namespace from the kube context (wall)', median(s.kube), median(s.kube) / b],
    ['  server time, /info + /functions (medians)', median(s.info) + median(s.list), NaN],
    ['  wall minus server time (P8, target ≤ 4×)', kubeNet, kubeNet / b],
    ['function:list -o json -n team-a (wall)', median(s.named), median(s.named) / b],
    ['function:list -o json, no kubeconfig file (wall)', median(s.none), median(s.none) / b],
  ];
  console.log(`P8 CLI start, kube-context path: ${new Date().toISOString()}, ${cpus().length} × ${cpus()[0]?.model ?? '?'}, load ${loadavg().map((l) => l.toFixed(2)).join(' ')}, Node ${process.versions.node}, ${RUNS} interleaved runs each (medians), server: in-process cluster-mode stand-in, kubeconfig ${lines.join('\n').length} bytes, CLI ${BIN}`);
  for (const [label, ms, ratio] of rows) console.log(`${label.padEnd(64)} ${ms.toFixed(1).padStart(7)} ms  ${Number.isNaN(ratio) ? '' : ratio.toFixed(2) + '×'}`);
  reportFigure({ target: 'P8', what: 'CLI function:list -o json, namespace from the kube context, minus server time', measured: `${(kubeNet / b).toFixed(2)}×`, bound: '≤ 4×', met: kubeNet / b <= 4 });
} finally {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  rmSync(dir, { recursive: true, force: true });
}
