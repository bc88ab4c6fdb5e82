import { expect } from 'chai';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { derivedFunctionId } from '../../gateway/src/cluster/resource.ts';
import { startMongoServer, type MongoTestServer } from '../helpers/mongo-server.ts';
import { getCluster, makeKubectl, uniqueName, type ClusterAccess } from '../operator/harness.ts';
import { NODE, ROOT, PLATFORM_IMAGE, RUNTIME_IMAGE, E2E_TAG, buildPlatformImage, buildRuntimeImage, run, startCountingServer, startRelay, testClusterPlatformNetworkPolicy, waitFor } from './helpers.ts';

// The "Done means", end to end on the test cluster, the way a user runs
// fnhost: images built from the Dockerfiles, the chart installed with helm
// (MongoDB: the test's wire-protocol server on the host, reached by the pods
// through the bridge address), Functions applied with kubectl and managed with
// the CLI, calls through the gateway's Service from the host and from a pod,
// a scheduled run from the CronJob, a timeout and an out-of-memory, helm
// upgrade and helm uninstall. One CronJob wait; function time limits of 2-5 s.

const HELLO = `export default async function handler(req, res) {
  res.json({ message: \`\${process.env.GREETING ?? 'Hello'}, \${req.params.name ?? 'world'}!\`, trigger: req.headers['x-fnhost-trigger'] ?? null });
}
`;

describe('fnhost on Kubernetes, end to end (helm chart on the test cluster)', function () {
  this.timeout(600_000);
  let cluster: ClusterAccess;
  let kubectl: ReturnType<typeof makeKubectl>;
  let helm: string;
  let mongo: MongoTestServer;
  let relay: { port: number; peers: string[]; close(): Promise<void> };
  let relNs: string;
  let nsA: string;
  let nsB: string;
  let tmp: string;
  let valuesFile: string;
  let gatewayUrl: string;
  let token: string;
  const release = 'e2e';
  const dbName = `fnhost_e2e_${Date.now()}`;

  const helmRun = (args: string[], timeoutMs = 600_000) => run(helm, args, { env: { KUBECONFIG: cluster.kubeconfig }, timeoutMs });
  const cli = (args: string[]) =>
    run(NODE, [`${ROOT}cli/bin/fnhost.js`, ...args, '--url', gatewayUrl, '--token', token], {
      env: { HOME: tmp, XDG_CONFIG_HOME: join(tmp, 'config'), FNHOST_URL: undefined, FNHOST_TOKEN: undefined, FNHOST_NAMESPACE: undefined, NO_COLOR: '1' },
      timeoutMs: 60_000,
      cwd: tmp,
    });
  const getJson = async (args: string[]) => {
    const r = await kubectl([...args, '-o', 'json']);
    if (r.code !== 0) throw new Error(r.stderr);
    return JSON.parse(r.stdout);
  };
  const applyFunction = async (ns: string, name: string, spec: Record<string, unknown>) => {
    const r = await kubectl(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'fnhost.dev/v1alpha1', kind: 'Function', metadata: { name, namespace: ns }, spec }));
    expect(r.code, r.stderr).to.equal(0);
  };
  const readyFunction = (ns: string, name: string, timeoutMs = 180_000) =>
    waitFor(`Function ${ns}/${name} Ready`, async () => {
      const r = await kubectl(['get', 'fn', name, '-n', ns, '-o', 'json']);
      if (r.code !== 0) return null;
      const fn = JSON.parse(r.stdout);
      const ready = (fn.status?.conditions ?? []).find((c: { type: string }) => c.type === 'Ready');
      return ready?.status === 'True' && ready.reason === 'Available' ? fn : null;
    }, timeoutMs, 1000);
  const invoke = (ns: string, name: string, path = '', init?: RequestInit) => fetch(`${gatewayUrl}/invoke/${derivedFunctionId(ns, name)}${path}`, init);
  const logsOf = async (ns: string, name: string, query = '') => {
    const r = await cli(['function:logs', name, '--namespace', ns, '--output', 'json', ...query.split(' ').filter(Boolean)]);
    expect(r.code, r.stderr).to.equal(0);
    return JSON.parse(r.stdout) as { logs: Array<Record<string, unknown>>; pagination: { totalCount: number } };
  };
  type Page = Awaited<ReturnType<typeof logsOf>>;
  // Two gateway replicas: a listing flushes the queue of the replica that answers it; a record
  // queued by the other one is written within its flush interval (50 ms). So wait for it.
  const logsWhen = (ns: string, name: string, query: string, ready: (page: Page) => boolean) =>
    waitFor(`logs of ${name}`, async () => {
      const page = await logsOf(ns, name, query);
      return ready(page) ? page : null;
    }, 30_000, 250);

  before(async function () {
    this.timeout(1_800_000);
    cluster = await getCluster();
    kubectl = makeKubectl(cluster);
    const env = JSON.parse((await run(`${ROOT}test/cluster/env.sh`, ['--json'])).stdout) as { helm: string };
    helm = env.helm;
    tmp = await mkdtemp(join(tmpdir(), 'fnhost-e2e-'));
    const suffix = uniqueName('x').slice(2);
    relNs = `fnhost-e2e-${suffix}`;
    nsA = `e2e-a-${suffix}`;
    nsB = `e2e-b-${suffix}`;
    // Built as a user would (in parallel: they are independent).
    await Promise.all([buildPlatformImage(PLATFORM_IMAGE), buildRuntimeImage(RUNTIME_IMAGE)]);
    mongo = await startMongoServer({ useEnv: false });
    relay = await startRelay(cluster.hostIp ?? '10.244.0.1', mongo.port!);
    // Stand-ins for hosts outside the cluster (the egress tests): addresses of the node's
    // loopback interface (this kernel has no dummy interfaces), removed in after().
    for (const host of Object.values(OUTSIDE)) {
      await run('ip', ['addr', 'del', `${host}/32`, 'dev', 'lo']);
      const added = await run('ip', ['addr', 'add', `${host}/32`, 'dev', 'lo']);
      expect(added.code, added.stderr).to.equal(0);
    }
    for (const ns of [nsA, nsB]) expect((await kubectl(['create', 'namespace', ns])).code).to.equal(0);
    valuesFile = join(tmp, 'values.json');
    await writeFile(
      valuesFile,
      JSON.stringify({
        image: { repository: 'localhost/fnhost-platform', tag: E2E_TAG, pullPolicy: 'Never' },
        runtimeImage: { repository: 'localhost/fnhost-runtime', tag: E2E_TAG, pullPolicy: 'Never' },
        mongodb: { url: `mongodb://${cluster.hostIp ?? '10.244.0.1'}:${relay.port}/${dbName}` },
        gateway: {
          replicas: 2,
          defaultNamespace: nsA,
          statusIntervalSeconds: 2,
          preStopSleepSeconds: 2,
          resources: { requests: { cpu: '50m', memory: '128Mi' }, limits: { memory: '512Mi' } },
        },
        operator: { resources: { requests: { cpu: '20m', memory: '96Mi' }, limits: { memory: '512Mi' } }, functionCpuRequest: '10m' },
        networkPolicy: { platformCIDRs: ['10.244.0.0/24', '10.96.0.0/16'] },
        platformNetworkPolicy: testClusterPlatformNetworkPolicy(cluster.hostIp ?? '10.244.0.1', relay.port),
      }),
    );
    const installed = await helmRun(['install', release, `${ROOT}charts/fnhost`, '-n', relNs, '--create-namespace', '-f', valuesFile, '--wait', '--timeout', '8m']);
    expect(installed.code, installed.stderr + installed.stdout).to.equal(0);
    expect(installed.stdout).to.contain('Log in with the CLI');
    const svc = await getJson(['get', 'svc', `${release}-fnhost-gateway`, '-n', relNs]);
    gatewayUrl = `http://${svc.spec.clusterIP}:8080`;
    const secret = await getJson(['get', 'secret', `${release}-fnhost-admin`, '-n', relNs]);
    token = Buffer.from(secret.data.token, 'base64').toString('utf8');
  });

  after(async function () {
    this.timeout(300_000);
    if (kubectl !== undefined) {
      // Without the operator nobody removes the finalizers: take them off so the namespaces can go.
      for (const ns of [nsA, nsB]) {
        if (!ns) continue;
        const list = await kubectl(['get', 'fn', '-n', ns, '-o', 'name']);
        for (const name of list.stdout.split('\n').filter(Boolean)) await kubectl(['patch', name, '-n', ns, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
      }
      if (helm !== undefined && relNs) await helmRun(['uninstall', release, '-n', relNs, '--wait', '--timeout', '2m']);
      for (const ns of [nsA, nsB, relNs]) if (ns) await kubectl(['delete', 'namespace', ns, '--wait=false']);
    }
    for (const server of Object.values(servers)) await server.close();
    for (const host of Object.values(OUTSIDE)) await run('ip', ['addr', 'del', `${host}/32`, 'dev', 'lo']);
    await relay?.close();
    await mongo?.stop();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  it('installs Ready: gateway and operator pods non-root with read-only root filesystems', async () => {
    const pods = await getJson(['get', 'pods', '-n', relNs, '-l', `app.kubernetes.io/instance=${release}`]);
    const components = pods.items.map((p: any) => p.metadata.labels['app.kubernetes.io/component']).sort();
    expect(components).to.deep.equal(['gateway', 'gateway', 'operator']);
    for (const p of pods.items) {
      expect(p.status.phase).to.equal('Running');
      expect(p.spec.securityContext.runAsNonRoot).to.equal(true);
      expect(p.spec.containers[0].securityContext.readOnlyRootFilesystem).to.equal(true);
    }
    const health = await fetch(`${gatewayUrl}/readyz`);
    expect(health.status).to.equal(200);
  });

  it('a Function applied with kubectl becomes a running pod, invoked through the gateway Service from the host and from another pod', async () => {
    await applyFunction(nsA, 'hello', { code: HELLO, routes: ['/hello/:name'], env: [{ name: 'GREETING', value: 'Hi' }], timeoutSeconds: 5, memoryMiB: 64 });
    const fn = await readyFunction(nsA, 'hello');
    expect(fn.status.functionId).to.equal(derivedFunctionId(nsA, 'hello'));
    const pods = await getJson(['get', 'pods', '-n', nsA, '-l', 'fnhost.dev/function=hello,fnhost.dev/role=runtime']);
    expect(pods.items.map((p: any) => p.status.phase)).to.deep.equal(['Running']);
    const fromHost = await waitFor('an answer through the gateway', async () => {
      const r = await invoke(nsA, 'hello', '/hello/ada');
      return r.status === 200 ? r.json() : null;
    }, 60_000, 500);
    expect(fromHost).to.deep.equal({ message: 'Hi, ada!', trigger: 'http' });

    // From a pod in another namespace, through the gateway's cluster DNS name.
    const url = `http://${release}-fnhost-gateway.${relNs}.svc.cluster.local:8080/invoke/${derivedFunctionId(nsA, 'hello')}/hello/pod`;
    const caller = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'caller', namespace: nsB },
      spec: {
        restartPolicy: 'Never',
        automountServiceAccountToken: false,
        securityContext: { runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: 'RuntimeDefault' } },
        containers: [{
          name: 'caller', image: RUNTIME_IMAGE, imagePullPolicy: 'Never',
          command: ['node', '-e', `fetch(${JSON.stringify(url)}).then(async (r) => { console.log(r.status, await r.text()); process.exitCode = r.ok ? 0 : 1 }, (e) => { console.error(String(e)); process.exitCode = 2 })`],
          securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
        }],
      },
    };
    expect((await kubectl(['apply', '-f', '-'], JSON.stringify(caller))).code).to.equal(0);
    await waitFor('the caller pod to finish', async () => {
      const p = await getJson(['get', 'pod', 'caller', '-n', nsB]);
      return p.status.phase === 'Succeeded' || p.status.phase === 'Failed' ? p : null;
    }, 120_000, 1000);
    const out = await kubectl(['logs', 'caller', '-n', nsB]);
    expect(out.stdout).to.contain('200').and.to.contain('Hi, pod!');
  });

  // ---- Containment of the network: every outbound connection of a function pod goes
  // through the gateway's egress proxy, and the operator's NetworkPolicy (enforced on
  // the test node by kube-router, test/cluster/netpol.sh) leaves no other route.
  // Outside hosts are stand-ins on the node's loopback interface: 192.0.2.10 (allowed),
  // 192.0.2.20 (denied by the global policy) and 169.254.169.254 (cloud metadata).
  const INTRUDER = `import net from 'node:net';
import { spawn } from 'node:child_process';
// A child process is a Node without the runtime's egress patch: only the NetworkPolicy stands in its way.
const CHILD = "const net = require('node:net'); const [host, port] = process.argv.slice(1);" +
  "const s = net.connect({ host, port: Number(port) }); const t = setTimeout(() => { console.log('timeout'); process.exit(0); }, 3000);" +
  "s.on('data', (d) => { console.log('connected ' + String(d).trim()); process.exit(0); });" +
  "s.on('connect', () => setTimeout(() => { console.log('connected'); process.exit(0); }, 500));" +
  "s.on('error', (e) => { console.log('error ' + e.code); process.exit(0); });";
const direct = (host, port) => new Promise((resolve) => {
  const child = spawn(process.execPath, ['-e', CHILD, host, String(port)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => { out += d; });
  child.on('error', (e) => resolve('spawn failed: ' + e.message));
  child.on('close', () => resolve(out.trim()));
});
// In the runtime, node:net goes through the egress proxy: a refusal is an error naming the rule.
const viaNet = (host, port) => new Promise((resolve) => {
  const s = net.connect({ host, port: Number(port) });
  const t = setTimeout(() => { s.destroy(); resolve('timeout'); }, 5000);
  s.once('data', (d) => { clearTimeout(t); s.destroy(); resolve('connected ' + String(d).trim()); });
  s.once('error', (e) => { clearTimeout(t); resolve('error ' + e.message); });
  s.once('close', () => { clearTimeout(t); resolve('closed'); });
});
const viaFetch = async (host, port) => {
  try {
    const r = await fetch('http://' + host + ':' + port + '/', { signal: AbortSignal.timeout(5000) });
    return 'status ' + r.status + ' ' + (await r.text());
  } catch (e) {
    return 'error ' + (e.cause?.message ?? e.message);
  }
};
export default async function handler(req, res) {
  const { mode, host, port } = req.query;
  const attempt = mode === 'direct' ? direct : mode === 'fetch' ? viaFetch : viaNet;
  res.json({ result: await attempt(host, port) });
}
`;
  const OUTSIDE = { allowed: '192.0.2.10', denied: '192.0.2.20', metadata: '169.254.169.254' };
  const netpol = (state: 'on' | 'off') => run(`${ROOT}test/cluster/netpol.sh`, [state], { timeoutMs: 180_000 });
  const servers: Record<string, { port: number; peers: string[]; close(): Promise<void> }> = {};
  let intruderIp = '';
  const attempt = async (mode: 'direct' | 'net' | 'fetch', host: string, port: number) => {
    const r = await invoke(nsB, 'intruder', `?mode=${mode}&host=${encodeURIComponent(host)}&port=${port}`);
    const text = await r.text();
    expect(r.status, text).to.equal(200);
    return (JSON.parse(text) as { result: string }).result;
  };

  it('egress: the operator puts a NetworkPolicy in each namespace with Functions; function pods get the gateway by /etc/hosts and no DNS', async () => {
    servers.allowedNet = await startCountingServer(OUTSIDE.allowed, 'greet', 'allowed-net');
    servers.allowedHttp = await startCountingServer(OUTSIDE.allowed, 'http', 'allowed-http');
    servers.denied = await startCountingServer(OUTSIDE.denied, 'greet', 'denied');
    servers.metadata = await startCountingServer(OUTSIDE.metadata, 'greet', 'metadata');
    servers.node = await startCountingServer(cluster.hostIp ?? '10.244.0.1', 'greet', 'node');
    const policy = await fetch(`${gatewayUrl}/api/v1/network-policy/global`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ default: 'allow', allow: [], deny: [OUTSIDE.denied] }),
    });
    expect(policy.status, await policy.text()).to.equal(200);

    await applyFunction(nsB, 'intruder', { code: INTRUDER, timeoutSeconds: 20, memoryMiB: 64 });
    await readyFunction(nsB, 'intruder');
    for (const ns of [nsA, nsB]) {
      const np = await getJson(['get', 'networkpolicy', 'fnhost-functions', '-n', ns]);
      expect(np.spec.policyTypes).to.deep.equal(['Ingress', 'Egress']);
      expect(np.spec.egress).to.have.length(1);
      expect(np.spec.egress[0].to[0].podSelector.matchLabels['app.kubernetes.io/component']).to.equal('gateway');
      expect(np.metadata.ownerReferences.map((r: { kind: string }) => r.kind)).to.include('Function');
    }
    const pods = await getJson(['get', 'pods', '-n', nsB, '-l', 'fnhost.dev/function=intruder,fnhost.dev/role=runtime']);
    const pod = pods.items[0];
    intruderIp = pod.status.podIP;
    expect(pod.spec.hostAliases[0].hostnames.join(' ')).to.contain('-gateway-internal.');
    expect(pod.spec.containers[0].env.find((e: { name: string }) => e.name === 'FNHOST_EGRESS_PROXY').value).to.match(/^http:\/\/.*-gateway-internal\..*:8090$/);
  });

  it('egress: fetch and node:net reach an allowed host through the proxy, and a denied host, the node, MongoDB, the API server and the metadata address are refused naming the rule', async () => {
    const fetched = await waitFor('fetch through the egress proxy', async () => {
      const r = await attempt('fetch', OUTSIDE.allowed, servers.allowedHttp!.port);
      return r.startsWith('status 200') ? r : null;
    }, 60_000, 1000);
    expect(fetched).to.equal('status 200 allowed-http');
    expect(await attempt('net', OUTSIDE.allowed, servers.allowedNet!.port)).to.equal('connected allowed-net');
    // Arrived from a gateway pod (the proxy), never from the function's own pod.
    expect(servers.allowedNet!.peers).to.not.include(intruderIp);
    expect(servers.allowedNet!.peers).to.have.length.greaterThan(0);

    const node = cluster.hostIp ?? '10.244.0.1';
    expect(await attempt('net', OUTSIDE.denied, servers.denied!.port)).to.match(/blocked by network policy \(global rule 192\.0\.2\.20\)/);
    expect(await attempt('fetch', OUTSIDE.denied, servers.denied!.port)).to.match(/blocked by network policy/);
    expect(await attempt('net', OUTSIDE.metadata, servers.metadata!.port)).to.match(/blocked by network policy \(global rule protected\)/);
    // The node's address is the machine's (FNHOST_EGRESS_NODE_ADDRESSES from status.hostIP: rule host) or in
    // platformCIDRs (rule platform), whichever the test's address for the node is.
    expect(await attempt('net', node, servers.node!.port)).to.match(/blocked by network policy \(global rule (host|platform)\)/);
    expect(await attempt('net', node, relay.port)).to.match(/blocked by network policy \(global rule (host|platform)\)/);
    expect(await attempt('net', '10.96.0.1', 443)).to.match(/blocked by network policy \(global rule platform\)/);
    expect(servers.denied!.peers).to.deep.equal([]);
    expect(servers.metadata!.peers).to.deep.equal([]);
    expect(servers.node!.peers).to.deep.equal([]);
    expect(relay.peers).to.not.include(intruderIp);
  });

  it('egress (issue 29): with no rule the node, the API server and MongoDB stay unreachable; under default deny a function reaches an allowed name by name', async () => {
    const setGlobal = async (policy: unknown) => {
      const r = await fetch(`${gatewayUrl}/api/v1/network-policy/global`, { method: 'PUT', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(policy) });
      expect(r.status, await r.text()).to.equal(200);
    };
    const node = cluster.hostIp ?? '10.244.0.1';
    // A name the cluster's DNS answers with an outside address: a Service without a selector and its own EndpointSlice.
    const name = `outside.${nsB}.svc.cluster.local`;
    const port = servers.allowedHttp!.port;
    const applied = await kubectl(['apply', '-f', '-'], JSON.stringify({
      apiVersion: 'v1', kind: 'List', items: [
        { apiVersion: 'v1', kind: 'Service', metadata: { name: 'outside', namespace: nsB }, spec: { clusterIP: 'None', ports: [{ name: 'http', port, protocol: 'TCP' }] } },
        { apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: { name: 'outside-1', namespace: nsB, labels: { 'kubernetes.io/service-name': 'outside' } }, addressType: 'IPv4', ports: [{ name: 'http', port, protocol: 'TCP' }], endpoints: [{ addresses: [OUTSIDE.allowed] }] },
      ],
    }));
    expect(applied.code, applied.stderr).to.equal(0);
    try {
      await setGlobal({ default: 'allow', allow: [], deny: [] });
      expect(await attempt('net', node, servers.node!.port), 'the node').to.match(/blocked by network policy \(global rule (host|platform)\)/);
      expect(await attempt('net', node, relay.port), 'MongoDB').to.match(/blocked by network policy \(global rule (host|platform)\)/);
      expect(await attempt('net', '10.96.0.1', 443), 'the API server').to.match(/blocked by network policy \(global rule platform\)/);
      expect(servers.node!.peers).to.deep.equal([]);
      await setGlobal({ default: 'deny', allow: [name], deny: [] });
      const byName = await waitFor('the allowed name through the proxy', async () => {
        const r = await attempt('fetch', name, port);
        return r.startsWith('status 200') ? r : null;
      }, 60_000, 1000);
      expect(byName).to.equal('status 200 allowed-http');
      expect(await attempt('net', OUTSIDE.allowed, servers.allowedNet!.port), 'its address alone is not allowed').to.match(/blocked by network policy \(global rule default\)/);
    } finally {
      await setGlobal({ default: 'allow', allow: [], deny: [OUTSIDE.denied] });
      await kubectl(['delete', 'service,endpointslice', 'outside', 'outside-1', '-n', nsB, '--ignore-not-found']);
    }
  });

  it('egress: a child process (no runtime patch) reaches nothing by itself: not MongoDB, the API server, the node, another function, the metadata address, nor even an allowed host', async () => {
    const node = cluster.hostIp ?? '10.244.0.1';
    const helloPods = await getJson(['get', 'pods', '-n', nsA, '-l', 'fnhost.dev/function=hello,fnhost.dev/role=runtime']);
    const helloIp = helloPods.items[0].status.podIP as string;
    const targets: Array<[string, string, number]> = [
      ['MongoDB', node, relay.port],
      ['the API server (its Service address)', '10.96.0.1', 443],
      ['the node', node, servers.node!.port],
      ['another function', helloIp, 8080],
      ['the metadata address', OUTSIDE.metadata, servers.metadata!.port],
      ['a denied host', OUTSIDE.denied, servers.denied!.port],
      ['an allowed host, bypassing the proxy', OUTSIDE.allowed, servers.allowedNet!.port],
    ];
    for (const [what, host, port] of targets) {
      expect(await attempt('direct', host, port), what).to.not.match(/^connected/);
    }
    expect(relay.peers).to.not.include(intruderIp);
    expect(servers.node!.peers).to.deep.equal([]);
    expect(servers.metadata!.peers).to.deep.equal([]);
    expect(servers.denied!.peers).to.deep.equal([]);
    expect(servers.allowedNet!.peers).to.not.include(intruderIp);
  });

  it('egress: the enforcer is what stops the child process: with kube-router off it reaches MongoDB, on again it does not', async function () {
    this.timeout(600_000);
    const node = cluster.hostIp ?? '10.244.0.1';
    const off = await netpol('off');
    try {
      expect(off.code, off.stderr).to.equal(0);
      const reached = await waitFor('a direct connection to MongoDB with enforcement off', async () => {
        const r = await attempt('direct', node, relay.port);
        return r.startsWith('connected') ? r : null;
      }, 60_000, 1000);
      expect(reached).to.match(/^connected/);
      expect(relay.peers).to.include(intruderIp);
    } finally {
      const on = await netpol('on');
      expect(on.code, on.stderr).to.equal(0);
    }
    const peersBefore = relay.peers.filter((p) => p === intruderIp).length;
    await waitFor('the NetworkPolicy enforced again', async () => !(await attempt('direct', node, relay.port)).startsWith('connected'), 120_000, 2000);
    const settled = relay.peers.filter((p) => p === intruderIp).length;
    expect(await attempt('direct', node, relay.port)).to.not.match(/^connected/);
    expect(relay.peers.filter((p) => p === intruderIp).length, `${peersBefore} before`).to.equal(settled);
  });

  it('egress: KV still works under the policy, and the namespace policy goes with its last Function', async () => {
    const kvCode = `export default async function handler(req, res) { await kv.set('k', { n: 1 }); res.json(await kv.get('k')); }`;
    const nsC = `${nsB}-c`;
    expect((await kubectl(['create', 'namespace', nsC])).code).to.equal(0);
    try {
      await applyFunction(nsC, 'kv', { code: kvCode, timeoutSeconds: 10, memoryMiB: 64 });
      await readyFunction(nsC, 'kv');
      const answer = await waitFor('a KV answer', async () => {
        const r = await invoke(nsC, 'kv');
        return r.status === 200 ? r.json() : null;
      }, 60_000, 1000);
      expect(answer).to.deep.equal({ n: 1 });
      expect((await kubectl(['get', 'networkpolicy', 'fnhost-functions', '-n', nsC])).code).to.equal(0);
      expect((await kubectl(['delete', 'fn', 'kv', '-n', nsC, '--wait=true', '--timeout=120s'])).code).to.equal(0);
      await waitFor('the namespace policy to go with its last Function', async () => (await kubectl(['get', 'networkpolicy', 'fnhost-functions', '-n', nsC])).code !== 0, 120_000, 1000);
    } finally {
      await kubectl(['delete', 'namespace', nsC, '--wait=false']);
    }
  });

  it('fnhost function:logs shows the executions with the spec’s fields (through --namespace)', async () => {
    const page = await logsWhen(nsA, 'hello', '', (p) => p.pagination.totalCount >= 2);
    expect(page.pagination.totalCount).to.be.at.least(2);
    const log = page.logs[0]!;
    expect(Object.keys(log).sort()).to.include.members(['id', 'function_id', 'status_code', 'execution_time_ms', 'error_message', 'executed_at']);
    expect(log.id).to.match(/^log_/);
    expect(log.function_id).to.equal(derivedFunctionId(nsA, 'hello'));
    expect(log.status_code).to.equal(200);
    expect(Number.isInteger(log.execution_time_ms)).to.equal(true);
    expect(log.error_message).to.equal(null);
    expect(log.executed_at).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const table = await cli(['function:logs', 'hello', '--namespace', nsA]);
    expect(table.code, table.stderr).to.equal(0);
    expect(table.stdout).to.match(/Page 1 of \d+ \(\d+ total\)/);
    // The default namespace of the chart's gateway is nsA: no flag needed there; nsB's functions need it.
    expect((await cli(['function:get', 'hello'])).stdout).to.contain('Total Executions');
    const file = join(tmp, 'b.js');
    await writeFile(file, 'export default (req, res) => res.json({ ns: "b" })\n');
    const created = await cli(['function:create', 'in-b', '--file', file, '--namespace', nsB, '--timeout', '5']);
    expect(created.code, created.stderr).to.equal(0);
    expect((await getJson(['get', 'fn', 'in-b', '-n', nsB])).spec.timeoutSeconds).to.equal(5);
    expect((await cli(['function:get', 'in-b'])).code, 'not in the default namespace').to.not.equal(0);
    await readyFunction(nsB, 'in-b');
    const test = await cli(['function:test', 'in-b', '--namespace', nsB, '--output', 'json']);
    expect(test.code, test.stderr).to.equal(0);
    expect(JSON.parse(test.stdout)).to.include({ status_code: 200 });
  });

  it('function:schedule:set creates the CronJob, and within about two minutes a record with trigger schedule appears, entered in the ledger of scheduled runs', async function () {
    this.timeout(300_000);
    const set = await cli(['function:schedule:set', 'hello', '--cron', '* * * * *']);
    expect(set.code, set.stderr).to.equal(0);
    const cron = await waitFor('the CronJob', async () => {
      const r = await kubectl(['get', 'cronjob', 'fn-hello-cron', '-n', nsA, '-o', 'json']);
      return r.code === 0 ? JSON.parse(r.stdout) : null;
    }, 60_000, 1000);
    expect(cron.spec.schedule).to.equal('* * * * *');
    expect(cron.spec.suspend).to.equal(false);
    const scheduled = await waitFor('a record with trigger schedule', async () => {
      const page = await logsOf(nsA, 'hello', '--limit 20');
      return page.logs.find((l) => l.trigger === 'schedule');
    }, 150_000, 3000);
    expect(scheduled.status_code).to.equal(200);
    // The job's pod exits 0 once the gateway answered 2xx: the Job shows it (kubectl get jobs).
    await waitFor('the scheduled Job to succeed', async () => (await getJson(['get', 'jobs', '-n', nsA])).items.some((j: any) => j.status.succeeded === 1), 60_000, 1000);
    // The run is in the ledger of scheduled runs, linked to its record, at the whole minute the CronJob planned it for
    // (the job sends it, from its Job's name); a run fired by hand goes through the gateway and is marked manual.
    const ledgerWith = (logId: unknown) => waitFor(`ledger entry of ${String(logId)}`, async () => {
      const r = await cli(['function:schedule:runs', 'hello', '--output', 'json']);
      if (r.code !== 0) return null;
      return (JSON.parse(r.stdout).runs as any[]).find((x) => x.log_id === logId) ?? null;
    }, 30_000, 500);
    const entry = await ledgerWith(scheduled.id);
    expect(entry).to.include({ outcome: 'ran', manual: false, status_code: 200, missed_reason: null });
    expect(entry.planned_at).to.match(/:00\.000Z$/);
    expect(entry.lag_ms).to.be.within(0, 120_000);
    const fired = await cli(['function:schedule:run', 'hello', '--output', 'json']);
    expect(fired.code, fired.stderr).to.equal(0);
    const manual = JSON.parse(fired.stdout);
    expect(manual).to.include({ trigger: 'schedule', manual: true, status_code: 200 });
    expect(await ledgerWith(manual.log_id)).to.include({ outcome: 'ran', manual: true, lag_ms: 0 });
    expect((await cli(['function:schedule:disable', 'hello'])).code).to.equal(0);
    await waitFor('the CronJob suspended', async () => (await getJson(['get', 'cronjob', 'fn-hello-cron', '-n', nsA])).spec.suspend === true, 60_000, 1000);
  });

  it('function:retention:set changes the resource', async () => {
    const r = await cli(['function:retention:set', 'hello', '--type', 'count', '--count', '500']);
    expect(r.code, r.stderr).to.equal(0);
    expect((await getJson(['get', 'fn', 'hello', '-n', nsA])).spec.retention).to.deep.equal({ type: 'count', count: 500 });
    const get = await cli(['function:get', 'hello', '--output', 'json']);
    expect(JSON.parse(get.stdout).retention).to.deep.equal({ type: 'count', count: 500 });
  });

  it('a function stuck in while(true){} times out (504) and its handler process is replaced: the pod serves again and is never restarted', async () => {
    await applyFunction(nsA, 'looper', { code: 'export default (req, res) => { if (req.query.spin) { for (;;) {} } res.json({ alive: true }) }', timeoutSeconds: 2 });
    await readyFunction(nsA, 'looper');
    const started = Date.now();
    const stuck = await invoke(nsA, 'looper', '/?spin=1');
    expect(stuck.status).to.equal(504);
    expect(((await stuck.json()) as { error: string }).error).to.equal('function_timeout');
    expect(Date.now() - started).to.be.below(15_000);
    const again = await waitFor('the pod to serve again', async () => {
      const r = await invoke(nsA, 'looper');
      return r.status === 200 ? r.json() : null;
    }, 30_000, 200);
    expect(again).to.deep.equal({ alive: true });
    const pods = await getJson(['get', 'pods', '-n', nsA, '-l', 'fnhost.dev/function=looper,fnhost.dev/role=runtime']);
    expect(pods.items[0].status.phase).to.equal('Running');
    expect(pods.items[0].status.containerStatuses[0].restartCount).to.equal(0);
    const page = await logsWhen(nsA, 'looper', '--status error', (p) => p.logs.length > 0);
    expect(page.logs[0]).to.include({ status_code: 504 });
    expect(String(page.logs[0]!.error_message)).to.match(/time limit/);
  });

  it('a function over its memory limit is reported as out of memory', async () => {
    await applyFunction(nsA, 'hog', { code: 'export default (req, res) => { const keep = []; for (;;) keep.push(new Array(1e6).fill(Math.random())) }', memoryMiB: 32, timeoutSeconds: 20 });
    await readyFunction(nsA, 'hog');
    const r = await invoke(nsA, 'hog');
    expect(r.status).to.equal(502);
    expect(((await r.json()) as { error: string }).error).to.equal('function_out_of_memory');
    const page = await logsWhen(nsA, 'hog', '', (p) => p.logs.length > 0);
    expect(page.logs[0]).to.include({ status_code: 502 });
    expect(String(page.logs[0]!.error_message)).to.match(/memory/i);
  });

  it('a container killed by the kernel for memory (OOMKilled, off-heap Buffers) is reported as out of memory too', async () => {
    await applyFunction(nsA, 'bufhog', { code: 'export default (req, res) => { const keep = []; for (let i = 0; i < 600; i++) keep.push(Buffer.alloc(1 << 20, 1)); res.json({ n: keep.length }) }', memoryMiB: 32, timeoutSeconds: 20 });
    await readyFunction(nsA, 'bufhog');
    const r = await invoke(nsA, 'bufhog');
    expect(r.status).to.equal(502);
    expect(((await r.json()) as { error: string }).error).to.equal('function_out_of_memory');
    // The kubelet reports the kill a moment after the connection broke: wait for a runtime pod that shows it.
    const reason = await waitFor('a bufhog pod reporting its container OOMKilled', async () => {
      const pods = await getJson(['get', 'pods', '-n', nsA, '-l', 'fnhost.dev/function=bufhog,fnhost.dev/role=runtime']);
      const reasons = (pods.items as Array<{ status?: { containerStatuses?: Array<{ lastState?: { terminated?: { reason?: string } } }> } }>)
        .flatMap((pod) => pod.status?.containerStatuses ?? [])
        .map((c) => c.lastState?.terminated?.reason);
      return reasons.includes('OOMKilled') ? 'OOMKilled' : null;
    }, 60_000, 500);
    expect(reason).to.equal('OOMKilled');
    const page = await logsWhen(nsA, 'bufhog', '', (p) => p.logs.length > 0);
    expect(page.logs[0]).to.include({ status_code: 502 });
    expect(String(page.logs[0]!.error_message)).to.match(/memory/i);
  });

  it('an idle function (spec.scaleToZero) is scaled to zero by the operator; its next call is held, scales it up and is served', async () => {
    await applyFunction(nsA, 'sleepy', { code: HELLO, routes: ['/hello/:name'], scaleToZero: { idleSeconds: 30 } });
    await readyFunction(nsA, 'sleepy');
    await waitFor('sleepy through the gateway', async () => (await invoke(nsA, 'sleepy', '/hello/early')).status === 200, 60_000, 500);
    // 30 s after the last invocation the gateway reported (status interval 2 s here).
    const idle = await waitFor('sleepy Idle at zero pods', async () => {
      const [fn, dep, pods] = await Promise.all([
        getJson(['get', 'fn', 'sleepy', '-n', nsA]),
        getJson(['get', 'deployment', 'fn-sleepy', '-n', nsA]),
        getJson(['get', 'pods', '-n', nsA, '-l', 'fnhost.dev/function=sleepy,fnhost.dev/role=runtime']),
      ]);
      const ready = (fn.status?.conditions ?? []).find((c: { type: string }) => c.type === 'Ready');
      return ready?.reason === 'Idle' && dep.spec.replicas === 0 && pods.items.length === 0 ? { ready, fn } : null;
    }, 180_000, 1000);
    expect(idle.ready.status).to.equal('True');
    expect(idle.ready.message).to.match(/scaled to zero; the next invocation scales it up/);
    expect(idle.fn.status.lastInvocationTime, 'the gateway reported the call').to.be.a('string');

    // The call is held by the gateway (no ready pod), wakes the function, and is answered.
    const woken = await invoke(nsA, 'sleepy', '/hello/again');
    expect(woken.status).to.equal(200);
    expect(await woken.json()).to.deep.equal({ message: 'Hello, again!', trigger: 'http' });
    expect((await getJson(['get', 'deployment', 'fn-sleepy', '-n', nsA])).spec.replicas).to.equal(1);
    await readyFunction(nsA, 'sleepy');
    const page = await logsWhen(nsA, 'sleepy', '', (p) => p.pagination.totalCount >= 2);
    expect(page.logs[0]).to.include({ status_code: 200 });
  });

  it('helm upgrade keeps functions and logs, and a SIGTERM of a gateway pod under load loses no record', async () => {
    const before = (await logsOf(nsA, 'hello')).pagination.totalCount;
    const upgraded = await helmRun(['upgrade', release, `${ROOT}charts/fnhost`, '-n', relNs, '-f', valuesFile, '--set', 'gateway.statusIntervalSeconds=3', '--wait', '--timeout', '8m']);
    expect(upgraded.code, upgraded.stderr).to.equal(0);
    const secret = await getJson(['get', 'secret', `${release}-fnhost-admin`, '-n', relNs]);
    expect(Buffer.from(secret.data.token, 'base64').toString('utf8'), 'the generated admin token is kept').to.equal(token);
    expect((await getJson(['get', 'fn', '-n', nsA])).items.map((f: any) => f.metadata.name).sort()).to.include.members(['hello', 'hog', 'looper']);
    expect((await logsWhen(nsA, 'hello', '', (p) => p.pagination.totalCount >= before)).pagination.totalCount).to.be.at.least(before);
    await waitFor('calls after the upgrade', async () => (await invoke(nsA, 'hello', '/hello/x')).status === 200, 60_000, 500);

    // Load through the Service while one gateway pod is deleted (SIGTERM): every answered call has its record.
    // A function of its own, keeping every record (hello's count retention would cap the listing).
    await applyFunction(nsA, 'steady', { code: HELLO, routes: ['/hello/:name'], timeoutSeconds: 5 });
    await readyFunction(nsA, 'steady');
    await waitFor('steady through the gateway', async () => (await invoke(nsA, 'steady', '/hello/x')).status === 200, 60_000, 500);
    const countBefore = (await logsOf(nsA, 'steady')).pagination.totalCount;
    // A pod of the upgraded ReplicaSet that is serving, not one of the old ones still going away.
    const gatewayPods = await getJson(['get', 'pods', '-n', relNs, '-l', 'app.kubernetes.io/component=gateway']);
    const victim = (gatewayPods.items as any[]).find((p) => !p.metadata.deletionTimestamp && p.status.phase === 'Running');
    expect(victim, 'a running gateway pod').to.not.equal(undefined);
    let answered = 0;
    let stop = false;
    const workers = Array.from({ length: 8 }, async () => {
      while (!stop) {
        try {
          const r = await invoke(nsA, 'steady', '/hello/load');
          await r.arrayBuffer();
          if (r.status === 200) answered++;
        } catch {
          // a connection cut by the closing pod: no answer, no execution counted by the caller
        }
      }
    });
    await waitFor('load flowing', async () => answered >= 20, 60_000, 100);
    const del = await kubectl(['delete', 'pod', victim.metadata.name, '-n', relNs, '--wait=true', '--timeout=90s']);
    expect(del.code, del.stderr).to.equal(0);
    // Keep the load on while the Service settles on the remaining and the new pod.
    const atDeletion = answered;
    await waitFor('load served after the deletion', async () => answered >= atDeletion + 20, 60_000, 100);
    stop = true;
    await Promise.all(workers);
    expect(answered).to.be.greaterThan(20);
    let lastTotal = countBefore;
    const after = await waitFor('every answered call recorded', async () => {
      lastTotal = (await logsOf(nsA, 'steady')).pagination.totalCount;
      return lastTotal - countBefore >= answered ? lastTotal : null;
    }, 30_000, 1000).catch((err: Error) => {
      throw new Error(`${err.message}: ${answered} calls answered 200, ${lastTotal - countBefore} recorded`);
    });
    expect(after - countBefore).to.be.at.least(answered);
  });

  it('helm uninstall removes the Functions first (their pods, CronJobs and logs), then the platform; keeps the CRD, the admin token and the other data', async () => {
    const id = derivedFunctionId(nsA, 'hello');
    const uninstalled = await helmRun(['uninstall', release, '-n', relNs, '--wait', '--timeout', '6m']);
    expect(uninstalled.code, uninstalled.stderr).to.equal(0);
    const left = await kubectl(['get', 'deploy,svc,sa,role,rolebinding,pdb,job', '-n', relNs, '-l', `app.kubernetes.io/instance=${release}`, '-o', 'name']);
    expect(left.stdout.trim()).to.equal('');
    // Only the admin token's Secret stays (adminToken.keepOnUninstall), for a reinstall.
    const secrets = await kubectl(['get', 'secret', '-n', relNs, '-l', `app.kubernetes.io/instance=${release}`, '-o', 'name']);
    expect(secrets.stdout.trim()).to.equal(`secret/${release}-fnhost-admin`);
    const clusterWide = await kubectl(['get', 'clusterrole,clusterrolebinding', '-o', 'name']);
    expect(clusterWide.stdout).to.not.contain(`${release}-fnhost-`);
    expect((await kubectl(['get', 'crd', 'functions.fnhost.dev'])).code).to.equal(0);
    for (const ns of [nsA, nsB]) {
      const objects = await getJson(['get', 'functions,pods,cronjobs,deployments,networkpolicies', '-n', ns, '-l', 'app.kubernetes.io/managed-by=fnhost-operator']);
      expect(objects.items.map((o: any) => `${o.kind}/${o.metadata.name}`), ns).to.deep.equal([]);
      expect((await getJson(['get', 'functions', '-n', ns])).items, ns).to.deep.equal([]);
    }
    const client = new MongoClient(mongo.url);
    try {
      await client.connect();
      // The operator's finalizer removed the deleted Functions' logs while it still ran.
      expect(await client.db(dbName).collection('logs').countDocuments({ function_id: id })).to.equal(0);
    } finally {
      await client.close();
    }
  });
});
