import { expect } from 'chai';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { httpHealthProbe } from '../../../gateway/src/cluster/probe.ts';
import { LOAD_ERROR } from '../../../gateway/src/cluster/executor.ts';
import { pollUntil } from '../../helpers/wait.ts';
import { startGenericRuntime, startRuntime, type RunningRuntime } from '../../runtime/helpers/runtime.ts';

// The cluster-mode gateway's probe of a starting pod (gateway/src/cluster/probe.ts)
// against the real runtime process: false while the function module is still
// loading, true once it is loaded; false for a module that fails to load and
// for a generic runtime of the warm pool (not specialized).

const probe = (rt: RunningRuntime) => httpHealthProbe(rt.url, AbortSignal.timeout(5000));

describe('cluster mode: the health probe against the real runtime', function () {
  this.timeout(30_000);
  const running: RunningRuntime[] = [];
  let dir: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'fnhost-probe-'));
  });
  after(async () => {
    for (const rt of running) await rt.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('is false while the function module loads and true once it is loaded', async () => {
    const gate = join(dir, 'loaded');
    // The module's top level waits until the test creates the gate file.
    const code = `import { existsSync } from 'node:fs';
while (!existsSync(${JSON.stringify(gate)})) await new Promise((r) => setTimeout(r, 20));
export default (req, res) => res.json({ ok: true });
`;
    const rt = await startRuntime({ code });
    running.push(rt);
    expect(await probe(rt), 'loading: 503').to.equal(false);
    const raw = await fetch(`${rt.url}/healthz`);
    expect(raw.status).to.equal(503);
    expect(await raw.json()).to.deep.equal({ status: 'starting' });
    await writeFile(gate, '');
    await pollUntil('the probe to see the module loaded', async () => probe(rt), 20_000, 25);
    expect((await fetch(rt.url)).status).to.equal(200);
  });

  it('says load_error for a module that cannot load (the executor then fails held calls at once), false for a generic runtime not specialized yet', async () => {
    const broken = await startRuntime({ code: 'import "fnhost-no-such-package";\nexport default () => {};\n' });
    running.push(broken);
    await broken.waitForLine(/fnhost-no-such-package/, 20_000);
    await pollUntil('/healthz to report the load error', async () => (await (await fetch(`${broken.url}/healthz`)).json() as { status: string }).status === 'error', 20_000, 50);
    expect(await probe(broken)).to.equal(LOAD_ERROR);
    const generic = await startGenericRuntime();
    running.push(generic);
    expect(await probe(generic)).to.equal(false);
    expect(await (await fetch(`${generic.url}/healthz`)).json()).to.deep.equal({ status: 'generic' });
  });
});
