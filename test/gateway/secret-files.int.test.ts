import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GATEWAY_MAIN, startGateway, type RunningGateway } from '../helpers/platform.ts';

// The gateway's secret settings from files (FNHOST_TOKEN_FILE, ...), as the chart
// mounts them: a real gateway process that takes the admin token from a file,
// keeps it out of its own environment, and refuses a start with both forms.

describe('gateway: secret settings from files', function () {
  this.timeout(60_000);
  let dir: string;
  let gateway: RunningGateway | undefined;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'fnhost-secret-files-'));
  });
  after(async () => {
    await gateway?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('FNHOST_TOKEN_FILE: the token in the file is the admin token, and the environment never holds it', async () => {
    const token = 'token-from-a-mounted-secret-0123456789';
    const file = join(dir, 'admin-token');
    writeFileSync(file, `${token}\n`, { mode: 0o400 });
    gateway = await startGateway({ env: { FNHOST_TOKEN_FILE: file } });
    expect(gateway.token).to.equal(token);
    const ok = await fetch(`${gateway.url}/api/v1/functions`, { headers: { authorization: `Bearer ${token}` } });
    expect(ok.status).to.equal(200);
    const wrong = await fetch(`${gateway.url}/api/v1/functions`, { headers: { authorization: `Bearer ${token}x` } });
    expect(wrong.status).to.equal(401);
    expect(gateway.output()).to.match(/"token_source":"FNHOST_TOKEN"/);
    // What /proc shows of the process (and what a child would inherit): the path, not the token.
    const environ = readFileSync(`/proc/${gateway.pid}/environ`, 'utf8');
    expect(environ).to.contain(`FNHOST_TOKEN_FILE=${file}`);
    expect(environ).to.not.contain(token);
  });

  it('both FNHOST_TOKEN and FNHOST_TOKEN_FILE, or an unreadable file: no start, a message naming them and never the value', () => {
    const file = join(dir, 'other-token');
    writeFileSync(file, 'file-token-value-0123456789');
    const start = (env: Record<string, string>) => {
      const clean: Record<string, string> = { ...(process.env as Record<string, string>), PORT: '0', HOST: '127.0.0.1', FNHOST_DATA_DIR: join(dir, 'data'), FNHOST_QUIET: '1', ...env };
      return spawnSync(process.execPath, [GATEWAY_MAIN], { env: clean, encoding: 'utf8', timeout: 30_000 });
    };
    const both = start({ FNHOST_TOKEN: 'env-token-value-0123456789', FNHOST_TOKEN_FILE: file });
    expect(both.status).to.equal(1);
    expect(both.stdout + both.stderr).to.contain('FNHOST_TOKEN and FNHOST_TOKEN_FILE are both set');
    expect(both.stdout + both.stderr).to.not.contain('token-value-0123456789');
    const missing = start({ MONGODB_URL_FILE: join(dir, 'nope') });
    expect(missing.status).to.equal(1);
    expect(missing.stdout + missing.stderr).to.contain(`MONGODB_URL_FILE=${join(dir, 'nope')} cannot be read (ENOENT)`);
  });
});
