import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { watchProgress, type ProgressBounds } from './progress.ts';

// Starts a real gateway process (`node gateway/src/main.ts`) on port 0 with a
// temporary FNHOST_DATA_DIR, waits until it prints its URL, and gives back
// what a test needs (the main URL and the admin panel's). Stable API: the CLI's tests use it too.
//
//   const gw = await startGateway();
//   ... fetch(`${gw.url}/api/v1/functions`, { headers: { authorization: `Bearer ${gw.token}` } })
//   await gw.stop();

export const GATEWAY_MAIN = fileURLToPath(new URL('../../gateway/src/main.ts', import.meta.url));

export interface GatewayOptions {
  /** Extra environment (FNHOST_PUBLIC_URL, FNHOST_MAX_TIMEOUT_SECONDS, FNHOST_TRUST_PROXY, ...). */
  env?: Record<string, string>;
  /** Use this admin token (FNHOST_TOKEN) instead of the generated token file. */
  token?: string;
  /** Reuse a data directory (for restart tests); a fresh temporary one otherwise. */
  dataDir?: string;
  /** Keep the data directory after stop() (it is removed by default when this helper made it). */
  keepDataDir?: boolean;
  /**
   * A wall-clock ceiling on the wait for the gateway to listen. The wait is bounded by the
   * gateway's own progress (test/helpers/progress.ts: it fails when the gateway used no CPU
   * for 30 s, or 30 s of CPU, without listening), so that a busy machine, which only spreads
   * the same start over more wall time, does not fail it; this ceiling (300 s) is a backstop.
   */
  startTimeoutMs?: number;
  /** Run this node binary (this process's by default). */
  node?: string;
  /** Run this gateway main module (this checkout's by default), e.g. of a copy of the checkout. */
  main?: string;
  /**
   * A command the gateway runs under, e.g. ['prlimit', '--nofile=2048:2048', '--'] for the
   * attack suite's lowered descriptor limit (test/gateway/attack/).
   */
  prefix?: string[];
  /** Node options of the gateway's own process (before its main module), e.g. a V8 flag a bench weighs. */
  nodeArgs?: string[];
}

export interface RunningGateway {
  /** The main listener: /invoke, /api/v1 (bearer token). */
  url: string;
  /** The admin panel's own listener: /admin and /admin/api/v1 (panel session). */
  adminUrl: string;
  /** Where a browser opens the panel (the log's panel_url; adminUrl's /admin/ from gateways that do not print one). */
  panelUrl: string;
  token: string;
  dataDir: string;
  pid: number;
  process: ChildProcess;
  /** Everything the gateway printed so far (stdout and stderr). */
  output(): string;
  /** SIGTERM, wait for a clean exit (SIGKILL once it used no CPU for timeoutMs); resolves with the exit code. */
  stop(timeoutMs?: number): Promise<number | null>;
}

/** A gateway start takes 1-2 s of CPU; a wait on the store or a lock shows as no CPU at all. */
const START_BOUNDS: ProgressBounds = { cpuMs: 30_000, stallMs: 30_000, ceilingMs: 300_000 };

export async function startGateway(options: GatewayOptions = {}): Promise<RunningGateway> {
  const ownDir = options.dataDir === undefined;
  const dataDir = options.dataDir ?? (await mkdtemp(join(tmpdir(), 'fnhost-gw-')));
  const env: Record<string, string> = { ...(process.env as Record<string, string>), PORT: '0', HOST: '127.0.0.1', FNHOST_DATA_DIR: dataDir, FNHOST_QUIET: '1', ...options.env };
  if (options.token !== undefined) env.FNHOST_TOKEN = options.token;
  else if (options.env?.FNHOST_TOKEN === undefined) delete env.FNHOST_TOKEN;
  const command = [...(options.prefix ?? []), options.node ?? process.execPath, ...(options.nodeArgs ?? []), options.main ?? GATEWAY_MAIN];
  const child = spawn(command[0]!, command.slice(1), { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (chunk: string) => {
    output += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const { url, adminUrl, panelUrl } = await new Promise<{ url: string; adminUrl: string; panelUrl: string }>((resolve, reject) => {
    const watch = watchProgress(child.pid!, { ...START_BOUNDS, ceilingMs: options.startTimeoutMs ?? START_BOUNDS.ceilingMs }, (reason) => {
      child.kill('SIGKILL');
      reject(new Error(`the gateway did not start: it ${reason} without listening; output:\n${output}`));
    });
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      output += line + '\n';
      if (!line.startsWith('{')) return;
      try {
        const parsed = JSON.parse(line) as { msg?: string; url?: string; admin_url?: string; panel_url?: string };
        if (parsed.msg === 'gateway listening' && typeof parsed.url === 'string' && typeof parsed.admin_url === 'string') {
          watch.stop();
          resolve({ url: parsed.url, adminUrl: parsed.admin_url, panelUrl: parsed.panel_url ?? `${parsed.admin_url}/admin/` });
        }
      } catch {
        // not a log line
      }
    });
    // Reported once its output is read to the end, so the error carries the gateway's last words.
    const outputClosed = new Promise<void>((resolve) => lines.once('close', () => resolve()));
    void exited.then(async (code) => {
      await Promise.race([outputClosed, new Promise((r) => setTimeout(r, 1000))]);
      watch.stop();
      reject(new Error(`the gateway exited (code ${code}) before listening; output:\n${output}`));
    });
  });
  const tokenFile = options.env?.FNHOST_TOKEN_FILE ?? join(dataDir, 'token');
  const token = options.token ?? options.env?.FNHOST_TOKEN ?? (await readFile(tokenFile, 'utf8')).trim();
  let stopping: Promise<number | null> | undefined;
  // A gateway that ends on its own (a crash) says why on the test's stderr: the
  // tests that then fail only see a refused connection.
  void exited.then((code) => {
    if (stopping === undefined && child.signalCode !== 'SIGKILL') process.stderr.write(`\n[test helper] the gateway (pid ${child.pid}) exited by itself (code ${code}, signal ${child.signalCode}); its last output:\n${output.slice(-6000)}\n`);
  });
  return {
    url,
    adminUrl,
    panelUrl,
    token,
    dataDir,
    pid: child.pid!,
    process: child,
    output: () => output,
    stop(timeoutMs = 15_000) {
      stopping ??= (async () => {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
        // SIGKILL once the draining gateway used no CPU for timeoutMs (it waits on nothing that will
        // come), not after timeoutMs of wall time, which a busy machine stretches (test/helpers/progress.ts).
        const watch = watchProgress(child.pid!, { cpuMs: 60_000, stallMs: timeoutMs, ceilingMs: Math.max(120_000, 4 * timeoutMs) }, () => child.kill('SIGKILL'));
        const code = await exited;
        watch.stop();
        // Retried (ENOTEMPTY): a runtime ending just after its gateway may still write its compile
        // cache into the folder while rm walks it (seen once under the busy loops of issue 30).
        if (ownDir && !options.keepDataDir) await rm(dataDir, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
        return code;
      })();
      return stopping;
    },
  };
}
