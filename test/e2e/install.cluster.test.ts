import { expect } from 'chai';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { derivedFunctionId } from '../../gateway/src/cluster/resource.ts';
import { startMongoServer, type MongoTestServer } from '../helpers/mongo-server.ts';
import { getCluster, makeKubectl, uniqueName, type ClusterAccess } from '../operator/harness.ts';
import { NODE, ROOT, buildPlatformImage, buildRuntimeImage, run, startRelay, testClusterPlatformNetworkPolicy, waitFor } from './helpers.ts';

// Issue 22, "install and uninstall hold", on the test cluster, as a platform
// engineer runs it:
// - mongodb.internal with persistence on a cluster without a default
//   StorageClass is refused at once, naming it (not a Helm timeout);
// - an install with the evaluation MongoDB without persistence (emptyDir)
//   comes up; the platform image built as docs/install.md says serves the
//   panel; /metrics wants its token; `helm test` passes;
// - helm uninstall with Functions present removes them first: no function
//   pod ever runs without its NetworkPolicy (watched throughout), and no pod,
//   CronJob or Function is left;
// - a reinstall keeps the admin token: the CLI's saved login still works.
// The test cluster pulls nothing, so the evaluation MongoDB's image here is a
// stand-in built on the node base: a TCP relay (in the StatefulSet's pod, at
// the chart's Service and port) to the test's wire-protocol server on the host.

const PLATFORM_IMAGE = 'localhost/fnhost-platform:install';
const RUNTIME_IMAGE = 'localhost/fnhost-runtime:install';
const HELLO = 'export default (req, res) => res.json({ hello: "install" })';

describe('install and uninstall on the test cluster (helm, evaluation MongoDB, helm test, hook, reinstall)', function () {
  this.timeout(600_000);
  let cluster: ClusterAccess;
  let kubectl: ReturnType<typeof makeKubectl>;
  let helm: string;
  let mongo: MongoTestServer;
  let relay: { port: number; close(): Promise<void> };
  let relNs: string;
  let fnNs: string;
  let tmp: string;
  let valuesFile: string;
  let gatewayUrl: string;
  let token: string;
  const release = 'inst';
  const hostIp = () => cluster.hostIp ?? '10.244.0.1';
  const nodePort = 30000 + Math.floor(Math.random() * 2700);
  const stableUrl = () => `http://${hostIp()}:${nodePort}`;

  const helmRun = (args: string[], timeoutMs = 600_000) => run(helm, args, { env: { KUBECONFIG: cluster.kubeconfig }, timeoutMs });
  // The CLI as a user has it after `fnhost login`: no --url, no --token, the saved login only.
  const cliEnv = () => ({ HOME: tmp, XDG_CONFIG_HOME: join(tmp, 'config'), FNHOST_URL: undefined, FNHOST_TOKEN: undefined, FNHOST_NAMESPACE: undefined, KUBECONFIG: join(tmp, 'no-kubeconfig'), NO_COLOR: '1' });
  const cli = (args: string[], input?: string) => run(NODE, [`${ROOT}cli/bin/fnhost.js`, ...args], { env: cliEnv(), timeoutMs: 60_000, cwd: tmp, input });
  const getJson = async (args: string[]) => {
    const r = await kubectl([...args, '-o', 'json']);
    if (r.code !== 0) throw new Error(r.stderr);
    return JSON.parse(r.stdout);
  };
  const readGateway = async () => {
    const svc = await getJson(['get', 'svc', `${release}-fnhost-gateway`, '-n', relNs]);
    gatewayUrl = `http://${svc.spec.clusterIP}:8080`;
    const secret = await getJson(['get', 'secret', `${release}-fnhost-admin`, '-n', relNs]);
    return Buffer.from(secret.data.token, 'base64').toString('utf8');
  };
  const install = () => helmRun(['install', release, `${ROOT}charts/fnhost`, '-n', relNs, '-f', valuesFile, '--wait', '--timeout', '8m']);

  /** The evaluation MongoDB's stand-in image: node relaying 27017 to the test's server on the host. */
  async function buildMongoStandIn(target: { host: string; port: number }): Promise<string> {
    const dir = join(tmp, 'mongo-standin');
    await mkdir(dir, { recursive: true });
    await writeFile(
      join(dir, 'relay.js'),
      `const net = require('node:net');
net.createServer((inbound) => {
  const outbound = net.connect(${target.port}, ${JSON.stringify(target.host)});
  const drop = () => { inbound.destroy(); outbound.destroy(); };
  inbound.on('error', drop).on('close', drop); outbound.on('error', drop).on('close', drop);
  inbound.pipe(outbound); outbound.pipe(inbound);
}).listen(27017, '0.0.0.0');
process.on('SIGTERM', () => process.exit(0));
`,
    );
    // The chart passes mongod's arguments (--bind_ip_all); node gives them to the script, which ignores them.
    await writeFile(join(dir, 'Dockerfile'), 'ARG BASE=node:24-slim\nFROM ${BASE}\nCOPY relay.js /relay.js\nENTRYPOINT ["node", "/relay.js"]\n');
    const name = `localhost/fnhost-mongo-standin:${uniqueName('m').slice(2)}`;
    const { buildImage } = (await import(new URL('../cluster/cluster.ts', import.meta.url).href)) as { buildImage(dir: string, name: string): Promise<void> };
    await buildImage(dir, name);
    return name;
  }

  before(async function () {
    this.timeout(1_800_000);
    cluster = await getCluster();
    kubectl = makeKubectl(cluster);
    helm = (JSON.parse((await run(`${ROOT}test/cluster/env.sh`, ['--json'])).stdout) as { helm: string }).helm;
    tmp = await mkdtemp(join(tmpdir(), 'fnhost-install-'));
    const suffix = uniqueName('x').slice(2);
    relNs = `fnhost-inst-${suffix}`;
    fnNs = `inst-fn-${suffix}`;
    mongo = await startMongoServer({ useEnv: false });
    relay = await startRelay(hostIp(), mongo.port!);
    const [standIn] = await Promise.all([buildMongoStandIn({ host: hostIp(), port: relay.port }), buildPlatformImage(PLATFORM_IMAGE), buildRuntimeImage(RUNTIME_IMAGE)]);
    for (const ns of [relNs, fnNs]) expect((await kubectl(['create', 'namespace', ns])).code).to.equal(0);
    const [repository, tag] = standIn.split(':') as [string, string];
    const policy = testClusterPlatformNetworkPolicy(hostIp(), relay.port);
    valuesFile = join(tmp, 'values.json');
    await writeFile(
      valuesFile,
      JSON.stringify({
        image: { repository: 'localhost/fnhost-platform', tag: 'install', pullPolicy: 'Never' },
        runtimeImage: { repository: 'localhost/fnhost-runtime', tag: 'install', pullPolicy: 'Never' },
        mongodb: { internal: { enabled: true, persistence: { enabled: false }, image: { repository, tag, pullPolicy: 'Never' }, storage: '256Mi', resources: { requests: { cpu: '10m', memory: '64Mi' }, limits: { cpu: '500m', memory: '256Mi' } } } },
        gateway: { replicas: 1, defaultNamespace: fnNs, preStopSleepSeconds: 1, service: { type: 'NodePort', nodePort }, resources: { requests: { cpu: '50m', memory: '128Mi' }, limits: { memory: '512Mi' } } },
        operator: { resources: { requests: { cpu: '20m', memory: '96Mi' }, limits: { memory: '512Mi' } }, functionCpuRequest: '10m' },
        metrics: { auth: { enabled: true } },
        networkPolicy: { platformCIDRs: ['10.244.0.0/24', '10.96.0.0/16'] },
        platformNetworkPolicy: { apiServer: policy.apiServer, dns: policy.dns },
      }),
    );
  });

  after(async function () {
    this.timeout(300_000);
    if (kubectl !== undefined && relNs) {
      // Whatever a failed test left: finalizers off (no operator may be left to release them).
      const list = await kubectl(['get', 'fn', '-n', fnNs, '-o', 'name']);
      for (const name of list.stdout.split('\n').filter(Boolean)) await kubectl(['patch', name, '-n', fnNs, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
      if (helm !== undefined) await helmRun(['uninstall', release, '-n', relNs, '--wait', '--timeout', '2m', '--no-hooks']);
      for (const ns of [fnNs, relNs]) await kubectl(['delete', 'namespace', ns, '--wait=false']);
      await kubectl(['delete', 'clusterrole,clusterrolebinding', `${release}-fnhost-uninstall`, '--ignore-not-found']);
    }
    await relay?.close();
    await mongo?.stop();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  it('refuses mongodb.internal with persistence on a cluster without a default StorageClass, naming it, at once', async () => {
    const classes = await getJson(['get', 'storageclass']);
    expect(classes.items, 'the test cluster has no StorageClass').to.deep.equal([]);
    const r = await helmRun(['install', release, `${ROOT}charts/fnhost`, '-n', relNs, '-f', valuesFile, '--set', 'mongodb.internal.persistence.enabled=true', '--dry-run=server'], 120_000);
    expect(r.code).to.not.equal(0);
    expect(r.stderr).to.contain('the cluster has no default StorageClass (the cluster has none; kubectl get storageclass)');
    expect(r.stderr).to.contain('mongodb.internal.persistence.enabled=false');
    const named = await helmRun(['install', release, `${ROOT}charts/fnhost`, '-n', relNs, '-f', valuesFile, '--set', 'mongodb.internal.persistence.enabled=true', '--set', 'mongodb.internal.storageClassName=fast', '--dry-run=server'], 120_000);
    expect(named.stderr).to.contain('mongodb.internal.storageClassName=fast: no such StorageClass');
  });

  it('installs with the evaluation MongoDB on an emptyDir (no claim), and the platform reaches it', async () => {
    const installed = await install();
    expect(installed.code, installed.stderr + installed.stdout).to.equal(0);
    expect(installed.stdout).to.contain('keeps its data in an emptyDir');
    token = await readGateway();
    const sts = await getJson(['get', 'statefulset', `${release}-fnhost-mongodb`, '-n', relNs]);
    expect(sts.spec.volumeClaimTemplates ?? []).to.deep.equal([]);
    expect(sts.spec.template.spec.volumes.find((v: { name: string }) => v.name === 'data').emptyDir).to.deep.equal({ sizeLimit: '256Mi' });
    expect((await getJson(['get', 'pvc', '-n', relNs])).items).to.deep.equal([]);
    expect((await fetch(`${gatewayUrl}/readyz`)).status).to.equal(200);
  });

  it('serves the admin panel from the image built as docs/install.md says, on the admin port only', async () => {
    const adminUrl = gatewayUrl.replace(/:8080$/, ':8081');
    const panel = await fetch(`${adminUrl}/admin/`);
    expect(panel.status).to.equal(200);
    expect(panel.headers.get('content-type')).to.contain('text/html');
    expect(await panel.text()).to.contain('<div id="root"');
  });

  it('guards /metrics with the metrics token (gateway and operator), and the pods carry scrape annotations', async () => {
    const secret = await getJson(['get', 'secret', `${release}-fnhost-metrics`, '-n', relNs]);
    const metricsToken = Buffer.from(secret.data.token, 'base64').toString('utf8');
    expect((await fetch(`${gatewayUrl}/metrics`)).status).to.equal(401);
    const scraped = await fetch(`${gatewayUrl}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } });
    expect(scraped.status).to.equal(200);
    expect(await scraped.text()).to.contain('fnhost_invocations_total');
    const opSvc = await getJson(['get', 'svc', `${release}-fnhost-operator-metrics`, '-n', relNs]);
    const opUrl = `http://${opSvc.spec.clusterIP}:8081/metrics`;
    // The operator's pod leaves the Service while it takes the Lease and lists (ready = synced once leading): a CI run met that window.
    const refused = await waitFor('the operator metrics Service answering', async () => (await fetch(opUrl).catch(() => null)) ?? null, 120_000, 500);
    expect(refused.status).to.equal(401);
    expect((await fetch(opUrl, { headers: { authorization: `Bearer ${metricsToken}` } })).status).to.equal(200);
    const pods = await getJson(['get', 'pods', '-n', relNs, '-l', `app.kubernetes.io/instance=${release}`]);
    for (const p of pods.items.filter((x: any) => ['gateway', 'operator'].includes(x.metadata.labels['app.kubernetes.io/component']))) {
      expect(p.metadata.annotations, p.metadata.name).to.include({ 'prometheus.io/scrape': 'true', 'prometheus.io/path': '/metrics' });
    }
  });

  it('helm test creates, invokes end to end and deletes a function, from a non-root pod with limits', async () => {
    const r = await helmRun(['test', release, '-n', relNs, '--logs', '--timeout', '5m']);
    expect(r.code, r.stderr + r.stdout).to.equal(0);
    expect(r.stdout).to.match(/Phase:\s+Succeeded/);
    expect(r.stdout).to.contain('selftest: function invoked').and.to.contain('selftest: passed');
    const pod = await getJson(['get', 'pod', `${release}-fnhost-test`, '-n', relNs]);
    expect(pod.spec.securityContext.runAsNonRoot).to.equal(true);
    expect(pod.spec.containers[0].resources.limits).to.have.keys('cpu', 'memory');
    expect((await getJson(['get', 'fn', '-n', fnNs])).items).to.deep.equal([]);
  });

  it('helm uninstall with Functions present removes them first: no function pod without its NetworkPolicy, nothing left', async () => {
    // The Service's NodePort on the node's address: the same URL after a reinstall, as an Ingress host would be.
    const login = await cli(['login', '--url', stableUrl(), '--namespace', fnNs], token + '\n');
    expect(login.code, login.stderr).to.equal(0);
    await writeFile(join(tmp, 'web.js'), HELLO);
    const created = await cli(['function:create', 'web', '--file', 'web.js']);
    expect(created.code, created.stderr).to.equal(0);
    const scheduled = await kubectl(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'fnhost.dev/v1alpha1', kind: 'Function', metadata: { name: 'tick', namespace: fnNs }, spec: { code: HELLO, schedule: { cron: '* * * * *' } } }));
    expect(scheduled.code, scheduled.stderr).to.equal(0);
    await waitFor('both function pods running, a CronJob and the NetworkPolicy', async () => {
      const all = await getJson(['get', 'pods,cronjobs,networkpolicies', '-n', fnNs]);
      const running = all.items.filter((o: any) => o.kind === 'Pod' && o.status.phase === 'Running').length;
      const kinds = all.items.map((o: any) => o.kind);
      return running >= 2 && kinds.includes('CronJob') && kinds.includes('NetworkPolicy') ? true : null;
    }, 240_000, 1000);
    const call = await waitFor('web answering', async () => {
      const res = await fetch(`${gatewayUrl}/invoke/${derivedFunctionId(fnNs, 'web')}/`);
      return res.status === 200 ? res.json() : null;
    }, 60_000, 500);
    expect(call).to.deep.equal({ hello: 'install' });

    // Watched all through the uninstall: a function pod present while the namespace has no NetworkPolicy.
    const unguarded: string[] = [];
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        const r = await kubectl(['get', 'pods,networkpolicies', '-n', fnNs, '-o', 'json']);
        if (r.code === 0) {
          const items = JSON.parse(r.stdout).items as Array<{ kind: string; metadata: { name: string; labels?: Record<string, string> } }>;
          const pods = items.filter((o) => o.kind === 'Pod' && o.metadata.labels?.['app.kubernetes.io/managed-by'] === 'fnhost-operator');
          if (pods.length > 0 && !items.some((o) => o.kind === 'NetworkPolicy')) unguarded.push(pods.map((p) => p.metadata.name).join(','));
        }
        await new Promise((r) => setTimeout(r, 300));
      }
    })();
    const uninstalled = await helmRun(['uninstall', release, '-n', relNs, '--wait', '--timeout', '6m']);
    watching = false;
    await watcher;
    expect(uninstalled.code, uninstalled.stderr + uninstalled.stdout).to.equal(0);
    expect(unguarded, 'function pods seen without a NetworkPolicy').to.deep.equal([]);
    const left = await getJson(['get', 'functions,pods,cronjobs,jobs,deployments,networkpolicies', '-n', fnNs]);
    expect(left.items.map((o: any) => `${o.kind}/${o.metadata.name}`)).to.deep.equal([]);
    // The platform is gone, the admin token's Secret kept (helm.sh/resource-policy: keep).
    const platform = await kubectl(['get', 'deploy,statefulset,svc', '-n', relNs, '-l', `app.kubernetes.io/instance=${release}`, '-o', 'name']);
    expect(platform.stdout.trim()).to.equal('');
    expect((await kubectl(['get', 'secret', `${release}-fnhost-admin`, '-n', relNs])).code).to.equal(0);
  });

  it('a reinstall keeps the admin token: the saved CLI login still works', async () => {
    const again = await install();
    expect(again.code, again.stderr + again.stdout).to.equal(0);
    expect(await readGateway()).to.equal(token);
    // No new login: the one saved before the uninstall (URL, token, namespace).
    const listed = await waitFor('the saved login answered', async () => {
      const r = await cli(['function:list', '--output', 'json']);
      return r.code === 0 ? r : null;
    }, 60_000, 1000);
    expect(listed.stdout).not.to.contain('"web"');
  });
});
