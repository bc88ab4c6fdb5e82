import { expect } from 'chai';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RuntimeProcess } from '../../../gateway/src/executor/process.ts';

// A runtime's start is bounded by its own progress (gateway/src/executor/start-progress.ts),
// through the real spawn path: a start that takes longer than the start timeout while it uses
// CPU (what a loaded machine does to every start) is waited for; one that uses none is ended.
// The "runtimes" are small scripts standing for the start's two behaviours.

const START_TIMEOUT_MS = 1000;

describe('a runtime start bounded by its progress, not the wall clock (real processes)', function () {
  this.timeout(120_000);
  let dir: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'fnhost-start-progress-'));
    // 1.3 s of CPU before the listening line: longer than START_TIMEOUT_MS on any machine, and within
    // the 60 s ceiling when a runtime (niced below the test) gets a twentieth of a core.
    await writeFile(join(dir, 'slow.mjs'), `
const start = process.cpuUsage();
const used = () => { const u = process.cpuUsage(start); return (u.user + u.system) / 1000; };
while (used() < 1300) for (let i = 0; i < 1e5; i++);
console.log(JSON.stringify({ port: 4242 }));
setInterval(() => {}, 3_600_000);
`);
    // Waits on something that never comes, using no CPU.
    await writeFile(join(dir, 'stuck.mjs'), 'setInterval(() => {}, 3_600_000);\n');
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  function spawnRuntime(main: string): RuntimeProcess {
    return new RuntimeProcess({ main: join(dir, main), env: {}, cwd: dir, dataDir: dir, owner: 'test', subject: `the runtime ${main}`, startTimeoutMs: START_TIMEOUT_MS, forwardOutput: false });
  }

  it('waits for a start that keeps using CPU past the start timeout', async () => {
    const proc = spawnRuntime('slow.mjs');
    try {
      const started = performance.now();
      expect(await proc.listening).to.equal('http://127.0.0.1:4242');
      expect(performance.now() - started).to.be.greaterThan(START_TIMEOUT_MS);
    } finally {
      proc.child.kill('SIGKILL');
      await proc.exit;
    }
  });

  it('ends a start that used no CPU for the start timeout, saying so', async () => {
    const proc = spawnRuntime('stuck.mjs');
    const err = await proc.listening.then(() => undefined, (e: Error) => e);
    await proc.exit;
    expect(err?.message).to.match(/^the runtime stuck\.mjs did not start: it used no CPU for \d+ ms \(bound 1000 ms\)$/);
    expect(proc.exitSignal).to.equal('SIGKILL');
  });
});
