import { spawnSync } from 'node:child_process';

// What the P5 benches share: the warm pool's refill, read from the gateway's log, and
// the yardstick `node -e 0`.

export function count(text: string, needle: string): number {
  return text.split(needle).length - 1;
}

/**
 * Waits until the gateway's log shows `n` warm-pool runtimes ready (it logs each one):
 * P5 is create → first 200 with a runtime waiting in the pool, so a bench that creates
 * faster than the pool refills would measure cold starts instead.
 */
export async function poolReady(gw: { output(): string }, n: number): Promise<void> {
  const until = Date.now() + 30_000;
  while (count(gw.output(), '"msg":"warm-pool runtime ready"') < n) {
    if (Date.now() > until) throw new Error('the warm pool did not refill within 30 s');
    await new Promise((r) => setTimeout(r, 20));
  }
}

export function nodeStartMs(): number {
  const t0 = performance.now();
  spawnSync(process.execPath, ['-e', '0']);
  return performance.now() - t0;
}
