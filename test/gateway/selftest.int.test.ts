import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startGateway, type RunningGateway } from '../helpers/platform.ts';

// gateway/src/selftest.ts is what the chart's `helm test` pod runs; here it
// runs as a process against a real gateway on this machine: it must create,
// invoke and delete a function, and fail (exit 1, naming the step) when it cannot.

const SELFTEST = fileURLToPath(new URL('../../gateway/src/selftest.ts', import.meta.url));

function runSelfTest(env: Record<string, string>): Promise<{ code: number; stdout: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [SELFTEST], { env: { ...process.env, ...env }, timeout: 120_000 }, (err, stdout) =>
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout: String(stdout) }),
    );
  });
}

describe('gateway: the installation self-test (helm test)', () => {
  let h: RunningGateway;
  let dir: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'fnhost-selftest-'));
    h = await startGateway();
    await writeFile(join(dir, 'token'), h.token + '\n', { mode: 0o600 });
    await writeFile(join(dir, 'wrong'), 'fnh_wrong_wrong_wrong_wrong\n', { mode: 0o600 });
  });

  after(async () => {
    await h?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('creates a function, invokes it end to end, deletes it, and exits 0; every line is a JSON record', async () => {
    const r = await runSelfTest({ FNHOST_URL: h.url, FNHOST_TOKEN_FILE: join(dir, 'token'), FNHOST_SELFTEST_TIMEOUT_SECONDS: '60' });
    const records = r.stdout.trim().split('\n').map((l) => JSON.parse(l) as { msg: string; name?: string });
    expect(r.code, r.stdout).to.equal(0);
    expect(records.map((x) => x.msg)).to.deep.equal(['selftest: function created', 'selftest: function invoked', 'selftest: function deleted', 'selftest: passed']);
    // Nothing is left behind, and the token never shows.
    const list = await fetch(`${h.url}/api/v1/functions`, { headers: { authorization: `Bearer ${h.token}` } });
    expect(JSON.stringify(await list.json())).not.to.contain(records[0]!.name!);
    expect(r.stdout).not.to.contain(h.token);
  });

  it('fails with exit 1 naming the step when the token is wrong', async () => {
    const r = await runSelfTest({ FNHOST_URL: h.url, FNHOST_TOKEN_FILE: join(dir, 'wrong') });
    expect(r.code).to.equal(1);
    const last = JSON.parse(r.stdout.trim().split('\n').pop()!) as { msg: string; error: string };
    expect(last.msg).to.equal('selftest: failed');
    expect(last.error).to.match(/^create helm-test-[0-9a-f]{8}: HTTP 401/);
  });
});
