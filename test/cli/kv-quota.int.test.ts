import { expect } from 'chai';
import { startCliPlatform, type CliPlatform } from './helpers/platform.ts';
import { runCli } from './helpers/run.ts';

// The KV quota flags of function:create and function:deploy, and function:get's
// KV usage line, through the real binary against a real gateway (docs/cli.md).

const WRITER = `export default async (req, res) => {
  try { await kv.set(req.body.k, 'x'.repeat(req.body.n)); res.json({ ok: true }); }
  catch (e) { res.json({ error: e.message }); }
}`;

describe('fnhost KV quota flags and usage (CLI)', function () {
  this.timeout(120_000);
  let p: CliPlatform;
  const fnhost = (args: string[]) => runCli(args, { env: p.env, timeoutMs: 60_000 });

  before(async () => {
    p = await startCliPlatform();
  });
  after(async () => {
    await p?.stop();
  });

  it('create sets the quota, get shows the usage of it, the handler gets an error naming it, deploy changes it and "default" returns to the platform\'s', async () => {
    const created = await fnhost(['function:create', 'notes', '--file', p.file('w.js', WRITER), '--kv-max-bytes', '1Ki', '--kv-max-keys', '2']);
    expect(created.code, created.stderr).to.equal(0);
    const first = await fnhost(['function:test', 'notes', '--data', '{"k":"a","n":500}', '--output', 'json']);
    expect(first.code, first.stderr).to.equal(0);
    expect(JSON.stringify(JSON.parse(first.stdout).body)).to.contain('"ok":true');
    const refused = await fnhost(['function:test', 'notes', '--data', '{"k":"b","n":600}', '--output', 'json']);
    expect(JSON.stringify(JSON.parse(refused.stdout).body)).to.contain('KV quota exceeded: function notes stores 503 of 1024 bytes (kv_bytes)');

    const get = await fnhost(['function:get', 'notes']);
    expect(get.stdout).to.match(/^KV:\s+1 key of 2, 503 B of 1 KiB \(49%\)$/m);
    const json = JSON.parse((await fnhost(['function:get', 'notes', '--output', 'json'])).stdout);
    expect(json.kv).to.deep.equal({ keys: 1, bytes: 503, max_keys: 2, max_bytes: 1024 });
    expect(json.kv_quota).to.deep.equal({ max_bytes: 1024, max_keys: 2 });

    const deployed = await fnhost(['function:deploy', 'notes', '--file', p.file('w.js', WRITER), '--kv-max-bytes', 'default']);
    expect(deployed.code, deployed.stderr).to.equal(0);
    const after = JSON.parse((await fnhost(['function:get', 'notes', '--output', 'json'])).stdout);
    expect(after.kv).to.deep.include({ max_bytes: 100 * 1024 * 1024, max_keys: 2 });
    expect(after.kv_quota).to.deep.equal({ max_keys: 2 });
  });

  it('bad quota flags are usage errors naming them', async () => {
    const bad = await fnhost(['function:create', 'x', '--file', p.file('w.js', WRITER), '--kv-max-bytes', '1MB']);
    expect(bad.code).to.equal(2);
    expect(bad.stderr).to.contain('--kv-max-bytes must be a number of bytes (optionally with Ki, Mi or Gi, e.g. 50Mi) or "default", got "1MB"');
    const zero = await fnhost(['function:create', 'x', '--file', p.file('w.js', WRITER), '--kv-max-keys', '0']);
    expect(zero.code).to.equal(2);
    expect(zero.stderr).to.contain('kv_quota.max_keys must be an integer from 1 to');
  });
});
