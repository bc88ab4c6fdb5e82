import { expect } from 'chai';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { PLATFORM_IMAGE, RUNTIME_IMAGE, E2E_TAG, buildPlatformImage, buildRuntimeImage, run, startRelay, testClusterPlatformNetworkPolicy, waitFor } from '../e2e/helpers.ts';
import { startMongoServer, type MongoTestServer } from '../helpers/mongo-server.ts';
import { getCluster, makeKubectl, uniqueName, type ClusterAccess } from '../operator/harness.ts';
import { ROOT, createScenarioFunctions, definePanelScenarios, ensurePanelPrerequisites, type PanelGateway } from './scenarios.ts';

// The admin panel's scenarios (scenarios.ts, the same steps as
// panel.int.test.ts) against a cluster-mode gateway on the test cluster: the
// platform installed by the Helm chart in a namespace of this test (its own
// release, watching only its own functions' namespace), policies stored in
// MongoDB (the wire-protocol stand-in on the host, relayed to the pods over
// the bridge address), functions created through the management API (which
// writes Function resources; the operator makes their pods), and the caller
// function's fetch going from its pod to a server of this test on the host
// (relayed on the bridge address), checked by the runtime in that pod against
// the gateway before each call. The browser reaches the gateway at its
// Service's ClusterIP, as the e2e suite's fetches do. Screenshots:
// test-output/admin/cluster-*.png.

// The e2e suite's image names: in one mocha run the images are built once (test/e2e/helpers.ts).

describe('admin panel in headless Chromium against a cluster-mode gateway (helm chart on the test cluster)', function () {
  this.timeout(600_000);
  let cluster: ClusterAccess;
  let kubectl: ReturnType<typeof makeKubectl>;
  let helm: string;
  let mongo: MongoTestServer;
  let mongoRelay: { port: number; close(): Promise<void> } | undefined;
  let targetRelay: { port: number; close(): Promise<void> } | undefined;
  let target: Server;
  let tmp: string;
  let relNs = '';
  let fnNs = '';
  let hostIp = '';
  let gw: PanelGateway;
  let ids: Record<string, string> = {};
  const release = 'admin-panel';
  const dbName = `fnhost_admin_${Date.now()}`;
  const timings: string[] = [];
  const timed = async <T>(what: string, step: () => Promise<T>): Promise<T> => {
    const started = Date.now();
    try {
      return await step();
    } finally {
      timings.push(`${what} ${((Date.now() - started) / 1000).toFixed(1)} s`);
    }
  };

  const helmRun = (args: string[], timeoutMs = 600_000) => run(helm, args, { env: { KUBECONFIG: cluster.kubeconfig }, timeoutMs });
  const getJson = async (args: string[]) => {
    const r = await kubectl([...args, '-o', 'json']);
    if (r.code !== 0) throw new Error(r.stderr);
    return JSON.parse(r.stdout);
  };

  before(async function () {
    this.timeout(1_800_000);
    ensurePanelPrerequisites(); // the panel's build goes into the platform image
    cluster = await getCluster();
    kubectl = makeKubectl(cluster);
    helm = (JSON.parse((await run(`${ROOT}test/cluster/env.sh`, ['--json'])).stdout) as { helm: string }).helm;
    hostIp = cluster.hostIp ?? '10.244.0.1';
    tmp = await mkdtemp(join(tmpdir(), 'fnhost-admin-cluster-'));
    const suffix = uniqueName('x').slice(2);
    relNs = `fnhost-admin-${suffix}`;
    fnNs = `admin-fn-${suffix}`;

    const images = timed('images', () => Promise.all([buildPlatformImage(PLATFORM_IMAGE), buildRuntimeImage(RUNTIME_IMAGE)]));
    mongo = await startMongoServer({ useEnv: false });
    mongoRelay = await startRelay(hostIp, mongo.port!);
    // What the caller function fetches: a server on the host's loopback, reached from its pod through a relay on the bridge address.
    target = createServer((req, res) => res.end('target says hi'));
    await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
    targetRelay = await startRelay(hostIp, (target.address() as AddressInfo).port);
    expect((await kubectl(['create', 'namespace', fnNs])).code).to.equal(0);
    await images;

    const valuesFile = join(tmp, 'values.json');
    await writeFile(
      valuesFile,
      JSON.stringify({
        image: { repository: 'localhost/fnhost-platform', tag: E2E_TAG, pullPolicy: 'Never' },
        runtimeImage: { repository: 'localhost/fnhost-runtime', tag: E2E_TAG, pullPolicy: 'Never' },
        mongodb: { url: `mongodb://${hostIp}:${mongoRelay.port}/${dbName}` },
        // Two gateways behind the Service: a panel session (kept in MongoDB) works on either.
        gateway: {
          replicas: 2,
          defaultNamespace: fnNs,
          // A function's first call waits for its pod (image start on a loaded 2-core machine).
          holdTimeoutSeconds: 240,
          statusIntervalSeconds: 2,
          preStopSleepSeconds: 0,
          resources: { requests: { cpu: '50m', memory: '128Mi' }, limits: { memory: '512Mi' } },
        },
        operator: { resources: { requests: { cpu: '20m', memory: '96Mi' }, limits: { memory: '512Mi' } }, functionCpuRequest: '10m' },
        // Only this test's namespace: no ClusterRoles, and no other suite's Functions touched.
        functions: { watchNamespace: fnNs },
        // The scenarios' target server is on the node's bridge address, which the policy tests
        // allow and deny by rule: so it is not listed among the platform's own ranges here.
        networkPolicy: { platformCIDRs: [] },
        platformNetworkPolicy: testClusterPlatformNetworkPolicy(hostIp, mongoRelay.port),
      }),
    );
    const installed = await timed('helm install', () => helmRun(['install', release, `${ROOT}charts/fnhost`, '-n', relNs, '--create-namespace', '-f', valuesFile, '--wait', '--timeout', '8m']));
    expect(installed.code, installed.stderr + installed.stdout).to.equal(0);
    const svc = await getJson(['get', 'svc', `${release}-fnhost-gateway`, '-n', relNs]);
    const secret = await getJson(['get', 'secret', `${release}-fnhost-admin`, '-n', relNs]);
    // The panel is on the Service's admin port: an origin apart from /invoke's.
    const adminPort = (svc.spec.ports as Array<{ name: string; port: number }>).find((p) => p.name === 'admin')?.port;
    expect(adminPort, 'the admin port of the gateway Service').to.be.a('number');
    gw = { url: `http://${svc.spec.clusterIP}:8080`, adminUrl: `http://${svc.spec.clusterIP}:${adminPort}`, token: Buffer.from(secret.data.token, 'base64').toString('utf8') };
    ids = await timed('functions created and first calls', () => createScenarioFunctions(gw, `http://${hostIp}:${targetRelay!.port}/`));
  });

  /** Each serving gateway pod (two behind the Service), called directly. */
  const gatewayReplicas = async () => {
    const pods = (await getJson(['get', 'pods', '-n', relNs, '-l', 'app.kubernetes.io/component=gateway'])).items as Array<{ metadata: { deletionTimestamp?: string }; status: { phase?: string; podIP?: string } }>;
    const urls = pods.filter((p) => p.metadata.deletionTimestamp === undefined && p.status.phase === 'Running' && p.status.podIP).map((p) => `http://${p.status.podIP}:8080`);
    expect(urls, 'the serving gateway pods').to.have.length(2);
    return urls;
  };

  definePanelScenarios(() => ({ gw, ids, targetHost: hostIp }), { shotPrefix: 'cluster-', waitMs: 90_000, gatewayReplicas });

  it('the functions are Function resources of the namespace, and the panel’s policy changes are stored in MongoDB', async () => {
    const fns = await getJson(['get', 'fn', '-n', fnNs]);
    expect(fns.items.map((f: any) => f.metadata.name).sort()).to.deep.equal(['caller', 'pager', 'toggle']);
    expect(fns.items.find((f: any) => f.metadata.name === 'caller').status.functionId).to.equal(ids.caller);
    const client = new MongoClient(mongo.url);
    try {
      await client.connect();
      const changes = await client.db(dbName).collection('policy_changes').find({ scope: ids.caller }).sort({ seq: 1 }).toArray();
      expect(changes.map((c) => [c.actor.replace(/[0-9a-f]{8}/, 'X'), c.after?.deny ?? null])).to.deep.equal([
        ['admin (panel session X)', [hostIp]],
        ['admin (panel session X)', []],
      ]);
      const stored = await client.db(dbName).collection('policies').findOne({ _id: ids.caller as any });
      expect(stored?.policy.deny).to.deep.equal([]);
    } finally {
      await client.close();
    }
  });

  after(async function () {
    this.timeout(300_000);
    if (kubectl !== undefined) {
      await timed('helm uninstall', async () => {
        if (helm !== undefined && relNs) await helmRun(['uninstall', release, '-n', relNs, '--wait', '--timeout', '3m']);
      });
      for (const ns of [fnNs, relNs]) if (ns) await kubectl(['delete', 'namespace', ns, '--wait=false']);
      // Without the operator nobody removes the finalizers: take them off (again, should another
      // suite's operator watching every namespace put one back) until the namespace is gone.
      if (fnNs) {
        await waitFor(`namespace ${fnNs} gone`, async () => {
          const list = await kubectl(['get', 'fn', '-n', fnNs, '-o', 'name']);
          for (const name of list.stdout.split('\n').filter(Boolean)) await kubectl(['patch', name, '-n', fnNs, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
          return (await kubectl(['get', 'namespace', fnNs])).code !== 0;
        }, 120_000, 2000).catch((err: Error) => console.error(`      cleanup: ${err.message}`));
      }
    }
    await targetRelay?.close();
    await mongoRelay?.close();
    target?.close();
    await mongo?.stop();
    if (tmp) await rm(tmp, { recursive: true, force: true });
    if (timings.length > 0) console.log(`      timings: ${timings.join(', ')}`);
  });
});
