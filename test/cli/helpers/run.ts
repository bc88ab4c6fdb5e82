import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

// Runs the real fnhost binary as a process, the way a user does: Node 24
// (this test's own process.execPath) on cli/bin/fnhost.js.

export const BIN = fileURLToPath(new URL('../../../cli/bin/fnhost.js', import.meta.url));
export const REPO = fileURLToPath(new URL('../../../', import.meta.url));

/**
 * The working directory of runs: an empty directory, not the repository, so a
 * local platform someone runs from the repository (its ./.fnhost/token) cannot
 * lend a test its token.
 */
export const NEUTRAL_CWD = mkdtempSync(join(tmpdir(), 'fnhost-cli-cwd-'));
process.once('exit', () => rmSync(NEUTRAL_CWD, { recursive: true, force: true }));

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** A home of its own, so the user's saved login never leaks into a test. */
export function isolatedHome(): { home: string; env: Record<string, string>; cleanup(): void } {
  const home = mkdtempSync(join(tmpdir(), 'fnhost-cli-home-'));
  return {
    home,
    env: { HOME: home, XDG_CONFIG_HOME: join(home, '.config') },
    cleanup: () => rmSync(home, { recursive: true, force: true }),
  };
}

/** The environment of a run: no inherited FNHOST_* or colour settings, unless given. */
export function cleanEnv(extra: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (key.startsWith('FNHOST_') || key === 'NO_COLOR' || key === 'FORCE_COLOR' || key === 'NODE_OPTIONS') continue;
    env[key] = value;
  }
  env.TZ = 'UTC';
  for (const [key, value] of Object.entries(extra)) {
    if (value === undefined) delete env[key];
    else env[key] = value;
  }
  return env;
}

export interface RunOptions {
  env?: Record<string, string | undefined>;
  cwd?: string;
  input?: string;
  timeoutMs?: number;
}

export function runCli(args: string[], options: RunOptions = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: options.cwd ?? NEUTRAL_CWD,
      env: cleanEnv(options.env ?? {}),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`fnhost ${args.join(' ')} did not finish within ${options.timeoutMs ?? 30_000} ms; stdout: ${stdout}; stderr: ${stderr}`));
    }, options.timeoutMs ?? 30_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
    // A command that exits before reading stdin closes the pipe: not a failure of the test.
    child.stdin.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE') reject(err);
    });
    if (options.input) child.stdin.end(options.input);
    else child.stdin.end();
  });
}

/** A long-running fnhost (for --follow): collects output until stopped. */
export function startCli(args: string[], options: RunOptions = {}): { child: ChildProcess; output(): { stdout: string; stderr: string }; stop(): Promise<void> } {
  const child = spawn(process.execPath, [BIN, ...args], { cwd: options.cwd ?? NEUTRAL_CWD, env: cleanEnv(options.env ?? {}), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (c: string) => (stdout += c));
  child.stderr!.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  return {
    child,
    output: () => ({ stdout, stderr }),
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('close', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/** Polls `condition` until it holds or the deadline passes (no fixed sleeps). */
export async function waitFor(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
