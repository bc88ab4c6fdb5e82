import { expect } from 'chai';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startGateway } from '../helpers/platform.ts';

// `npm start`'s entry (gateway/src/start.mjs): the gateway with Node's compile cache in its data folder.
const START = fileURLToPath(new URL('../../gateway/src/start.mjs', import.meta.url));

function anonMiB(pid: number): number {
  return Number(/^RssAnon:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
}

describe('the gateway started as `npm start` starts it', () => {
  it('keeps a compile cache in its data folder (made 0700), and a second start reads it instead of stripping and compiling the gateway again', async () => {
    const dataDir = join(await mkdtemp(join(tmpdir(), 'fnhost-start-')), 'data');
    try {
      const first = await startGateway({ main: START, dataDir, keepDataDir: true });
      const cold = anonMiB(first.pid);
      const r = await fetch(`${first.url}/api/v1/functions`, { headers: { authorization: `Bearer ${first.token}` } });
      expect(r.status).to.equal(200);
      await first.stop();
      expect((await stat(dataDir)).mode & 0o777, 'the data folder\'s mode').to.equal(0o700);
      expect((await readdir(join(dataDir, 'gateway-compile-cache'))).length, 'entries of the compile cache').to.be.greaterThan(0);

      const second = await startGateway({ main: START, dataDir, keepDataDir: true });
      try {
        expect((await fetch(`${second.url}/api/v1/functions`, { headers: { authorization: `Bearer ${second.token}` } })).status).to.equal(200);
        // Stripping loads amaro (WebAssembly) in the main thread and the checkpoint worker: ≈ 100 MiB
        // of anonymous memory cold against ≈ 72 from the cache (bench/RESULTS.md).
        const warm = anonMiB(second.pid);
        expect(warm, `anonymous memory, MiB, of the second start (the first: ${cold.toFixed(1)})`).to.be.below(cold - 15);
      } finally {
        await second.stop();
      }
    } finally {
      await rm(join(dataDir, '..'), { recursive: true, force: true });
    }
  });
});
