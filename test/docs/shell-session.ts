import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

// One shell a user types a document's blocks into: a bash process that lives for the whole
// document, so what a block exports or `cd`s into is there for the next one, as in a terminal.
// Each block is written to a file and sourced with stdin from /dev/null (a command that reads its
// stdin must not eat the blocks after it); `set -e -o pipefail` makes the first failing command
// end the shell, and the block with it.

export interface BlockResult {
  /** 0 when every command of the block succeeded; otherwise the shell's exit code. */
  code: number;
  /** The block's stdout and stderr, interleaved as they came. */
  output: string;
  /** The shell's working directory after the block. */
  cwd: string;
}

export class ShellSession {
  readonly #child: ChildProcess;
  readonly #dir: string;
  readonly #mark = `__doc_block_done_${randomBytes(6).toString('hex')}__`;
  #output = '';
  #exit: number | null = null;
  #waiter: (() => void) | undefined;
  #count = 0;

  constructor(cwd: string, env: NodeJS.ProcessEnv, scriptsDir: string) {
    this.#dir = scriptsDir;
    this.#child = spawn('bash', ['--norc', '--noprofile'], { cwd, env, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    for (const stream of [this.#child.stdout!, this.#child.stderr!]) {
      stream.setEncoding('utf8').on('data', (chunk: string) => {
        this.#output += chunk;
        this.#waiter?.();
      });
    }
    this.#child.once('exit', (code, signal) => {
      this.#exit = code ?? (signal === null ? 1 : 128);
      this.#waiter?.();
    });
    this.#child.stdin!.on('error', () => undefined);
    this.#child.stdin!.write('set -e -o pipefail\n');
  }

  /** Runs `script` in the shell; resolves when it ended, or rejects past `timeoutMs` (the shell is killed). */
  async run(script: string, timeoutMs: number): Promise<BlockResult> {
    if (this.#exit !== null) throw new Error(`the shell has ended (exit ${this.#exit}); no block runs after a failed one`);
    const file = join(this.#dir, `block-${++this.#count}.sh`);
    writeFileSync(file, script);
    const start = this.#output.length;
    this.#child.stdin!.write(`source ${JSON.stringify(file)} < /dev/null\nprintf '\\n%s %s\\n' ${this.#mark} "$PWD"\n`);
    const markLine = new RegExp(`\\n${this.#mark} (.*)\\n`);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const done = markLine.exec(this.#output.slice(start));
      if (done !== null) {
        const output = this.#output.slice(start, start + done.index);
        this.#output = this.#output.slice(0, start) + output;
        return { code: 0, output, cwd: done[1]! };
      }
      if (this.#exit !== null) return { code: this.#exit, output: this.#output.slice(start), cwd: '' };
      if (Date.now() > deadline) {
        this.kill();
        throw new Error(`the block did not finish within ${timeoutMs} ms; its output so far:\n${this.#output.slice(start).slice(-4000)}`);
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 1000);
        this.#waiter = () => {
          clearTimeout(timer);
          this.#waiter = undefined;
          resolve();
        };
      });
    }
  }

  /** Ends the shell and whatever it started (its own process group). */
  kill(): void {
    if (this.#exit !== null || this.#child.pid === undefined) return;
    try {
      process.kill(-this.#child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}
