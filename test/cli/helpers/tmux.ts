import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

// Drives a program in a real terminal: tmux on a private socket, keys in with
// send-keys, the screen out with capture-pane. Waits are conditions on the
// screen with deadlines. The pane stays after the program exits
// (remain-on-exit), so its last screen can be read; the exit status comes
// from a file the wrapping shell writes.

const run = promisify(execFile);
let counter = 0;

function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

export class TmuxSession {
  readonly #socket: string;
  readonly #dir: string;

  private constructor(socket: string, dir: string) {
    this.#socket = socket;
    this.#dir = dir;
  }

  static async start(argv: string[], options: { env: Record<string, string>; cwd: string; width?: number; height?: number }): Promise<TmuxSession> {
    const dir = mkdtempSync(join(tmpdir(), 'fnhost-tmux-'));
    const config = join(dir, 'tmux.conf');
    writeFileSync(config, 'set -g remain-on-exit on\nset -g status off\nset -g default-terminal "tmux-256color"\n');
    const socket = `fnhost-cli-${process.pid}-${++counter}`;
    const session = new TmuxSession(socket, dir);
    const env = Object.entries(options.env).map(([k, v]) => `${k}=${shellQuote(v)}`).join(' ');
    // The shell writes the exit status to a file: tmux 3.3 sometimes marks a
    // pane dead without recording its status (pane_dead_status empty).
    const statusFile = join(dir, 'status');
    const command = `cd ${shellQuote(options.cwd)} && env ${env} ${argv.map(shellQuote).join(' ')}; echo $? > ${shellQuote(statusFile + '.tmp')} && mv ${shellQuote(statusFile + '.tmp')} ${shellQuote(statusFile)}`;
    await run('tmux', ['-L', socket, '-f', config, 'new-session', '-d', '-s', 'main', '-x', String(options.width ?? 100), '-y', String(options.height ?? 30), command]);
    return session;
  }

  async #tmux(...args: string[]): Promise<string> {
    return (await run('tmux', ['-L', this.#socket, ...args])).stdout;
  }

  /**
   * The visible screen as text, trailing blanks trimmed; with `escapes`, colours kept as SGR sequences;
   * with `history`, the lines scrolled off the top too (a one-shot command's whole output).
   */
  async screen(options: { escapes?: boolean; history?: boolean } = {}): Promise<string> {
    return (await this.#tmux('capture-pane', '-p', ...(options.escapes ? ['-e'] : []), ...(options.history ? ['-S', '-'] : []), '-t', 'main')).replace(/\s+$/, '');
  }

  async sendKeys(...keys: string[]): Promise<void> {
    await this.#tmux('send-keys', '-t', 'main', ...keys);
  }

  /** Undefined while the program runs; its exit status once it has ended. */
  async exitStatus(): Promise<number | undefined> {
    try {
      return Number(readFileSync(join(this.#dir, 'status'), 'utf8').trim());
    } catch {
      return undefined;
    }
  }

  async waitForScreen(condition: (screen: string) => boolean, what: string, timeoutMs = 20_000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    let last = '';
    for (;;) {
      last = await this.screen();
      if (condition(last)) return last;
      if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; the screen was:\n${last}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  async waitForExit(timeoutMs = 20_000): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const status = await this.exitStatus();
      if (status !== undefined) return status;
      if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for the program to exit; the screen was:\n${await this.screen()}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  async kill(): Promise<void> {
    await this.#tmux('kill-server').catch(() => undefined);
    rmSync(this.#dir, { recursive: true, force: true });
  }
}
