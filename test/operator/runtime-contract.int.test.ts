import { expect } from 'chai';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CODE_FILE_NAME, configMapFor, runtimeEnv } from '../../operator/src/builders/index.ts';
import { fnResource, testSettings } from './fixtures.ts';
import { ROOT, waitFor } from './harness.ts';

// The operator's side of docs/internal-protocol.md, checked against the real
// runtime process: the env the Deployment sets (the Secret's token given as a
// value, the ConfigMap's file written where the volume would mount it) starts
// a runtime whose /healthz turns 200 and which serves the handler with its
// routes and env; code that cannot load keeps /healthz at 503, which is why
// the operator's readiness probe (not its liveness probe) uses /healthz.

function startRuntime(code: string, fn = fnResource({ code, routes: ['/hello/:name'], env: [{ name: 'GREETING', value: 'Hi' }], timeoutSeconds: 5, memoryMiB: 64 })) {
  const dir = mkdtempSync(join(tmpdir(), 'fnhost-op-runtime-'));
  writeFileSync(join(dir, CODE_FILE_NAME), (configMapFor(fn).data as Record<string, string>)[CODE_FILE_NAME]!);
  const env: Record<string, string> = { PATH: process.env.PATH ?? '' };
  for (const e of runtimeEnv(fn, testSettings({ FNHOST_GATEWAY_URL: 'http://127.0.0.1:9' }))) {
    env[e.name] = e.value ?? (e.name === 'FNHOST_RUNTIME_TOKEN' ? 'runtime-token-from-the-secret' : '');
  }
  env.FNHOST_FUNCTION_FILE = join(dir, CODE_FILE_NAME);
  env.PORT = '0';
  env.HOST = '127.0.0.1';
  const child = spawn(process.execPath, [`${ROOT}runtime-image/src/main.ts`], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr!.resume();
  const port = waitFor('the runtime to listen', async () => Number(out.match(/"msg":"listening","port":(\d+)/)?.[1] ?? 0), 20_000, 50);
  return { child, port, dir };
}

describe('operator ↔ runtime contract (real runtime process)', function () {
  this.timeout(30_000);
  const started: Array<{ child: ChildProcess; dir: string }> = [];
  after(async () => {
    for (const s of started) {
      if (s.child.exitCode === null) {
        const exited = new Promise((r) => s.child.once('exit', r));
        s.child.kill();
        await exited;
      }
      rmSync(s.dir, { recursive: true, force: true });
    }
  });

  it('the Deployment env starts a runtime that turns ready and serves the handler with routes and env, hiding FNHOST_*', async () => {
    const rt = startRuntime('export default async function (req, res) { res.json({ greeting: process.env.GREETING, name: req.params.name, token: process.env.FNHOST_RUNTIME_TOKEN ?? null }) }\n');
    started.push(rt);
    const port = await rt.port;
    await waitFor('/healthz 200', async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).status === 200, 20_000, 100);
    const res = await fetch(`http://127.0.0.1:${port}/hello/ada`);
    expect(res.status).to.equal(200);
    expect(await res.json()).to.deep.equal({ greeting: 'Hi', name: 'ada', token: null });
  });

  it('code that cannot load keeps /healthz at 503 while the process stays up', async () => {
    const rt = startRuntime('export default function (req, res) { throw new Error("x") }\nimport "fnhost-no-such-package";\n');
    started.push(rt);
    const port = await rt.port;
    const health = await waitFor('/healthz to report the load error', async () => {
      const r = await fetch(`http://127.0.0.1:${port}/healthz`);
      const body = await r.text();
      return r.status === 503 && /"status":"error"/.test(body) ? body : null;
    }, 20_000, 100);
    // A caller's /healthz gets no load text; the gateway's x-fnhost-wait-load gets it, without the module's path.
    expect(JSON.parse(health)).to.deep.equal({ status: 'error', error: 'load' });
    const asked = await (await fetch(`http://127.0.0.1:${port}/healthz`, { headers: { 'x-fnhost-wait-load': '1' } })).json();
    expect(asked).to.deep.include({ status: 'error', error: 'load', kind: 'failed' });
    expect(asked.message).to.match(/fnhost-no-such-package/).and.not.to.match(/\/fn\/|index\.js|\.mjs/);
    expect(rt.child.exitCode).to.equal(null);
  });
});
