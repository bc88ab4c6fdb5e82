import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { DataDirInUseError, holderAlive, lockDataDir, processStartTime } from '../../gateway/src/data-dir-lock.ts';

// The data folder's lock on real files and real processes (the gateway
// process suite starts two real gateways on one folder).

describe('data folder lock', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'fnhost-lock-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('is refused while its holder runs, naming pid and URL, and the lock file is left as it was', async () => {
    const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    try {
      const held = await lockDataDir(dir, child.pid!);
      await held.setUrl('http://127.0.0.1:8080');
      const before = await readFile(join(dir, 'gateway.lock'), 'utf8');
      let err: unknown;
      await lockDataDir(dir).catch((e: unknown) => (err = e));
      expect(err).to.be.instanceOf(DataDirInUseError);
      expect((err as Error).message).to.include(`pid ${child.pid}, serving http://127.0.0.1:8080`);
      expect(await readFile(join(dir, 'gateway.lock'), 'utf8')).to.equal(before);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('is taken over from a holder that was killed, and released on a clean stop', async () => {
    const child = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
    const gone = new Promise((r) => child.once('exit', r));
    await writeFile(join(dir, 'gateway.lock'), JSON.stringify({ pid: child.pid, started: null, url: 'http://127.0.0.1:1', since: '' }));
    await gone;
    const lock = await lockDataDir(dir);
    expect(JSON.parse(await readFile(join(dir, 'gateway.lock'), 'utf8')).pid).to.equal(process.pid);
    await lock.release();
    expect(await readFile(join(dir, 'gateway.lock'), 'utf8').catch(() => 'gone')).to.equal('gone');
  });

  it('is taken over when the pid now runs another process (reused pid), and from an unreadable file', async () => {
    await writeFile(join(dir, 'gateway.lock'), JSON.stringify({ pid: process.pid, started: 'not-this-start', url: null, since: '' }));
    const lock = await lockDataDir(dir);
    await lock.release();
    await writeFile(join(dir, 'gateway.lock'), '{half a wri');
    await (await lockDataDir(dir)).release();
  });

  it('judges a holder by pid and start time (pure)', async () => {
    const started = await processStartTime(process.pid);
    expect(started).to.match(/^\d+$/);
    const lock = { pid: process.pid, started, url: null, since: '' };
    expect(holderAlive(lock, true, started)).to.equal(true);
    expect(holderAlive(lock, true, '1')).to.equal(false);
    expect(holderAlive(lock, false, started)).to.equal(false);
    expect(holderAlive({ ...lock, started: null }, true, null)).to.equal(true);
  });
});
