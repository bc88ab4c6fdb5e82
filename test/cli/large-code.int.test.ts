import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { INLINE_CODE_BYTES } from '../../core/src/limits.ts';
import { startCliPlatform, type CliPlatform } from './helpers/platform.ts';
import { runCli, type RunResult } from './helpers/run.ts';

// Issue 30: a handler of real size (a 5 MiB+ bundle) through the real CLI against a real
// one-machine gateway: bundled, uploaded by digest (once), created with code_ref, and served;
// function:get says how the code is held; fnhost bundle --push prints the codeRef: for a manifest.

/** A deterministic module of ~`bytes` bytes: one big string, as a vendored SDK's bulk. */
function bigModule(bytes: number): string {
  const letters: string[] = [];
  let x = 7;
  for (let i = 0; i < bytes; i++) {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    letters.push(String.fromCharCode(97 + (x % 26)));
  }
  return `export const BULK = "${letters.join('')}";\n`;
}

describe('fnhost CLI: a 5 MiB handler by reference (issue 30)', function () {
  this.timeout(300_000);
  let p: CliPlatform;
  let dir: string;
  const fnhost = (args: string[]): Promise<RunResult> => runCli(args, { env: p.env, cwd: dir, timeoutMs: 120_000 });

  before(async () => {
    p = await startCliPlatform();
    dir = mkdtempSync(join(tmpdir(), 'fnhost-large-'));
    writeFileSync(join(dir, 'bulk.js'), bigModule(5 * 1024 * 1024 + 123));
    writeFileSync(join(dir, 'handler.js'), 'import { BULK } from "./bulk.js";\nexport default (req, res) => res.json({ bulk: BULK.length, tail: BULK.slice(-4) });\n');
    writeFileSync(join(dir, 'small.js'), 'export default (req, res) => res.json({ small: true });\n');
  });
  after(async () => {
    await p?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  let digest = '';
  let size = 0;

  it('function:create --file uploads the bundle by digest and creates the function with code_ref; it answers', async () => {
    const created = await fnhost(['function:create', 'big', '--file', 'handler.js', '--output', 'json']);
    expect(created.code, created.stderr).to.equal(0);
    const fn = JSON.parse(created.stdout) as { function_id: string; code?: string; code_ref: { digest: string; size: number } };
    expect(fn).not.to.have.property('code');
    ({ digest, size } = fn.code_ref);
    expect(digest).to.match(/^sha256:[0-9a-f]{64}$/);
    expect(size).to.be.above(5 * 1024 * 1024);
    expect(created.stderr).to.equal(`Uploading ${(size / 1048576).toFixed(1)} MiB of code (${digest})\n`);
    const res = await fetch(`${p.url}/invoke/${fn.function_id}`);
    const body = (await res.json()) as { bulk: number; tail: string };
    expect(res.status, JSON.stringify(body)).to.equal(200);
    expect(body.bulk).to.equal(5 * 1024 * 1024 + 123);
  });

  it('function:get says the code is a reference (digest, size); a small function\'s is inline', async () => {
    const got = await fnhost(['function:get', 'big']);
    expect(got.code, got.stderr).to.equal(0);
    expect(got.stdout).to.match(new RegExp(`^Code: +by reference ${digest} \\(${size} bytes\\)$`, 'm'));
    const json = JSON.parse((await fnhost(['function:get', 'big', '--output', 'json'])).stdout) as { code_ref: unknown };
    expect(json.code_ref).to.deep.equal({ digest, size });
    const small = await fnhost(['function:create', 'small', '--file', 'small.js']);
    expect(small.code, small.stderr).to.equal(0);
    const smallGot = await fnhost(['function:get', 'small']);
    expect(smallGot.stdout).to.match(/^Code: +inline \(\d+ bytes\)$/m);
    expect(Number(/inline \((\d+) bytes\)/.exec(smallGot.stdout)![1])).to.be.below(INLINE_CODE_BYTES);
  });

  it('function:deploy of the same bundle uploads nothing (the server has it) and keeps serving', async () => {
    const deployed = await fnhost(['function:deploy', 'big', '--file', 'handler.js']);
    expect(deployed.code, deployed.stderr).to.equal(0);
    expect(deployed.stderr).not.to.include('Uploading');
    const fn = JSON.parse((await fnhost(['function:get', 'big', '--output', 'json'])).stdout) as { function_id: string };
    expect((await fetch(`${p.url}/invoke/${fn.function_id}`)).status).to.equal(200);
  });

  it('fnhost bundle --push prints the codeRef: lines for a Function manifest', async () => {
    const pushed = await fnhost(['bundle', 'handler.js', '--push']);
    expect(pushed.code, pushed.stderr).to.equal(0);
    expect(pushed.stdout).to.equal(`codeRef:\n  digest: ${digest}\n  size: ${size}\n`);
    // A changed bundle is uploaded: one line on stderr.
    writeFileSync(join(dir, 'handler2.js'), 'import { BULK } from "./bulk.js";\nexport default (req, res) => res.json({ v: 2, bulk: BULK.length });\n');
    const second = await fnhost(['bundle', 'handler2.js', '--push', '-o', 'out.mjs']);
    expect(second.code, second.stderr).to.equal(0);
    expect(second.stderr).to.match(/^Uploading \d+\.\d MiB of code \(sha256:[0-9a-f]{64}\)\n$/);
    expect(second.stdout).to.match(/^✓ Bundled handler2\.js into out\.mjs \(\d+ bytes of the 52428800-byte limit, source map included\)\ncodeRef:\n  digest: sha256:[0-9a-f]{64}\n  size: \d+\n$/);
  });
});
