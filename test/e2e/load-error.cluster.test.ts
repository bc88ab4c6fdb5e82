import { expect } from 'chai';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { derivedFunctionId } from '../../gateway/src/cluster/resource.ts';
import { getCluster, makeKubectl, uniqueName, type ClusterAccess } from '../operator/harness.ts';
import { NODE, ROOT, PLATFORM_IMAGE, RUNTIME_IMAGE, E2E_TAG, buildPlatformImage, buildRuntimeImage, installPlatform, run, waitFor, type InstalledPlatform } from './helpers.ts';

// Issue 30, "a module that throws while loading", in cluster mode (docs/cluster-mode.md "Code that
// fails to load"), on the test cluster with the chart installed by helm and the real CLI: a
// handler whose top level throws is stored (no load check at the API in cluster mode), and then
// its Function shows the load error with its line and column (CodeLoaded=False LoadFailed, Ready
// too, a Warning Event), its pod runs on without restarting (no crash loop), and its calls get a
// 503 at once that does not carry the owner's error text; function:deploy of a module exporting
// no handler ends at once with the error; a top-level await that never settles fails at the
// runtime's load deadline; fixed code (a new generation) clears it all and serves.

/** Well under the gateway's hold (30 s): an answer this fast was not held. */
const FAST_MS = 5_000;

const THROWS = `const key = process.env.API_KEY;
if (!key) throw new Error('API_KEY is not set');
export default (req, res) => res.json({ ok: true });
`;
const FIXED = `export default (req, res) => res.json({ fixed: true });\n`;
const NO_HANDLER = `export const notAHandler = 1;\n`;
/** A top level waiting for what never comes while the loop stays alive (a network call that never answers). */
const NEVER = `await new Promise(() => setInterval(() => {}, 1000));\nexport default (req, res) => res.json({ never: true });\n`;

interface Condition { type: string; status: string; reason: string; message: string; observedGeneration?: number }

describe('fnhost on Kubernetes: code that fails to load shows on the Function (issue 30)', function () {
  this.timeout(900_000);
  let cluster: ClusterAccess;
  let kubectl: ReturnType<typeof makeKubectl>;
  let platform: InstalledPlatform | undefined;
  let ns: string;
  let tmp: string;
  let gatewayUrl: string;
  let token: string;

  const cli = (args: string[]) =>
    run(NODE, [`${ROOT}cli/bin/fnhost.js`, ...args, '--url', gatewayUrl, '--token', token, '--namespace', ns], {
      env: { HOME: tmp, XDG_CONFIG_HOME: join(tmp, 'config'), FNHOST_URL: undefined, FNHOST_TOKEN: undefined, FNHOST_NAMESPACE: undefined, NO_COLOR: '1' },
      timeoutMs: 240_000,
      cwd: tmp,
    });
  const conditions = async (name: string): Promise<{ generation: number; conditions: Condition[] }> => {
    const got = await kubectl(['get', 'fn', name, '-n', ns, '-o', 'json']);
    const fn = JSON.parse(got.stdout) as { metadata: { generation: number }; status?: { conditions?: Condition[] } };
    return { generation: fn.metadata.generation, conditions: fn.status?.conditions ?? [] };
  };
  const loadFailed = (name: string) =>
    waitFor(`${name}: CodeLoaded=False LoadFailed for its generation`, async () => {
      const { generation, conditions: cs } = await conditions(name);
      const code = cs.find((c) => c.type === 'CodeLoaded');
      const ready = cs.find((c) => c.type === 'Ready');
      return code?.status === 'False' && code.reason === 'LoadFailed' && ready?.reason === 'LoadFailed' && ready.observedGeneration === generation ? code : null;
    }, 240_000, 1000);
  const invoke = async (name: string) => {
    const started = Date.now();
    const res = await fetch(`${gatewayUrl}/invoke/${derivedFunctionId(ns, name)}/`, { signal: AbortSignal.timeout(60_000) });
    return { status: res.status, body: await res.text(), ms: Date.now() - started };
  };

  before(async function () {
    this.timeout(1_800_000);
    cluster = await getCluster();
    kubectl = makeKubectl(cluster);
    tmp = await mkdtemp(join(tmpdir(), 'fnhost-e2e-load-'));
    const suffix = uniqueName('x').slice(2);
    ns = `e2e-load-${suffix}`;
    await Promise.all([buildPlatformImage(PLATFORM_IMAGE), buildRuntimeImage(RUNTIME_IMAGE)]);
    platform = await installPlatform({ cluster, kubectl, release: 'e2e-load', relNs: `fnhost-e2e-load-${suffix}`, ns, tag: E2E_TAG, dbName: `fnhost_e2e_load_${Date.now()}`, tmp });
    ({ gatewayUrl, token } = platform);
    await writeFile(join(tmp, 'throws.mjs'), THROWS);
    await writeFile(join(tmp, 'fixed.mjs'), FIXED);
    await writeFile(join(tmp, 'nohandler.mjs'), NO_HANDLER);
    await writeFile(join(tmp, 'never.mjs'), NEVER);
  });

  after(async function () {
    this.timeout(300_000);
    await platform?.remove();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  it('a module whose top level throws: CodeLoaded=False LoadFailed with the error at its line and column, a Warning Event, no crash loop, calls 503 at once', async () => {
    const created = await cli(['function:create', 'broken', '--file', 'throws.mjs']);
    expect(created.code, created.stderr).to.equal(0);
    const code = await loadFailed('broken');
    expect(code.message).to.include('API_KEY is not set');
    expect(code.message).to.match(/:2:\d+\)/);
    expect(code.message).not.to.include('/tmp/');
    const events = await waitFor('the LoadFailed Event', async () => {
      const got = await kubectl(['get', 'events.events.k8s.io', '-n', ns, '--field-selector', 'regarding.name=broken,reason=LoadFailed', '-o', 'json']);
      const items = (JSON.parse(got.stdout) as { items: Array<{ type: string; note: string }> }).items;
      return items.length > 0 ? items : null;
    }, 60_000, 1000);
    expect(events[0]).to.include({ type: 'Warning' });
    expect(events[0]!.note).to.include('API_KEY is not set');
    // Calls fail fast, generically: the reason's name, never the owner's text.
    const call = await invoke('broken');
    expect(call.status, call.body).to.equal(503);
    expect(call.ms).to.be.below(FAST_MS);
    expect(call.body).to.include('function_unavailable');
    expect(call.body).not.to.include('API_KEY');
    // No crash loop: the pod runs on, never restarted, well past the kubelet's liveness probe.
    await new Promise((r) => setTimeout(r, 20_000));
    const pods = JSON.parse((await kubectl(['get', 'pods', '-n', ns, '-l', 'fnhost.dev/function=broken,fnhost.dev/role=runtime', '-o', 'json'])).stdout) as { items: Array<{ status: { phase: string; containerStatuses: Array<{ restartCount: number; ready: boolean }> } }> };
    expect(pods.items).to.have.length(1);
    expect(pods.items[0]!.status.phase).to.equal('Running');
    expect(pods.items[0]!.status.containerStatuses[0]!.restartCount).to.equal(0);
    // function:get (the API) shows it too, as the rollout's reason.
    const got = await cli(['function:get', 'broken']);
    expect(got.stdout).to.include('LoadFailed');
  });

  it('function:deploy of a module that exports no handler ends at once with the load error; fixed code clears it and serves', async () => {
    const deployed = await cli(['function:deploy', 'broken', '--file', 'nohandler.mjs']);
    expect(deployed.code, deployed.stdout).to.not.equal(0);
    expect(deployed.stderr).to.include('LoadFailed');
    expect(deployed.stderr).to.match(/handler/);
    const fixed = await cli(['function:deploy', 'broken', '--file', 'fixed.mjs']);
    expect(fixed.code, fixed.stderr).to.equal(0);
    const { conditions: cs } = await conditions('broken');
    expect(cs.find((c) => c.type === 'CodeLoaded'), 'CodeLoaded gone once ready').to.equal(undefined);
    expect(cs.find((c) => c.type === 'Ready')).to.include({ status: 'True', reason: 'Available' });
    const status = JSON.parse((await kubectl(['get', 'fn', 'broken', '-n', ns, '-o', 'json'])).stdout).status as Record<string, unknown>;
    expect(status.loadFailure).to.equal(undefined);
    const call = await invoke('broken');
    expect(call.status, call.body).to.equal(200);
    expect(JSON.parse(call.body)).to.deep.equal({ fixed: true });
  });

  it('a top-level await that never settles (the loop alive) fails past the function\'s time limit and the start\'s slack', async () => {
    const created = await cli(['function:create', 'never', '--file', 'never.mjs', '--timeout', '3']);
    expect(created.code, created.stderr).to.equal(0);
    const code = await loadFailed('never');
    expect(code.message).to.include('did not finish loading within 3 s');
    const call = await invoke('never');
    expect(call.status, call.body).to.equal(503);
    expect(call.ms).to.be.below(FAST_MS);
  });
});
