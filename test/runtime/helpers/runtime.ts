import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

// Starts a real runtime process (`node runtime-image/src/main.ts`) with PORT=0, reads the
// port from its `{"msg":"listening","port":N}` line, and gives back what a test needs.
//
//   const rt = await startRuntime({ code: 'export default (req, res) => res.json(req.query)' });
//   await fetch(`${rt.url}/?a=1`);
//   await rt.stop();

export const RUNTIME_MAIN = fileURLToPath(new URL('../../../runtime-image/src/main.ts', import.meta.url));

export interface RuntimeOptions {
  /** Module source, written to a temporary file named `file` (default handler.mjs). */
  code?: string;
  file?: string;
  /** Use this existing module path instead of writing `code`. */
  path?: string;
  env?: Record<string, string>;
  routes?: string[];
  timeoutMs?: number;
  memoryMiB?: number;
  gatewayUrl?: string;
  token?: string;
  name?: string;
}

export interface RunningRuntime {
  url: string;
  port: number;
  process: ChildProcess;
  /** Every line the runtime printed (stdout and stderr). */
  lines: string[];
  /** Resolves with the first line (already printed or coming) that matches, or rejects after timeoutMs. */
  waitForLine(match: RegExp, timeoutMs?: number): Promise<string>;
  stop(): Promise<void>;
}

export async function startRuntime(opts: RuntimeOptions): Promise<RunningRuntime> {
  const dir = await mkdtemp(join(tmpdir(), 'fnhost-rt-'));
  const file = opts.path ?? join(dir, opts.file ?? 'handler.mjs');
  if (opts.path === undefined) await writeFile(file, opts.code ?? '');
  return await spawnRuntime({ PATH: process.env.PATH ?? '', ...opts.env, PORT: '0', HOST: '127.0.0.1', ...functionVars(file, opts) }, dir);
}

/** The FNHOST_* variables of a runtime for one function (docs/internal-protocol.md "Starting a runtime"). */
export function functionVars(file: string, opts: RuntimeOptions = {}): Record<string, string> {
  const env: Record<string, string> = {
    FNHOST_FUNCTION_FILE: file,
    FNHOST_FUNCTION_ID: '00000000-0000-4000-8000-000000000001',
    FNHOST_FUNCTION_NAME: opts.name ?? 'testfn',
    FNHOST_ROUTES: JSON.stringify(opts.routes ?? []),
    FNHOST_TIMEOUT_MS: String(opts.timeoutMs ?? 5000),
    FNHOST_MEMORY_MIB: String(opts.memoryMiB ?? 64),
  };
  if (opts.gatewayUrl !== undefined) env.FNHOST_GATEWAY_URL = opts.gatewayUrl;
  if (opts.token !== undefined) env.FNHOST_RUNTIME_TOKEN = opts.token;
  return env;
}

export interface GenericRuntime extends RunningRuntime {
  /** Its FNHOST_SPECIALIZE_TOKEN. */
  token: string;
  /** The folder the runtime was started in (a temporary one, removed by stop()). */
  dir: string;
  /** POST /_fnhost/specialize with this body (the token unless another is given). */
  specialize(body: unknown, token?: string, headers?: Record<string, string>): Promise<Response>;
}

/** A generic runtime of the warm pool: started with FNHOST_SPECIALIZE_TOKEN and no function. */
export async function startGenericRuntime(opts: { env?: Record<string, string> } = {}): Promise<GenericRuntime> {
  const dir = await mkdtemp(join(tmpdir(), 'fnhost-rt-'));
  const token = randomBytes(32).toString('hex');
  const rt = await spawnRuntime({ PATH: process.env.PATH ?? '', PORT: '0', HOST: '127.0.0.1', FNHOST_SPECIALIZE_TOKEN: token, ...opts.env }, dir);
  return {
    ...rt,
    token,
    dir,
    specialize: (body, presented = token, headers = {}) =>
      fetch(`${rt.url}/_fnhost/specialize`, { method: 'POST', headers: { 'x-fnhost-specialize-token': presented, 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) }),
  };
}

/**
 * Spawns `node runtime-image/src/main.ts` (or `main` after `nodeArgs`, such as the image's
 * built dist/main.js) with exactly this environment and waits for its listening line.
 */
export async function spawnRuntime(env: Record<string, string>, dir: string, how: { main?: string; nodeArgs?: string[] } = {}): Promise<RunningRuntime> {
  const child = spawn(process.execPath, [...(how.nodeArgs ?? []), how.main ?? RUNTIME_MAIN], { env, cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  const waiters = new Set<{ match: RegExp; resolve: (l: string) => void }>();
  const onLine = (line: string) => {
    lines.push(line);
    for (const w of waiters) {
      if (w.match.test(line)) {
        waiters.delete(w);
        w.resolve(line);
      }
    }
  };
  createInterface({ input: child.stdout! }).on('line', onLine);
  createInterface({ input: child.stderr! }).on('line', onLine);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));

  const waitForLine = (match: RegExp, timeoutMs = 10_000): Promise<string> => {
    const seen = lines.find((l) => match.test(l));
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const w = {
        match,
        resolve: (l: string) => {
          clearTimeout(timer);
          resolve(l);
        },
      };
      const timer = setTimeout(() => {
        waiters.delete(w);
        reject(new Error(`no output line matched ${match} within ${timeoutMs} ms; output:\n${lines.join('\n')}`));
      }, timeoutMs);
      waiters.add(w);
      exited.then(() => {
        if (!waiters.has(w)) return;
        waiters.delete(w);
        clearTimeout(timer);
        reject(new Error(`the runtime exited before printing ${match}; output:\n${lines.join('\n')}`));
      });
    });
  };

  let port: number;
  try {
    port = (JSON.parse(await waitForLine(/"msg":"listening"/, 20_000)) as { port: number }).port;
  } catch (err) {
    child.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    process: child,
    lines,
    waitForLine,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const kill = setTimeout(() => child.kill('SIGKILL'), 3000);
        child.kill('SIGTERM');
        await exited;
        clearTimeout(kill);
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Polls `probe` until it returns a value other than undefined, or fails after timeoutMs. */
export async function eventually<T>(probe: () => T | undefined | Promise<T | undefined>, what: string, timeoutMs = 10_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
