import { expect } from 'chai';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { derivedFunctionId } from '../../gateway/src/cluster/resource.ts';
import { installFixtureProject, type FixtureProject } from '../helpers/fixture-project.ts';
import { startMongoServer, type MongoTestServer } from '../helpers/mongo-server.ts';
import { getCluster, makeKubectl, uniqueName, type ClusterAccess } from '../operator/harness.ts';
import { NODE, ROOT, buildPlatformImage, buildRuntimeImage, run, startRelay, testClusterPlatformNetworkPolicy, waitFor } from './helpers.ts';

// Issue 19 in cluster mode, on the test cluster, the way a user runs it: the chart installed with
// helm, the fixture project (real registry packages, a TypeScript handler) created with the CLI
// and applied with kubectl from `fnhost bundle`. The handler answers from its pod; a thrown error's
// stack, mapped in the pod (whose module is a ConfigMap file behind a symlink), names
// src/handler.ts in function:logs; a native addon and a missing package are refused at create; a
// Function over 256 KiB is refused by client-side kubectl apply (its annotation) and taken by
// --server-side, as docs/cluster-mode.md says.

const PLATFORM_IMAGE = 'localhost/fnhost-platform:e2e';
const RUNTIME_IMAGE = 'localhost/fnhost-runtime:e2e';

describe('fnhost on Kubernetes: handlers that import packages (issue 19)', function () {
  this.timeout(600_000);
  let cluster: ClusterAccess;
  let kubectl: ReturnType<typeof makeKubectl>;
  let helm: string;
  let mongo: MongoTestServer;
  let relay: { port: number; close(): Promise<void> };
  let project: FixtureProject;
  let relNs: string;
  let ns: string;
  let tmp: string;
  let gatewayUrl: string;
  let token: string;
  const release = 'e2e-bundle';
  const dbName = `fnhost_e2e_bundle_${Date.now()}`;

  const helmRun = (args: string[], timeoutMs = 600_000) => run(helm, args, { env: { KUBECONFIG: cluster.kubeconfig }, timeoutMs });
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
    helm = (JSON.parse((await run(`${ROOT}test/cluster/env.sh`, ['--json'])).stdout) as { helm: string }).helm;
    tmp = await mkdtemp(join(tmpdir(), 'fnhost-e2e-bundle-'));
    const suffix = uniqueName('x').slice(2);
    relNs = `fnhost-e2e-bundle-${suffix}`;
    ns = `e2e-bundle-${suffix}`;
    [project] = await Promise.all([installFixtureProject(), buildPlatformImage(PLATFORM_IMAGE), buildRuntimeImage(RUNTIME_IMAGE)]);
    mongo = await startMongoServer({ useEnv: false });
    relay = await startRelay(cluster.hostIp ?? '10.244.0.1', mongo.port!);
    expect((await kubectl(['create', 'namespace', ns])).code).to.equal(0);
    const valuesFile = join(tmp, 'values.json');
    await writeFile(
      valuesFile,
      JSON.stringify({
        image: { repository: 'localhost/fnhost-platform', tag: 'e2e', pullPolicy: 'Never' },
        runtimeImage: { repository: 'localhost/fnhost-runtime', tag: 'e2e', pullPolicy: 'Never' },
        mongodb: { url: `mongodb://${cluster.hostIp ?? '10.244.0.1'}:${relay.port}/${dbName}` },
        gateway: { replicas: 1, defaultNamespace: ns, resources: { requests: { cpu: '50m', memory: '128Mi' }, limits: { memory: '512Mi' } } },
        operator: { resources: { requests: { cpu: '20m', memory: '96Mi' }, limits: { memory: '512Mi' } }, functionCpuRequest: '10m' },
        networkPolicy: { platformCIDRs: ['10.244.0.0/24', '10.96.0.0/16'] },
        platformNetworkPolicy: testClusterPlatformNetworkPolicy(cluster.hostIp ?? '10.244.0.1', relay.port),
      }),
    );
    const installed = await helmRun(['install', release, `${ROOT}charts/fnhost`, '-n', relNs, '--create-namespace', '-f', valuesFile, '--wait', '--timeout', '8m']);
    expect(installed.code, installed.stderr + installed.stdout).to.equal(0);
    const svc = JSON.parse((await kubectl(['get', 'svc', `${release}-fnhost-gateway`, '-n', relNs, '-o', 'json'])).stdout);
    gatewayUrl = `http://${svc.spec.clusterIP}:8080`;
    const secret = JSON.parse((await kubectl(['get', 'secret', `${release}-fnhost-admin`, '-n', relNs, '-o', 'json'])).stdout);
    token = Buffer.from(secret.data.token, 'base64').toString('utf8');
  });

  after(async function () {
    this.timeout(300_000);
    if (kubectl !== undefined) {
      if (helm !== undefined && relNs) await helmRun(['uninstall', release, '-n', relNs, '--wait', '--timeout', '2m']);
      // Without the operator nobody removes the finalizers: take them off so the namespace can go.
      if (ns) {
        const list = await kubectl(['get', 'fn', '-n', ns, '-o', 'name']);
        for (const name of list.stdout.split('\n').filter(Boolean)) await kubectl(['patch', name, '-n', ns, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
      }
      for (const name of [ns, relNs]) if (name) await kubectl(['delete', 'namespace', name, '--wait=false']);
    }
    await relay?.close();
    await mongo?.stop();
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
