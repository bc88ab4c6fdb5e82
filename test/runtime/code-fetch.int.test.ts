import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pollUntil } from '../helpers/wait.ts';
import { startRuntime, type RunningRuntime } from './helpers/runtime.ts';

// The runtime of a pod whose Function has referenced code (runtime-image/src/code-fetch.ts):
// the real runtime process against a real HTTP stand-in of the gateway's internal code route.
// It fetches the code once with its runtime token, verifies the digest, keeps it at its function
// file; a restart (a new process, the same file: the pod's emptyDir) loads it without fetching;
// code the gateway does not have, or bytes of another digest, are a load error (503, no exit).

const TOKEN = 'runtime-token-for-the-test';
const CODE = `export default (req, res) => res.json({ big: true, pad: ${JSON.stringify('x'.repeat(2 * 1024 * 1024))}.length });\n`;
const DIGEST = `sha256:${createHash('sha256').update(CODE).digest('hex')}`;

describe('runtime: referenced code fetched by digest into the pod cache', function () {
  this.timeout(60_000);
  let dir: string;
  let gateway: Server;
  let gatewayUrl: string;
  const requests: Array<{ path: string; auth: string | undefined }> = [];
  /** When each request came (performance.now()). */
  const times: number[] = [];
  /** What the stand-in answers for the code route: the code, or a status; 'busy-once': one 429 with Retry-After: 2, then the code. */
  let serve: 'code' | 'wrong' | 404 | 'busy-once' = 'code';
  const running: RunningRuntime[] = [];

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'fnhost-code-fetch-'));
    gateway = createServer((req, res) => {
      requests.push({ path: req.url ?? '', auth: req.headers.authorization });
      times.push(performance.now());
      if (serve === 'busy-once') {
        serve = 'code';
        return void res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '2' }).end(JSON.stringify({ error: 'too_many_requests', message: 'code fetch refused: this function is over its bound (4 fetches at once); retry after 2 s' }));
      }
      if (req.headers.authorization !== `Bearer ${TOKEN}`) return void res.writeHead(401).end('{"error":"unauthorized"}');
      if (req.url !== `/internal/v1/code/${DIGEST}` || serve === 404) {
        return void res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'code_missing', message: `code ${DIGEST} is not in the code store` }));
      }
      res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(serve === 'wrong' ? CODE.replace('big', 'bad') : CODE);
    });
    await new Promise<void>((r) => gateway.listen(0, '127.0.0.1', r));
    gatewayUrl = `http://127.0.0.1:${(gateway.address() as AddressInfo).port}`;
  });
  after(async () => {
    for (const rt of running) await rt.stop();
    gateway.close();
    await rm(dir, { recursive: true, force: true });
  });

  const start = (file: string) =>
    startRuntime({ path: file, gatewayUrl, token: TOKEN, env: { FNHOST_CODE_DIGEST: DIGEST, FNHOST_CODE_SIZE: String(Buffer.byteLength(CODE)), FNHOST_CONSOLE_CAPTURE: 'off' } }).then((rt) => (running.push(rt), rt));

  it('fetches the code once with its token, verifies it and serves; a restart finds it in the cache and fetches nothing', async () => {
    serve = 'code';
    requests.length = 0;
    const file = join(dir, 'cache', `${DIGEST.slice(7)}.js`);
    const first = await start(file);
    await pollUntil('the first runtime to load the fetched code', async () => (await fetch(`${first.url}/healthz`)).status === 200, 30_000, 50);
    expect(await (await fetch(first.url)).json()).to.deep.equal({ big: true, pad: 2 * 1024 * 1024 });
    expect(requests).to.deep.equal([{ path: `/internal/v1/code/${DIGEST}`, auth: `Bearer ${TOKEN}` }]);
    expect(await readFile(file, 'utf8')).to.equal(CODE);
    await first.waitForLine(/"code fetched"/, 5_000);
    await first.stop();

    const second = await start(file);
    await pollUntil('the restarted runtime to load the cached code', async () => (await fetch(`${second.url}/healthz`)).status === 200, 30_000, 50);
    await second.waitForLine(/"code cache hit"/, 5_000);
    expect(requests, 'no second fetch').to.have.length(1);
  });

  it('a cached file that was changed is fetched again rather than run', async () => {
    serve = 'code';
    requests.length = 0;
    const file = join(dir, 'tampered.js');
    await writeFile(file, 'export default (req, res) => res.json({ tampered: true });\n');
    const rt = await start(file);
    await pollUntil('the runtime to load the fetched code', async () => (await fetch(`${rt.url}/healthz`)).status === 200, 30_000, 50);
    expect(await (await fetch(rt.url)).json()).to.include({ big: true });
    expect(requests).to.have.length(1);
  });

  it('a 429 from the gateway\'s bound on code fetches is tried again after its Retry-After, then served', async () => {
    serve = 'busy-once';
    requests.length = 0;
    times.length = 0;
    const rt = await start(join(dir, 'busy.js'));
    await pollUntil('the runtime to load the code fetched after the 429', async () => (await fetch(`${rt.url}/healthz`)).status === 200, 30_000, 50);
    expect(requests).to.have.length(2);
    expect(times[1]! - times[0]!, 'waited the Retry-After (2 s), not the first back-off (250 ms)').to.be.at.least(1900);
    await rt.waitForLine(/fetching the code failed; trying again.*"in_ms":2000/, 5_000);
  });

  for (const [what, mode, text] of [['code the gateway does not have (404)', 404, 'is not in the code store'], ['bytes of another digest', 'wrong', 'not ']] as const) {
    it(`${what} is a load error: /healthz 503 with the reason, calls 500, the process stays up (no crash loop)`, async () => {
      serve = mode;
      const rt = await start(join(dir, `${String(mode)}.js`));
      await pollUntil('/healthz to report the load error', async () => (await fetch(`${rt.url}/healthz`)).status === 503 && ((await (await fetch(`${rt.url}/healthz`, { headers: { 'x-fnhost-wait-load': '1' } })).json()) as { error?: string }).error === 'load', 30_000, 100);
      const detail = (await (await fetch(`${rt.url}/healthz`, { headers: { 'x-fnhost-wait-load': '1' } })).json()) as { message: string };
      expect(detail.message).to.include(DIGEST);
      expect(detail.message).to.include(text);
      expect((await fetch(rt.url)).status).to.equal(500);
      expect(rt.process.exitCode).to.equal(null);
    });
  }
});
