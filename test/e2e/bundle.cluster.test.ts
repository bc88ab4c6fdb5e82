import { expect } from 'chai';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { derivedFunctionId } from '../../gateway/src/cluster/resource.ts';
import { installFixtureProject, type FixtureProject } from '../helpers/fixture-project.ts';
import { getCluster, makeKubectl, uniqueName, type ClusterAccess } from '../operator/harness.ts';
import { NODE, ROOT, PLATFORM_IMAGE, RUNTIME_IMAGE, E2E_TAG, buildPlatformImage, buildRuntimeImage, installPlatform, run, waitFor, type InstalledPlatform } from './helpers.ts';

// Issue 19 in cluster mode, on the test cluster, the way a user runs it: the chart installed with
// helm, the fixture project (real registry packages, a TypeScript handler) created with the CLI
// and applied with kubectl from `fnhost bundle`. The handler answers from its pod; a thrown error's
// stack, mapped in the pod (whose module is a ConfigMap file behind a symlink), names
// src/handler.ts in function:logs; a native addon and a missing package are refused at create; a
// Function over 256 KiB is refused by client-side kubectl apply (its annotation) and taken by
// --server-side, as docs/cluster-mode.md says.


describe('fnhost on Kubernetes: handlers that import packages (issue 19)', function () {
  this.timeout(600_000);
  let cluster: ClusterAccess;
  let kubectl: ReturnType<typeof makeKubectl>;
  let platform: InstalledPlatform | undefined;
  let project: FixtureProject;
  let ns: string;
  let tmp: string;
  let gatewayUrl: string;
  let token: string;

  /** The CLI from the fixture project's folder, so paths read as the user typed them. */
  const cli = (args: string[]) =>
    run(NODE, [`${ROOT}cli/bin/fnhost.js`, ...args, ...(args[0] === 'bundle' ? [] : ['--url', gatewayUrl, '--token', token, '--namespace', ns])], {
      env: { HOME: tmp, XDG_CONFIG_HOME: join(tmp, 'config'), FNHOST_URL: undefined, FNHOST_TOKEN: undefined, FNHOST_NAMESPACE: undefined, NO_COLOR: '1' },
      timeoutMs: 120_000,
      cwd: project.dir,
    });
  const functionFrom = (name: string, code: string) => JSON.stringify({ apiVersion: 'fnhost.dev/v1alpha1', kind: 'Function', metadata: { name, namespace: ns }, spec: { code, timeoutSeconds: 10 } });
  const answering = (name: string, path: string) =>
    waitFor(`${name} answering 200`, async () => {
      const r = await fetch(`${gatewayUrl}/invoke/${derivedFunctionId(ns, name)}${path}`, { signal: AbortSignal.timeout(10_000) });
      return r.status === 200 ? ((await r.json()) as Record<string, unknown>) : null;
    }, 240_000, 1000);

  before(async function () {
    this.timeout(1_800_000);
    cluster = await getCluster();
    kubectl = makeKubectl(cluster);
    tmp = await mkdtemp(join(tmpdir(), 'fnhost-e2e-bundle-'));
    const suffix = uniqueName('x').slice(2);
    ns = `e2e-bundle-${suffix}`;
    [project] = await Promise.all([installFixtureProject(), buildPlatformImage(PLATFORM_IMAGE), buildRuntimeImage(RUNTIME_IMAGE)]);
    platform = await installPlatform({ cluster, kubectl, release: 'e2e-bundle', relNs: `fnhost-e2e-bundle-${suffix}`, ns, tag: E2E_TAG, dbName: `fnhost_e2e_bundle_${Date.now()}`, tmp });
    ({ gatewayUrl, token } = platform);
  });

  after(async function () {
    this.timeout(300_000);
    await platform?.remove();
    project?.remove();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  it('function:create of the TypeScript handler with its packages: the pod answers', async () => {
    const created = await cli(['function:create', 'packages', '--file', 'src/handler.ts']);
    expect(created.code, created.stderr).to.equal(0);
    const body = await answering('packages', '/?name=Ada');
    expect(body).to.include({ html: '&lt;b&gt;Ada&lt;/b&gt;', idLength: 8, debugNamespace: 'fixture' });
  });

  it("a thrown error's stack, mapped in the pod, names src/handler.ts in function:logs", async () => {
    const res = await fetch(`${gatewayUrl}/invoke/${derivedFunctionId(ns, 'packages')}/boom`);
    expect(res.status).to.equal(500);
    expect(res.headers.get('x-fnhost-error-stack')).to.equal(null);
    const table = await waitFor('the failed call with its stack', async () => {
      const r = await cli(['function:logs', 'packages', '--status', 'error', '--stack']);
      return r.code === 0 && r.stdout.includes('at explode') ? r.stdout : null;
    }, 60_000, 1000);
    expect(table).to.include('    Error: fixture exploded\n      at explode (src/handler.ts:20:9)\n      at handler (src/handler.ts:13:29)');
    expect(table).not.to.match(/\/var\/fnhost|\.\.\d{4}_/);
  });

  it('a native addon and a missing package are refused at create, nothing applied', async () => {
    const native = await cli(['function:create', 'native', '--file', 'src/native.ts']);
    expect(native.code, native.stderr).to.equal(1);
    expect(native.stderr).to.include('src/native.ts:1:19: package "native-addon-fixture" is a native addon');
    const missing = await cli(['function:create', 'missing', '--file', 'src/missing.ts']);
    expect(missing.code, missing.stderr).to.equal(1);
    expect(missing.stderr).to.include('src/missing.ts:2:21: Could not resolve "left-pad"');
    for (const name of ['native', 'missing']) expect((await kubectl(['get', 'fn', name, '-n', ns])).code).not.to.equal(0);
  });

  it('fnhost bundle, then kubectl apply --server-side: the Function answers', async () => {
    const bundled = await cli(['bundle', 'src/handler.ts', '-o', 'handler.mjs']);
    expect(bundled.code, bundled.stderr).to.equal(0);
    const code = await readFile(join(project.dir, 'handler.mjs'), 'utf8');
    const applied = await kubectl(['apply', '--server-side', '-f', '-'], functionFrom('applied', code));
    expect(applied.code, applied.stderr).to.equal(0);
    expect(await answering('applied', '/?name=Grace')).to.include({ html: '&lt;b&gt;Grace&lt;/b&gt;' });
  });

  it('a Function over 256 KiB: refused by client-side apply (its annotation), taken by --server-side', async () => {
    const code = `export default (req, res) => res.json({ big: true });\n// ${'x'.repeat(300 * 1024)}\n`;
    const clientSide = await kubectl(['apply', '-f', '-'], functionFrom('big', code));
    expect(clientSide.code).not.to.equal(0);
    expect(clientSide.stderr).to.match(/Too long|too long/);
    const serverSide = await kubectl(['apply', '--server-side', '-f', '-'], functionFrom('big', code));
    expect(serverSide.code, serverSide.stderr).to.equal(0);
    expect(await answering('big', '/')).to.deep.equal({ big: true });
  });
});
