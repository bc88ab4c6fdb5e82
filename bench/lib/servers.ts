import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

// The helper processes a bench starts (a bare server, a runtime, an undici
// hop): each prints one JSON line with its port; stopAll ends them.

const children: ChildProcess[] = [];

/** Starts `node <args>` and resolves with `http://127.0.0.1:<port>` once it prints `{"port": n}`. */
export async function startServer(args: string[], env: Record<string, string> = {}): Promise<string> {
  const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  return await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      try {
        const parsed = JSON.parse(line) as { port?: number };
        if (typeof parsed.port === 'number') resolve(`http://127.0.0.1:${parsed.port}`);
      } catch {
        // other output
      }
    });
    child.once('exit', (code) => reject(new Error(`server exited with ${code}`)));
  });
}

/** Ends every process startServer started. */
export function stopAll(): void {
  for (const c of children) c.kill('SIGTERM');
}
