import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { derivedFunctionId } from '../../gateway/src/cluster/resource.ts';
import { installFixtureProject, PACKAGE_FIXTURES, type FixtureProject } from '../helpers/fixture-project.ts';
import { startMongoServer, type MongoTestServer } from '../helpers/mongo-server.ts';
import { expectSignedPut, expectZodAnswers, S3_KEY, ZOD_INVALID, ZOD_VALID } from '../helpers/real-packages.ts';
import { getCluster, makeKubectl, uniqueName, type ClusterAccess } from '../operator/harness.ts';
import { NODE, ROOT, PLATFORM_IMAGE, RUNTIME_IMAGE, E2E_TAG, buildPlatformImage, buildRuntimeImage, installPlatform, run, startRelay, waitFor, type InstalledPlatform } from './helpers.ts';

// Issue 30 in cluster mode, on the test cluster: the three real npm packages of
// test/cli/real-packages.int.test.ts (zod 4, the mongodb driver, @aws-sdk/client-s3, pinned by
// their lockfiles and installed with npm ci) created through the real CLI against the chart's
// gateway, from the fixture's folder as a user does. Their bundles (1-2 MiB with their maps) go as
// code references: uploaded to the gateway, the Function carrying spec.codeRef, the pod fetching
// the code by digest. The mongodb driver reaches a second MongoDB stand-in on the host (behind a
// relay on the node's bridge address, as the platform's own) through the gateway's egress proxy,
// refused until `fnhost policy:add` allows that address and port for the function.


describe('fnhost on Kubernetes: real packages from npm created through the CLI (issue 30)', function () {
  this.timeout(600_000);
  let cluster: ClusterAccess;
  let kubectl: ReturnType<typeof makeKubectl>;
  let platform: InstalledPlatform | undefined;
  let mongo: MongoTestServer | undefined;
  let relay: Awaited<ReturnType<typeof startRelay>> | undefined;
  const projects: Partial<Record<keyof typeof PACKAGE_FIXTURES, FixtureProject>> = {};
  let ns: string;
  let tmp: string;
  let gatewayUrl: string;
  let token: string;

  const cli = (args: string[], project?: FixtureProject) =>
    run(NODE, [`${ROOT}cli/bin/fnhost.js`, ...args, '--url', gatewayUrl, '--token', token, '--namespace', ns], {
      env: { HOME: tmp, XDG_CONFIG_HOME: join(tmp, 'config'), FNHOST_URL: undefined, FNHOST_TOKEN: undefined, FNHOST_NAMESPACE: undefined, NO_COLOR: '1' },
      timeoutMs: 240_000,
      cwd: project?.dir ?? tmp,
    });
  const invoke = async (name: string, path: string, init: RequestInit = {}) => {
    const r = await fetch(`${gatewayUrl}/invoke/${derivedFunctionId(ns, name)}${path}`, { ...init, signal: AbortSignal.timeout(30_000) });
    const text = await r.text();
    let body: any = text;
    try {
      body = JSON.parse(text);
    } catch {
      // not JSON
    }
    return { status: r.status, body };
  };
  /** Calls until the function's pod answers (the gateway says 503 while none is ready). */
  const served = (name: string, path: string, init: RequestInit = {}) =>
    waitFor(`${name} served`, async () => {
      const r = await invoke(name, path, init);
      return r.status === 503 || r.status === 502 ? null : r;
    }, 300_000, 1000);
  const create = async (name: string, project: FixtureProject, file: string, flags: string[] = []) => {
    const created = await cli(['function:create', name, '--file', file, ...flags, '--output', 'json'], project);
    expect(created.code, created.stderr).to.equal(0);
    const fn = JSON.parse((await kubectl(['get', 'fn', name, '-n', ns, '-o', 'json'])).stdout) as { spec: { code?: string; codeRef?: { digest: string; size: number } } };
    // Over the inline size: a reference on the Function, no code in it (nor in etcd's ConfigMap).
    expect(fn.spec.codeRef?.digest, JSON.stringify(fn.spec).slice(0, 300)).to.match(/^sha256:[0-9a-f]{64}$/);
    expect(fn.spec.codeRef!.size).to.be.greaterThan(256 * 1024);
    expect(fn.spec.code ?? '').to.equal('');
  };
  const lastError = async (name: string) => {
    const logs = await cli(['function:logs', name, '--limit', '1', '--output', 'json']);
    return logs.code === 0 ? String((JSON.parse(logs.stdout) as { logs: { error_message?: string }[] }).logs[0]?.error_message ?? '') : logs.stderr;
  };

  before(async function () {
    this.timeout(1_800_000);
    cluster = await getCluster();
    kubectl = makeKubectl(cluster);
    tmp = await mkdtemp(join(tmpdir(), 'fnhost-e2e-packages-'));
    const suffix = uniqueName('x').slice(2);
    ns = `e2e-packages-${suffix}`;
    const [zod, mongodb, s3] = await Promise.all([
      installFixtureProject(PACKAGE_FIXTURES.zod),
      installFixtureProject(PACKAGE_FIXTURES.mongodb),
      installFixtureProject(PACKAGE_FIXTURES.s3),
      buildPlatformImage(PLATFORM_IMAGE),
      buildRuntimeImage(RUNTIME_IMAGE),
    ]);
    Object.assign(projects, { zod, mongodb, s3 });
    platform = await installPlatform({ cluster, kubectl, release: 'e2e-packages', relNs: `fnhost-e2e-packages-${suffix}`, ns, tag: E2E_TAG, dbName: `fnhost_e2e_packages_${Date.now()}`, tmp });
    ({ gatewayUrl, token } = platform);
    // The handler's own database: a second stand-in, reached by pods at the node's bridge address.
    mongo = await startMongoServer({ useEnv: false });
    relay = await startRelay(cluster.hostIp ?? '10.244.0.1', mongo.port!);
  });

  after(async function () {
    this.timeout(300_000);
    await platform?.remove();
    await relay?.close();
    await mongo?.stop();
    for (const project of Object.values(projects)) project?.remove();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  it('zod 4: created as a code reference; a valid body is answered, an invalid one gets 400 with zod’s issues', async () => {
    await create('orders-zod', projects.zod!, 'src/handler.ts');
    const post = (body: unknown) => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expectZodAnswers(await served('orders-zod', '/', post(ZOD_VALID)), await invoke('orders-zod', '/', post(ZOD_INVALID)));
  });

  it('mongodb: the driver reaches a MongoDB on the host through the gateway’s egress proxy once a policy allows its address and port', async () => {
    const host = cluster.hostIp ?? '10.244.0.1';
    const url = `mongodb://${host}:${relay!.port}/?directConnection=true&serverSelectionTimeoutMS=4000`;
    await create('visits-mongodb', projects.mongodb!, 'src/handler.js', ['--env', `MONGODB_URL=${url}`]);
    // The node's addresses are protected by default: the driver's connection is refused, naming the rule.
    const refused = await served('visits-mongodb', '/?name=ada');
    expect(refused.status, JSON.stringify(refused.body)).to.equal(500);
    expect(await waitFor('the refusal in the log', async () => (/blocked by network policy/.test(await lastError('visits-mongodb')) ? true : null), 60_000, 1000)).to.equal(true);
    const allowed = await cli(['policy:add', 'allow', `${host}:${relay!.port}`, '--function', 'visits-mongodb']);
    expect(allowed.code, allowed.stderr).to.equal(0);
    const first = await waitFor('a visit counted once the policy allows the address', async () => {
      const r = await invoke('visits-mongodb', '/?name=ada');
      return r.status === 200 ? r : null;
    }, 120_000, 1000);
    expect(first.body).to.include({ name: 'ada', count: 1, ping: 1 });
    const second = await invoke('visits-mongodb', '/?name=ada');
    expect(second.body).to.include({ name: 'ada', count: 2 });
    // The connections came from a gateway pod (the egress proxy), never from the function's pod.
    const pods = JSON.parse((await kubectl(['get', 'pods', '-n', ns, '-l', 'fnhost.dev/function=visits-mongodb,fnhost.dev/role=runtime', '-o', 'json'])).stdout) as { items: { status: { podIP: string } }[] };
    expect(relay!.peers.length).to.be.greaterThan(0);
    for (const pod of pods.items) expect(relay!.peers).to.not.include(pod.status.podIP);
  });

  it('@aws-sdk/client-s3: a PutObject request signed with SigV4 in the pod, without network; the signature checks out', async () => {
    await create('s3-sign', projects.s3!, 'src/handler.js');
    expectSignedPut(await served('s3-sign', `/?key=${encodeURIComponent(S3_KEY)}`));
  });
});
