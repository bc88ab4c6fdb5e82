import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';

// node gateway/src/selftest.ts: the chart's `helm test` (and anyone's check
// that an installation works): through the management API, as the CLI
// does, it creates a function, invokes it end to end until it answers
// (the first call may wait for the function's pod), and deletes it. Each
// step is one JSON record; the exit code says whether all passed.
//   FNHOST_URL            the gateway (main port), e.g. the in-cluster Service
//   FNHOST_TOKEN_FILE     the admin token, as a file (never in the environment)
//   FNHOST_NAMESPACE      where the test function lives (the gateway's default when empty)
//   FNHOST_SELFTEST_TIMEOUT_SECONDS   how long the invocation may take to answer (default 180)

export class SelfTestError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SelfTestError';
  }
}

export interface SelfTestOptions {
  url: string;
  token: string;
  namespace?: string;
  timeoutMs: number;
  log(msg: string, fields?: Record<string, unknown>): void;
}

/** Runs the check; resolves with the invocation's answer, rejects with SelfTestError naming the failed step. */
export async function selfTest(options: SelfTestOptions): Promise<{ functionId: string; body: unknown }> {
  const base = options.url.replace(/\/+$/, '');
  const query = options.namespace ? `?namespace=${encodeURIComponent(options.namespace)}` : '';
  const headers = { authorization: `Bearer ${options.token}`, 'content-type': 'application/json' };
  const name = `helm-test-${randomBytes(4).toString('hex')}`;
  const marker = randomBytes(8).toString('hex');
  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${base}/api/v1/functions${path}${query}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(30_000) });
    const text = await res.text();
    return { status: res.status, text };
  };

  const created = await api('POST', '', { name, code: `export default (req, res) => res.json({ selftest: ${JSON.stringify(marker)}, method: req.method })` });
  if (created.status !== 201) throw new SelfTestError(`create ${name}: HTTP ${created.status} ${created.text.slice(0, 300)}`);
  const functionId = (JSON.parse(created.text) as { function_id: string }).function_id;
  options.log('selftest: function created', { name, function_id: functionId });
  try {
    const deadline = Date.now() + options.timeoutMs;
    let last = '';
    for (let attempt = 1; ; attempt++) {
      try {
        const res = await fetch(`${base}/invoke/${functionId}/`, { signal: AbortSignal.timeout(60_000) });
        const text = await res.text();
        if (res.status === 200) {
          const body = JSON.parse(text) as { selftest?: string };
          if (body.selftest !== marker) throw new SelfTestError(`invoke ${name}: answered 200 with another body: ${text.slice(0, 300)}`);
          options.log('selftest: function invoked', { name, status: res.status, attempts: attempt });
          return { functionId, body };
        }
        last = `HTTP ${res.status} ${text.slice(0, 300)}`;
      } catch (err) {
        if (err instanceof SelfTestError) throw err;
        last = (err as Error).message;
      }
      if (Date.now() >= deadline) throw new SelfTestError(`invoke ${name}: no 200 within ${Math.round(options.timeoutMs / 1000)} s; last: ${last}`);
      await new Promise((r) => setTimeout(r, 2_000));
    }
  } finally {
    const deleted = await api('DELETE', `/${encodeURIComponent(name)}`).catch((err: unknown) => ({ status: 0, text: (err as Error).message }));
    if (deleted.status !== 204 && deleted.status !== 200) options.log('selftest: deleting the function failed', { name, status: deleted.status, answer: deleted.text.slice(0, 300) });
    else options.log('selftest: function deleted', { name });
  }
}

if (import.meta.main) {
  const log = (level: string) => (msg: string, fields?: Record<string, unknown>) => process.stdout.write(JSON.stringify({ time: new Date().toISOString(), level, msg, ...fields }) + '\n');
  const seconds = Number(process.env.FNHOST_SELFTEST_TIMEOUT_SECONDS ?? '180');
  try {
    const url = process.env.FNHOST_URL;
    const tokenFile = process.env.FNHOST_TOKEN_FILE;
    if (!url || !tokenFile) throw new SelfTestError('FNHOST_URL and FNHOST_TOKEN_FILE must be set');
    const token = readFileSync(tokenFile, 'utf8').trim();
    await selfTest({ url, token, namespace: process.env.FNHOST_NAMESPACE || undefined, timeoutMs: (Number.isFinite(seconds) && seconds > 0 ? seconds : 180) * 1000, log: log('info') });
    log('info')('selftest: passed');
  } catch (err) {
    log('error')('selftest: failed', { error: (err as Error).message });
    process.exitCode = 1;
  }
}
