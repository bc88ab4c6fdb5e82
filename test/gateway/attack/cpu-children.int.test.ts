import { readdir, readFile } from 'node:fs/promises';
import { expect } from 'chai';
import { startGateway, type RunningGateway } from '../../helpers/platform.ts';
import { Neighbour, type Target } from './neighbour.ts';

// Attack 6 of issue 27 (CPU): a function's call starts busy child processes, each in a session of
// its own (so the kernel's autogroup would count each as a neighbour of the gateway's), answers,
// and leaves them running. They must count against that function's CPU share (its cgroup, under
// the sandboxes' parent weighted below the gateway: docs/sandbox.md "CPU"), so a neighbour
// function keeps being served, and they must end with the runtime (here: the function's delete,
// and its idle stop). As root with cgroups only, like the sandbox tests it joins.

const CHILDREN = 96;
/** Each child ends by itself after this long at the latest (the attack is bounded even if a check fails). */
const CHILD_SECONDS = 120;

/** The attacker: `CHILDREN` detached busy shells tagged with `marker` (their $0), each in a session of its own, then an answer. */
function attackerCode(marker: string): string {
  return `import { spawn } from 'node:child_process';
export default (req, res) => {
  const children = [];
  for (let i = 0; i < ${CHILDREN}; i++) {
    // Each waits for the end of its stdin, so that none spins before all are started.
    const c = spawn('bash', ['-c', 'read; while [ $SECONDS -lt ${CHILD_SECONDS} ]; do :; done', '${marker}'], { detached: true, stdio: ['pipe', 'ignore', 'ignore'] });
    c.unref();
    children.push(c);
  }
  for (const c of children) c.stdin.end();
  res.json({ started: children.length });
};`;
}

/** Host pids of the busy shells tagged `marker` (their cmdline names it). */
async function busyShells(marker: string): Promise<number[]> {
  const pids: number[] = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const cmdline = await readFile(`/proc/${name}/cmdline`, 'utf8').catch(() => '');
    const argv = cmdline.split('\0');
    if (argv[0] === 'bash' && argv.includes(marker)) pids.push(Number(name));
  }
  return pids;
}

/** A process's state letter (R runnable, S sleeping, ...). */
async function stateOf(pid: number): Promise<string | undefined> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) || undefined;
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The cpu controller's cgroup of a process (cgroup v1), e.g. /fnhost-123/abcdef. */
async function cpuCgroupOf(pid: number): Promise<string | undefined> {
  const text = await readFile(`/proc/${pid}/cgroup`, 'utf8').catch(() => '');
  const line = text.split('\n').find((l) => /^\d+:([^:]*,)?cpu(,[^:]*)?:/.test(l));
  return line?.split(':')[2];
}

const asRoot = process.getuid?.() === 0;

describe('attack 6: busy child processes a call leaves behind (CPU)', function () {
  this.timeout(240_000);
  let gw: RunningGateway | undefined;
  const markers: string[] = [];

  before(function () {
    // The bound is the cpu cgroup, which only a root gateway can make.
    if (!asRoot) throw new Error('this attack test needs root (the gateway makes cgroups only as root); the suite runs as root');
  });

  afterEach(async () => {
    await gw?.stop();
    gw = undefined;
    // Whatever the result, no busy shell outlives the test.
    for (const m of markers.splice(0)) for (const pid of await busyShells(m)) process.kill(pid, 'SIGKILL');
  });

  const apiOf = (g: RunningGateway) => async (method: string, path: string, body?: unknown) => {
    const r = await fetch(g.url + path, { method, headers: { authorization: `Bearer ${g.token}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await r.text();
    return { status: r.status, body: text === '' ? undefined : JSON.parse(text) };
  };
  const targetOf = (g: RunningGateway): Target => ({
    url: g.url,
    pid: g.pid,
    createFunction: async (name, code, extra = {}) => {
      const r = await apiOf(g)('POST', '/api/v1/functions', { name, code, ...extra });
      expect(r.status, JSON.stringify(r.body)).to.equal(201);
      return r.body as { function_id: string };
    },
  });
  const attack = async (g: RunningGateway, marker: string): Promise<{ function_id: string; shells: number[] }> => {
    const fn = await targetOf(g).createFunction(`busy-${marker.slice(-6)}`, attackerCode(marker), { timeout_seconds: 120 });
    const r = await fetch(`${g.url}/invoke/${fn.function_id}`);
    expect(r.status, await r.clone().text()).to.equal(200);
    expect(await r.json()).to.deep.equal({ started: CHILDREN });
    const shells = await waitFor(`${CHILDREN} shells`, async () => {
      const found = await busyShells(marker);
      return found.length === CHILDREN ? found : undefined;
    });
    return { function_id: fn.function_id, shells };
  };

  it(`a neighbour keeps being served while ${CHILDREN} leftover busy children run, and they end with the runtime (delete)`, async () => {
    gw = await startGateway();
    const n = await Neighbour.start(targetOf(gw));
    try {
      const marker = `fnhost-busy-${Math.random().toString(36).slice(2, 10)}`;
      markers.push(marker);
      const { function_id, shells } = await attack(gw, marker);
      // Past their wait, they spin: runnable (R), not sleeping.
      await waitFor(`${CHILDREN} shells spinning`, async () => ((await Promise.all(shells.map(stateOf))).every((s) => s === 'R') ? true : undefined));
      // They count against the function's share: each is in a cpu group of its runtime, under the gateway's.
      for (const pid of shells.slice(0, 4)) expect(await cpuCgroupOf(pid), `busy shell ${pid}'s cpu cgroup`).to.match(new RegExp(`^/fnhost-${gw.pid}/[0-9a-f]+$`));

      n.startProbing(150);
      const during = await n.stopProbing();
      expect((await busyShells(marker)).length, 'the busy children ran through the whole measurement').to.equal(CHILDREN);
      n.expectServed(during, 'busy leftover children');

      // The runtime stops (the function is deleted): its leftovers go with it.
      expect((await apiOf(gw)('DELETE', `/api/v1/functions/${function_id}`)).status).to.equal(204);
      await waitFor('the leftover children to end with the runtime', async () => ((await busyShells(marker)).length === 0 ? true : undefined));
      await n.expectRecovered('busy leftover children');
    } finally {
      n.close();
    }
  });

  it('leftover children end when the runtime stops after idling', async () => {
    gw = await startGateway({ env: { FNHOST_RUNTIME_IDLE_SECONDS: '5' } });
    const marker = `fnhost-busy-${Math.random().toString(36).slice(2, 10)}`;
    markers.push(marker);
    await attack(gw, marker);
    // No call for 5 s: the runtime is stopped, and every process its call left with it.
    await waitFor('the leftover children to end with the idle runtime', async () => ((await busyShells(marker)).length === 0 ? true : undefined), 30_000);
    expect(gw.output()).to.include('runtime stopped after idling');
  });
});
