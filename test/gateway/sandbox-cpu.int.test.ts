import { readFile } from 'node:fs/promises';
import { expect } from 'chai';
import { startGateway, type RunningGateway } from '../helpers/platform.ts';

// A function's CPU on one machine (docs/sandbox.md "CPU"): PUT /functions/{ref}/scaling takes
// `cpu` (cluster mode's units), the runtime restarts into a cpu cgroup with the matching weight and
// quota, and the settings of pods and autoscaling stay Kubernetes-only. As root (cgroups).

describe('a function\'s cpu on one machine (real gateway, real sandbox cgroups)', function () {
  this.timeout(120_000);
  let gw: RunningGateway;

  before(async function () {
    if (process.getuid?.() !== 0) throw new Error('needs root: only a root gateway makes cgroups (the suite runs as root)');
    gw = await startGateway();
  });
  after(() => gw?.stop());

  const api = async (method: string, path: string, body?: unknown) => {
    const r = await fetch(gw.url + path, { method, headers: { authorization: `Bearer ${gw.token}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await r.text();
    return { status: r.status, body: text === '' ? undefined : JSON.parse(text) };
  };
  it('takes cpu through the scaling endpoint and puts the runtime in a cpu cgroup with its weight and quota', async () => {
    const code = `export default (req, res) => res.send('ok');`;
    const created = await api('POST', '/api/v1/functions', { name: 'weighed', code });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    const id = created.body.function_id as string;
    expect(created.body.cpu).to.equal(undefined);

    const set = await api('PUT', `/api/v1/functions/${id}/scaling`, { cpu: { request: '250m', limit: '500m' } });
    expect(set.status, JSON.stringify(set.body)).to.equal(200);
    expect(set.body.cpu).to.deep.equal({ request: '250m', limit: '500m' });
    expect((await api('GET', `/api/v1/functions/${id}`)).body.cpu).to.deep.equal({ request: '250m', limit: '500m' });

    // The runtime (restarted by the change) is in a cpu group of the gateway's with those values.
    expect(await (await fetch(`${gw.url}/invoke/${id}`)).text()).to.equal('ok');
    expect(await readFile(`/sys/fs/cgroup/cpu/fnhost-${gw.pid}/cpu.shares`, 'utf8')).to.equal('512\n');
    // A group may end between the listing and the read (the function's old runtime, restarted by
    // the change, exiting: the kernel then answers ENODEV or ENOENT); the new one just answered.
    const values = (await Promise.all((await runtimeCpuGroups(gw.pid)).map((g) => groupCpu(g)))).filter((v) => v !== undefined);
    expect(values, 'the function\'s runtime group').to.include('256 50000');

    // Back to the default; pods and autoscaling are refused on one machine, naming the field.
    const reset = await api('PUT', `/api/v1/functions/${id}/scaling`, { cpu: null });
    expect(reset.status).to.equal(200);
    expect(reset.body.cpu).to.equal(undefined);
    const refused = await api('PUT', `/api/v1/functions/${id}/scaling`, { replicas: 2 });
    expect(refused.status).to.equal(400);
    expect(refused.body.message).to.contain('replicas');
    const bad = await api('PUT', `/api/v1/functions/${id}/scaling`, { cpu: { request: 'lots' } });
    expect(bad.status).to.equal(400);
    expect(bad.body.message).to.contain('cpu.request');
  });
});

/** "<shares> <quota>" of a cpu group, or undefined when it has ended since it was listed. */
async function groupCpu(group: string): Promise<string | undefined> {
  try {
    return [await readFile(`${group}/cpu.shares`, 'utf8'), await readFile(`${group}/cpu.cfs_quota_us`, 'utf8')].map((v) => v.trim()).join(' ');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENODEV' || (err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** The gateway's runtime cpu groups that hold a process. */
async function runtimeCpuGroups(gatewayPid: number): Promise<string[]> {
  const { readdir } = await import('node:fs/promises');
  const base = `/sys/fs/cgroup/cpu/fnhost-${gatewayPid}`;
  const out: string[] = [];
  for (const e of await readdir(base, { withFileTypes: true })) {
    if (!e.isDirectory()) continue;
    const procs = await readFile(`${base}/${e.name}/cgroup.procs`, 'utf8').catch(() => '');
    if (procs.trim() !== '') out.push(`${base}/${e.name}`);
  }
  return out;
}

describe('runtimes without a cpu cgroup run below the gateway (nice)', function () {
  this.timeout(120_000);

  it('an unsandboxed runtime, and the processes it starts, run 10 nice levels below the gateway', async () => {
    const gw = await startGateway({ env: { FNHOST_SANDBOX: 'off', FNHOST_WARM_POOL: '0' } });
    try {
      const code = `import { execFileSync } from 'node:child_process';
export default (req, res) => res.json({ pid: process.pid, child: execFileSync('sh', ['-c', 'cut -d" " -f19 /proc/$$/stat'], { encoding: 'utf8' }).trim() });`;
      const created = await fetch(`${gw.url}/api/v1/functions`, { method: 'POST', headers: { authorization: `Bearer ${gw.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'niced', code }) });
      expect(created.status).to.equal(201);
      const { function_id } = (await created.json()) as { function_id: string };
      const r = await fetch(`${gw.url}/invoke/${function_id}`);
      expect(r.status).to.equal(200);
      const { pid, child } = (await r.json()) as { pid: number; child: string };
      const niceOf = async (p: number) => {
        const stat = await readFile(`/proc/${p}/stat`, 'utf8');
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
      };
      // 10 below the gateway (whatever nice the gateway itself was started at), as \`nice -n 10\` would.
      const expected = Math.min(19, (await niceOf(gw.pid)) + 10);
      expect(await niceOf(pid), 'the runtime\'s nice').to.equal(expected);
      expect(Number(child), 'a process it starts').to.equal(expected);
    } finally {
      await gw.stop();
    }
  });
});
