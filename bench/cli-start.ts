// P8: CLI start-up. Wall time of `fnhost --help` and `fnhost function:logs <fn>
// --output json` against `node -e 0`, minus the server's own time for the
// latter; and the interactive table's first paint (in a pseudo-terminal made
// by util-linux `script`). Prints a table of medians and ratios.
//
//   node bench/cli-start.ts [--runs 30] [--stub]
//
// By default it starts the real platform (test/helpers/platform.ts), creates a
// function and runs it a few times. --stub uses an in-process server answering
// from memory instead (server time ~0), for when the gateway is not available.

import { spawn, spawnSync } from 'node:child_process';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { reportFigure } from './lib/summary.ts';

const BIN = fileURLToPath(new URL('../cli/bin/fnhost.js', import.meta.url));
const { values } = parseArgs({ options: { runs: { type: 'string', default: '30' }, stub: { type: 'boolean', default: false } } });
const RUNS = Number(values.runs);

interface Server {
  url: string;
  token: string;
  fn: string;
  kind: string;
  stop(): Promise<void>;
}

async function stubServer(): Promise<Server> {
  const id = '5b0f1a1e-1111-4222-8333-944445555666';
  const logs = Array.from({ length: 50 }, (_, i) => ({
    id: `log_${String(i).padStart(20, '0')}`, function_id: id, status_code: i % 5 === 0 ? 500 : 200, execution_time_ms: i,
    error_message: i % 5 === 0 ? 'Error: boom' : null, executed_at: new Date(Date.now() - i * 1000).toISOString(), trigger: 'http',
  }));
  const fnRecord = { function_id: id, name: 'bench', namespace: 'default', env: {}, routes: [], timeout_seconds: 30, memory_mib: 128, active: true,
    retention: { type: 'none' }, schedule: null, total_executions: 500, invocation_url: `x/invoke/${id}`, created_at: new Date().toISOString(), updated_at: new Date().toISOString() };
  const server = createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    if (req.url!.includes('/logs')) res.end(JSON.stringify({ logs, pagination: { currentPage: 1, totalPages: 10, totalCount: 500, hasNextPage: true, hasPrevPage: false } }));
    else res.end(JSON.stringify(fnRecord));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, token: 'stub', fn: 'bench', kind: 'in-process stub server',
    stop: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

async function realPlatform(): Promise<Server> {
  // A variable specifier: the helper belongs to the gateway's area and may not exist yet.
  const helperPath = '../test/helpers/platform.ts';
  const helper = (await import(helperPath)) as unknown as Record<string, (...args: unknown[]) => Promise<{ url: string; token: string; stop(): Promise<void> }>>;
  const start = helper.startGateway;
  if (typeof start !== 'function') throw new Error('test/helpers/platform.ts exports no startGateway');
  const platform = await start();
  const { mkdtempSync, rmSync, writeFileSync } = await import('node:fs');
  const { join } = await import('node:path');
  const { tmpdir } = await import('node:os');
  const dir = mkdtempSync(join(tmpdir(), 'fnhost-bench-'));
  const file = join(dir, 'fn.js');
  writeFileSync(file, "export default (req, res) => { if (req.body && req.body.fail) throw new Error('boom'); res.json({ ok: true }); };\n");
  const env = { ...process.env, FNHOST_URL: platform.url, FNHOST_TOKEN: platform.token };
  const created = spawnSync(process.execPath, [BIN, 'function:create', 'bench', '--file', file], { env, encoding: 'utf8' });
  if (created.status !== 0) throw new Error(`function:create failed: ${created.stderr}`);
  for (let i = 0; i < 60; i++) {
    spawnSync(process.execPath, [BIN, 'function:test', 'bench', '--data', i % 5 === 0 ? '{"fail":true}' : '{}'], { env, encoding: 'utf8' });
  }
  return { url: platform.url, token: platform.token, fn: 'bench', kind: 'real platform (test/helpers/platform.ts)', stop: async () => {
    await platform.stop();
    rmSync(dir, { recursive: true, force: true });
  } };
}

/** Wall time of one run, spawned asynchronously so an in-process stub server keeps answering. */
function time(argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((resolve, reject) => {
    const start = process.hrtime.bigint();
    const child = spawn(argv[0]!, argv.slice(1), { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stdout.resume();
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      const ms = Number(process.hrtime.bigint() - start) / 1e6;
      if (code !== 0) reject(new Error(`${argv.join(' ')} exited ${code}: ${stderr}`));
      else resolve(ms);
    });
  });
}

/** The server's own time for one logs page: a fresh connection each time, as the CLI makes. */
function serverTime(server: Server, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const start = process.hrtime.bigint();
    const req = request(`${server.url}${path}`, { agent: false, headers: { authorization: `Bearer ${server.token}` } }, (res) => {
      res.resume();
      res.on('end', () => resolve(Number(process.hrtime.bigint() - start) / 1e6));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Time from start until the table's footer is on the pseudo-terminal. */
function firstPaint(server: Server, env: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((resolve, reject) => {
    // script gives a pty of size 0x0; stty sets a real one, as a terminal window would.
    const command = `stty rows 60 cols 120; exec ${process.execPath} ${BIN} function:logs ${server.fn}`;
    const start = process.hrtime.bigint();
    const child = spawn('script', ['-qfec', command, '/dev/null'], { env: { ...env, TERM: 'xterm-256color', COLUMNS: '120', LINES: '60' }, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let painted: number | undefined;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`no first paint within 20 s: ${out}`));
    }, 20_000);
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      if (painted === undefined && /Page \d+ of \d+/.test(out)) {
        painted = Number(process.hrtime.bigint() - start) / 1e6;
        child.stdin.write('q');
      }
    });
    child.on('close', () => {
      clearTimeout(timer);
      if (painted === undefined) reject(new Error(`the pager never painted: ${out}`));
      else resolve(painted);
    });
  });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const server = values.stub ? await stubServer() : await realPlatform().catch(async (err: Error) => {
  console.error(`real platform unavailable (${err.message}); using the stub server`);
  return stubServer();
});
try {
  const env = { ...process.env, FNHOST_URL: server.url, FNHOST_TOKEN: server.token, TZ: 'UTC' };
  const node = [process.execPath, '-e', '0'];
  const help = [process.execPath, BIN, '--help'];
  const logsJson = [process.execPath, BIN, 'function:logs', server.fn, '--output', 'json'];
  // Warm-up: fills Node's compile cache and the OS file cache, as any second run would find them.
  for (let i = 0; i < 3; i++) {
    await time(node, env);
    await time(help, env);
    await time(logsJson, env);
    await firstPaint(server, env);
  }
  const samples = { node: [] as number[], help: [] as number[], logs: [] as number[], server: [] as number[], paint: [] as number[], serverPaint: [] as number[] };
  for (let i = 0; i < RUNS; i++) {
    samples.node.push(await time(node, env));
    samples.help.push(await time(help, env));
    samples.logs.push(await time(logsJson, env));
    samples.server.push(await serverTime(server, `/api/v1/functions/${server.fn}/logs?status=all&limit=50&page=1`));
    samples.paint.push(await firstPaint(server, env));
    // The pager reads the function and page 1 in parallel: the longer of the two.
    const [a, b] = await Promise.all([serverTime(server, `/api/v1/functions/${server.fn}`), serverTime(server, `/api/v1/functions/${server.fn}/logs?status=all&limit=50&page=1`)]);
    samples.serverPaint.push(Math.max(a, b));
  }
  const base = median(samples.node);
  const logsNet = median(samples.logs) - median(samples.server);
  const paintNet = median(samples.paint) - median(samples.serverPaint);
  const rows = [
    ['node -e 0', base, 1],
    ['fnhost --help', median(samples.help), median(samples.help) / base],
    [`fnhost function:logs ${server.fn} --output json (wall)`, median(samples.logs), median(samples.logs) / base],
    ['  server time for that page (median)', median(samples.server), NaN],
    ['  wall minus server time (P8, target ≤ 4×)', logsNet, logsNet / base],
    ['table first paint in a pty (wall)', median(samples.paint), median(samples.paint) / base],
    ['  minus server time (P8, target ≤ 10×)', paintNet, paintNet / base],
  ] as const;
  console.log(`P8 CLI start: ${new Date().toISOString()}, ${cpus().length} × ${cpus()[0]?.model ?? '?'}, load ${loadavg().map((l) => l.toFixed(2)).join(' ')}, Node ${process.versions.node}, ${RUNS} runs each (medians), server: ${server.kind}`);
  for (const [label, ms, ratio] of rows) console.log(`${label.padEnd(58)} ${ms.toFixed(1).padStart(7)} ms  ${Number.isNaN(ratio) ? '' : ratio.toFixed(2) + '×'}`);
  const helpRatio = median(samples.help) / base;
  reportFigure({ target: 'P8', what: 'CLI --help vs node -e 0', measured: `${helpRatio.toFixed(2)}×`, bound: '≤ 4×', met: helpRatio <= 4 });
  reportFigure({ target: 'P8', what: 'CLI function:logs --output json, minus server time', measured: `${(logsNet / base).toFixed(2)}×`, bound: '≤ 4×', met: logsNet / base <= 4 });
  reportFigure({ target: 'P8', what: 'CLI table first paint, minus server time', measured: `${(paintNet / base).toFixed(2)}×`, bound: '≤ 10×', met: paintNet / base <= 10 });
} finally {
  await server.stop();
}
