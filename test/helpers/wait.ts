// Waiting for a condition instead of sleeping: polls `check` until it gives a
// truthy value (errors thrown meanwhile count as "not yet", and the last one
// is named if the deadline passes).

export type Check<T> = () => Promise<T | undefined | null | false>;

export async function pollUntil<T>(what: string, check: Check<T>, timeoutMs: number, intervalMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
