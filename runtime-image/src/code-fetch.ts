// Referenced code (docs/internal-protocol.md "Referenced code"): a Function whose code is held in
// the platform's code store by digest (spec.codeRef) gets FNHOST_CODE_DIGEST and FNHOST_CODE_SIZE,
// and FNHOST_FUNCTION_FILE naming where the runtime keeps it: the pod's /tmp emptyDir
// (/tmp/fnhost-code/<hex>.js; the root file system is read-only). At start the runtime uses the
// file when it is there with the right digest (a container restart: nothing fetched, "code cache
// hit" logged), else fetches GET <gateway>/internal/v1/code/<digest> with its runtime token,
// streams it to a temporary file beside the target while hashing it, and renames it into place
// only when digest and size match. Only then does the worker load the module. A fetch that cannot
// succeed (404: the code is missing; a wrong digest) is a load error like a module that throws: the
// runtime answers 503 on /healthz and never exits, so there is no crash loop. An unreachable
// gateway (a rollout of its own) is tried again for up to FETCH_PATIENCE_MS.
import type { RuntimeConfig } from './config.ts';
import { log, type Supervisor } from './supervisor.ts';

/** How long an unreachable gateway or a 5xx is retried before the load fails. */
export const FETCH_PATIENCE_MS = 60_000;
const RETRY_FIRST_MS = 250;
const RETRY_MAX_MS = 5_000;

/** A fetch that cannot succeed by retrying (the gateway's answer says so, or the bytes are wrong). */
export class CodeFetchError extends Error {
  override name = 'CodeFetchError';
  readonly retry: boolean;
  /** The gateway's Retry-After (a 429 at its bound on code fetches), in ms: the next try waits at least this long. */
  readonly retryAfterMs: number;
  constructor(message: string, retry = false, retryAfterMs = 0) {
    super(message);
    this.retry = retry;
    this.retryAfterMs = retryAfterMs;
  }
}

/** sha256:<hex> of the file, or undefined when it does not exist. */
async function digestOfFile(file: string): Promise<string | undefined> {
  const { createReadStream } = process.getBuiltinModule('node:fs');
  const hash = process.getBuiltinModule('node:crypto').createHash('sha256');
  try {
    for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  return `sha256:${hash.digest('hex')}`;
}

/** One GET of the code into `file` (through a temporary file); rejects with CodeFetchError. */
function fetchOnce(file: string, ref: { digest: string; size: number }, gatewayUrl: string, token: string | undefined): Promise<void> {
  const { request } = process.getBuiltinModule('node:http');
  const fs = process.getBuiltinModule('node:fs');
  const hash = process.getBuiltinModule('node:crypto').createHash('sha256');
  const url = new URL(`${gatewayUrl}/internal/v1/code/${ref.digest}`);
  const temp = `${file}.${process.pid}.part`;
  return new Promise<void>((resolve, reject) => {
    const fail = (err: Error) => {
      fs.rm(temp, { force: true }, () => reject(err));
    };
    const headers: Record<string, string> = { host: 'gateway' };
    if (token !== undefined) headers.authorization = `Bearer ${token}`;
    const req = request({ host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port || 80), path: url.pathname, method: 'GET', headers, timeout: 30_000 }, (res) => {
      if (res.statusCode !== 200) {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          if (text.length < 1024) text += c;
        });
        res.on('end', () => {
          let message = text.trim();
          try {
            message = (JSON.parse(text) as { message?: string }).message ?? message;
          } catch {
            // Not JSON: the text as it came.
          }
          const status = res.statusCode ?? 0;
          const retryAfter = Number(res.headers['retry-after']);
          const retryAfterMs = Number.isFinite(retryAfter) && retryAfter > 0 ? Math.min(retryAfter, 60) * 1000 : 0;
          reject(new CodeFetchError(`the code ${ref.digest} could not be fetched from the gateway: ${status} ${message.slice(0, 300)}`, status >= 500 || status === 429, retryAfterMs));
        });
        res.on('error', (err) => reject(new CodeFetchError(`fetching the code ${ref.digest}: ${err.message}`, true)));
        return;
      }
      const out = fs.createWriteStream(temp, { mode: 0o600 });
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        hash.update(chunk);
        if (size > ref.size) res.destroy(new CodeFetchError(`the gateway sent more than the ${ref.size} bytes of ${ref.digest}`));
      });
      res.on('error', (err) => {
        out.destroy();
        fail(err instanceof CodeFetchError ? err : new CodeFetchError(`fetching the code ${ref.digest}: ${err.message}`, true));
      });
      res.pipe(out);
      out.on('error', (err) => fail(new CodeFetchError(`writing the code to ${file}: ${err.message}`)));
      out.on('finish', () => {
        const got = `sha256:${hash.digest('hex')}`;
        if (got !== ref.digest || size !== ref.size) return fail(new CodeFetchError(`the code the gateway sent is ${size} bytes with digest ${got}, not ${ref.size} bytes with ${ref.digest}`));
        fs.rename(temp, file, (err) => (err ? fail(new CodeFetchError(`placing the code at ${file}: ${err.message}`)) : resolve()));
      });
    });
    req.on('timeout', () => req.destroy(new Error('no answer within 30 s')));
    req.on('error', (err) => fail(err instanceof CodeFetchError ? err : new CodeFetchError(`the gateway could not be reached for the code ${ref.digest}: ${err.message}`, true)));
    req.end();
  });
}

/**
 * Makes `config.functionFile` hold the referenced code: 'cached' when it already did (verified),
 * 'fetched' otherwise. Rejects with CodeFetchError when it cannot.
 */
export async function ensureCode(config: Pick<RuntimeConfig, 'functionFile' | 'codeRef' | 'gatewayUrl' | 'runtimeToken'>, patienceMs = FETCH_PATIENCE_MS): Promise<'cached' | 'fetched'> {
  const ref = config.codeRef!;
  const fs = process.getBuiltinModule('node:fs/promises');
  const path = process.getBuiltinModule('node:path');
  const started = Date.now();
  const cached = await digestOfFile(config.functionFile);
  if (cached === ref.digest) {
    log('info', 'code cache hit', { digest: ref.digest, file: config.functionFile });
    return 'cached';
  }
  if (cached !== undefined) log('warn', 'the cached code does not match its digest; fetching it again', { digest: ref.digest, found: cached });
  await fs.mkdir(path.dirname(config.functionFile), { recursive: true, mode: 0o700 });
  for (let wait = RETRY_FIRST_MS; ; wait = Math.min(RETRY_MAX_MS, wait * 2)) {
    try {
      await fetchOnce(config.functionFile, ref, config.gatewayUrl!, config.runtimeToken);
      log('info', 'code fetched', { digest: ref.digest, bytes: ref.size, ms: Date.now() - started });
      return 'fetched';
    } catch (err) {
      const e = err instanceof CodeFetchError ? err : new CodeFetchError(String((err as Error).message ?? err));
      // A 429's Retry-After (the gateway's bound on code fetches) is waited at least.
      const pause = Math.max(wait, e.retryAfterMs);
      if (!e.retry || Date.now() - started + pause > patienceMs) throw e;
      log('warn', 'fetching the code failed; trying again', { digest: ref.digest, error: e.message, in_ms: pause });
      await new Promise((r) => setTimeout(r, pause));
    }
  }
}

/** Starts the supervisor's worker once the code is in place (at once for code that is not referenced); a fetch that fails is a load error. */
export function startWithCode(sup: Supervisor, config: RuntimeConfig): void {
  if (config.codeRef === undefined) {
    sup.start();
    return;
  }
  ensureCode(config).then(
    () => sup.start(),
    (err: Error) => sup.failLoad(err.message),
  );
}
