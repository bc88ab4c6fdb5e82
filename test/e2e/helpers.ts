import { execFile, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pollUntil, type Check } from '../helpers/wait.ts';

// Helpers of the end-to-end tests on the test cluster: images built the way a
// user builds them (gateway/image-context.sh + gateway/Dockerfile, and
// runtime-image/Dockerfile) with the harness's buildah, helm and the CLI run
// as processes, and a TCP relay that lets pods reach a server of the test on
// the host's bridge address.

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const NODE = process.execPath;

/**
 * The tag of the images the e2e tests build: `e2e`, or FNHOST_E2E_TAG, so that two checkouts
 * testing on the one shared cluster (a branch beside `make test`) never repoint each other's images.
 */
export const E2E_TAG = process.env.FNHOST_E2E_TAG ?? 'e2e';
if (!/^[a-z0-9][a-z0-9_.-]{0,63}$/.test(E2E_TAG)) throw new Error(`FNHOST_E2E_TAG ${JSON.stringify(E2E_TAG)} is not an image tag (lowercase letters, digits, '.', '_', '-')`);
export const PLATFORM_IMAGE = `localhost/fnhost-platform:${E2E_TAG}`;
export const RUNTIME_IMAGE = `localhost/fnhost-runtime:${E2E_TAG}`;

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

export function run(cmd: string, args: string[], options: { env?: Record<string, string | undefined>; timeoutMs?: number; input?: string; cwd?: string } = {}): Promise<Run> {
  return new Promise((resolve) => {
    const child = execFile(
      cmd,
      args,
      { env: { ...process.env, ...options.env }, maxBuffer: 64 * 1024 * 1024, timeout: options.timeoutMs ?? 120_000, cwd: options.cwd },
      (err, stdout, stderr) => resolve({ code: err ? (typeof (err as { code?: unknown }).code === 'number' ? ((err as { code: number }).code) : 1) : 0, stdout: String(stdout), stderr: String(stderr) }),
    );
    if (options.input !== undefined) child.stdin!.end(options.input);
  });
}

/** Builds the platform image from a fresh context (the way docs/install.md says) and imports it into the cluster. */
export async function buildPlatformImage(name: string): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'fnhost-platform-ctx-'));
  try {
    const ctx = await run(`${ROOT}gateway/image-context.sh`, [dir], { timeoutMs: 600_000, env: { PATH: `${ROOT}node_modules/.bin:${process.env.PATH}` } });
    if (ctx.code !== 0) throw new Error(`gateway/image-context.sh failed: ${ctx.stderr}`);
    const { buildImage } = (await import(new URL('../cluster/cluster.ts', import.meta.url).href)) as { buildImage(dir: string, name: string): Promise<void> };
    await buildImage(dir, name);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export async function buildRuntimeImage(name: string): Promise<void> {
  const { buildImage } = (await import(new URL('../cluster/cluster.ts', import.meta.url).href)) as { buildImage(dir: string, name: string): Promise<void> };
  await buildImage(`${ROOT}runtime-image`, name);
}

/**
 * The chart's platformNetworkPolicy values for the test cluster: CoreDNS, the API server
 * (6443, behind the kubernetes Service) and the MongoDB relay are processes on the node's
 * bridge address, which a NetworkPolicy reaches only by ipBlock (test/cluster/README.md).
 */
export function testClusterPlatformNetworkPolicy(hostIp: string, mongoPort: number) {
  const cidrs = [`${hostIp}/32`];
  return { apiServer: { cidrs, ports: [6443] }, dns: { cidrs }, mongodb: { cidrs, ports: [mongoPort] } };
}

/**
 * Forwards TCP connections from host:0 (the bridge address, which pods reach)
 * to 127.0.0.1:targetPort. It runs in a process of its own, so that a load
 * generator busy in this process never starves the platform's database traffic.
 */
export async function startRelay(host: string, targetPort: number): Promise<{ port: number; peers: string[]; close(): Promise<void> }> {
  // Each connection's peer address is printed, so a test can tell who reached the database.
  const script = `
const net = require('node:net');
const server = net.createServer((inbound) => {
  console.log(JSON.stringify({ peer: inbound.remoteAddress }));
  const outbound = net.connect(${Number(targetPort)}, '127.0.0.1');
  const drop = () => { inbound.destroy(); outbound.destroy(); };
  inbound.on('error', drop).on('close', drop);
  outbound.on('error', drop).on('close', drop);
  inbound.pipe(outbound);
  outbound.pipe(inbound);
});
server.listen(0, ${JSON.stringify(host)}, () => console.log(JSON.stringify({ port: server.address().port })));
process.stdin.on('end', () => process.exit(0)).resume();`;
  const child = spawn(NODE, ['-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  const peers: string[] = [];
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      const lines = out.split('\n');
      out = lines.pop()!;
      for (const line of lines) {
        const m = /"port":(\d+)/.exec(line);
        if (m) resolve(Number(m[1]));
        const p = /"peer":"([^"]*)"/.exec(line);
        if (p) peers.push(p[1]!);
      }
    });
    child.once('exit', (code) => reject(new Error(`the relay exited (${code}) before listening`)));
  });
  return {
    port,
    peers,
    close: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.stdin!.end();
        setTimeout(() => child.kill('SIGKILL'), 5000).unref();
      }),
  };
}

export function waitFor<T>(what: string, check: Check<T>, timeoutMs = 60_000, intervalMs = 500): Promise<T> {
  return pollUntil(what, check, timeoutMs, intervalMs);
}

/**
 * A server on `host` that keeps its peers' addresses, so "no connection arrives" is
 * checked where the connection would arrive. `greet`: writes a line to each
 * connection; `http`: answers every HTTP request 200 with that line.
 */
export async function startCountingServer(host: string, kind: 'greet' | 'http', line = 'hello from the test server'): Promise<{ port: number; peers: string[]; close(): Promise<void> }> {
  const net = await import('node:net');
  const http = await import('node:http');
  const peers: string[] = [];
  const sockets = new Set<import('node:net').Socket>();
  const server: import('node:net').Server =
    kind === 'http'
      ? http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/plain', connection: 'close' }).end(line))
      : net.createServer((socket) => socket.on('error', () => {}).end(line + '\n'));
  server.on('connection', (socket: import('node:net').Socket) => {
    peers.push(socket.remoteAddress ?? '?');
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, host, () => resolve()));
  return {
    port: (server.address() as import('node:net').AddressInfo).port,
    peers,
    close: () => new Promise<void>((resolve) => { for (const s of sockets) s.destroy(); server.close(() => resolve()); }),
  };
}

/** What an installed test release gives a test: the gateway's in-cluster URL (the host routes to Service IPs) and the admin token. */
export interface TestRelease {
  gatewayUrl: string;
  adminToken: string;
}

/**
 * Installs the chart on the test cluster the way the e2e suites do: the images built as
 * `localhost/fnhost-{platform,runtime}:` E2E_TAG, MongoDB behind a relay on the bridge address, one
 * gateway, small requests, the test cluster's platform NetworkPolicy addresses, plus `values`.
 */
export async function installTestRelease(options: {
  helm: (args: string[], timeoutMs?: number) => Promise<Run>;
  kubectl: (args: string[]) => Promise<Run>;
  release: string;
  namespace: string;
  hostIp: string;
  mongoUrl: string;
  mongoPort: number;
  valuesFile: string;
  values: Record<string, unknown>;
}): Promise<TestRelease> {
  const { writeFile } = await import('node:fs/promises');
  const values = {
    image: { repository: 'localhost/fnhost-platform', tag: E2E_TAG, pullPolicy: 'Never' },
    runtimeImage: { repository: 'localhost/fnhost-runtime', tag: E2E_TAG, pullPolicy: 'Never' },
    mongodb: { url: options.mongoUrl },
    operator: { resources: { requests: { cpu: '20m', memory: '96Mi' }, limits: { memory: '512Mi' } }, functionCpuRequest: '10m' },
    networkPolicy: { platformCIDRs: ['10.244.0.0/24', '10.96.0.0/16'] },
    platformNetworkPolicy: testClusterPlatformNetworkPolicy(options.hostIp, options.mongoPort),
    ...options.values,
  };
  await writeFile(options.valuesFile, JSON.stringify(values));
  const installed = await options.helm(['install', options.release, `${ROOT}charts/fnhost`, '-n', options.namespace, '--create-namespace', '-f', options.valuesFile, '--wait', '--timeout', '8m']);
  if (installed.code !== 0) throw new Error(`helm install failed: ${installed.stderr}${installed.stdout}`);
  const svc = JSON.parse((await options.kubectl(['get', 'svc', `${options.release}-fnhost-gateway`, '-n', options.namespace, '-o', 'json'])).stdout);
  const secret = JSON.parse((await options.kubectl(['get', 'secret', `${options.release}-fnhost-admin`, '-n', options.namespace, '-o', 'json'])).stdout);
  return { gatewayUrl: `http://${svc.spec.clusterIP}:8080`, adminToken: Buffer.from(secret.data.token, 'base64').toString('utf8') };
}

export interface InstalledPlatform {
  /** The gateway's Service, reachable from the host (ClusterIP). */
  gatewayUrl: string;
  /** The admin token of the release. */
  token: string;
  /** The MongoDB stand-in's URL on the host (127.0.0.1) with the release's database: a test reads the store as it is. */
  mongoUrl: string;
  /** helm with the cluster's kubeconfig. */
  helm(args: string[], timeoutMs?: number): Promise<Run>;
  /** helm uninstall, the Functions' finalizers taken off, both namespaces deleted, the MongoDB stand-in and its relay stopped. */
  remove(): Promise<void>;
}

/** `over` merged into `base`: objects key by key, anything else replaced. */
export function mergeValues(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(over)) {
    const b = out[k];
    const plain = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);
    out[k] = plain(b) && plain(v) ? mergeValues(b, v) : v;
  }
  return out;
}

/**
 * The chart installed as a user installs it, for an e2e suite: images `localhost/fnhost-platform:<tag>`
 * and `localhost/fnhost-runtime:<tag>` (built beforehand), the MongoDB stand-in on the host behind a
 * relay on the bridge address, one gateway whose default namespace is `ns` (created here).
 */
export async function installPlatform(options: {
  cluster: { kubeconfig: string; hostIp?: string };
  kubectl: (args: string[], input?: string) => Promise<Run>;
  release: string;
  relNs: string;
  ns: string;
  tag: string;
  dbName: string;
  tmp: string;
  /** Gateway values over the defaults (one replica, small requests): e.g. `replicas`, `extraEnv`. */
  gateway?: Record<string, unknown>;
  /** Chart values merged over the defaults here (objects key by key), e.g. { pool: { size: 1 } }. */
  values?: Record<string, unknown>;
}): Promise<InstalledPlatform> {
  const { cluster, kubectl, release, relNs, ns, tag, tmp } = options;
  const helmPath = (JSON.parse((await run(`${ROOT}test/cluster/env.sh`, ['--json'])).stdout) as { helm: string }).helm;
  const helm = (args: string[], timeoutMs = 600_000) => run(helmPath, args, { env: { KUBECONFIG: cluster.kubeconfig }, timeoutMs });
  const { startMongoServer } = await import('../helpers/mongo-server.ts');
  const mongo = await startMongoServer({ useEnv: false });
  const hostIp = cluster.hostIp ?? '10.244.0.1';
  const relay = await startRelay(hostIp, mongo.port!);
  const remove = async () => {
    await helm(['uninstall', release, '-n', relNs, '--wait', '--timeout', '2m']);
    // Without the operator nobody removes the finalizers: take them off so the namespace can go.
    const list = await kubectl(['get', 'fn', '-n', ns, '-o', 'name']);
    for (const name of list.stdout.split('\n').filter(Boolean)) await kubectl(['patch', name, '-n', ns, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
    for (const name of [ns, relNs]) await kubectl(['delete', 'namespace', name, '--wait=false']);
    await relay.close();
    await mongo.stop();
  };
  try {
    // The CRD of this checkout: helm installs crds/ only when the CRD is absent, and the shared
    // test cluster may hold an older one, whose schema would prune the fields this checkout adds.
    const crd = await kubectl(['apply', '--server-side', '--force-conflicts', '-f', `${ROOT}crds/fnhost.dev_functions.yaml`]);
    if (crd.code !== 0) throw new Error(`applying the CRD: ${crd.stderr}`);
    const established = await kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd/functions.fnhost.dev']);
    if (established.code !== 0) throw new Error(`the CRD is not established: ${established.stderr}`);
    const created = await kubectl(['create', 'namespace', ns]);
    if (created.code !== 0) throw new Error(`kubectl create namespace ${ns}: ${created.stderr}`);
    const { writeFile } = await import('node:fs/promises');
    const valuesFile = join(tmp, 'values.json');
    await writeFile(
      valuesFile,
      JSON.stringify(mergeValues({
        image: { repository: 'localhost/fnhost-platform', tag, pullPolicy: 'Never' },
        runtimeImage: { repository: 'localhost/fnhost-runtime', tag, pullPolicy: 'Never' },
        mongodb: { url: `mongodb://${hostIp}:${relay.port}/${options.dbName}` },
        gateway: { replicas: 1, defaultNamespace: ns, resources: { requests: { cpu: '50m', memory: '128Mi' }, limits: { memory: '512Mi' } }, ...options.gateway },
        operator: { resources: { requests: { cpu: '20m', memory: '96Mi' }, limits: { memory: '512Mi' } }, functionCpuRequest: '10m' },
        networkPolicy: { platformCIDRs: ['10.244.0.0/24', '10.96.0.0/16'] },
        platformNetworkPolicy: testClusterPlatformNetworkPolicy(hostIp, relay.port),
      }, options.values ?? {})),
    );
    const installed = await helm(['install', release, `${ROOT}charts/fnhost`, '-n', relNs, '--create-namespace', '-f', valuesFile, '--wait', '--timeout', '8m']);
    if (installed.code !== 0) throw new Error(`helm install: ${installed.stderr}${installed.stdout}`);
    const svc = JSON.parse((await kubectl(['get', 'svc', `${release}-fnhost-gateway`, '-n', relNs, '-o', 'json'])).stdout);
    const secret = JSON.parse((await kubectl(['get', 'secret', `${release}-fnhost-admin`, '-n', relNs, '-o', 'json'])).stdout);
    return {
      gatewayUrl: `http://${svc.spec.clusterIP}:8080`, token: Buffer.from(secret.data.token, 'base64').toString('utf8'), helm, remove,
      mongoUrl: `mongodb://127.0.0.1:${mongo.port}/${options.dbName}`,
    };
  } catch (err) {
    await remove().catch(() => undefined);
    throw err;
  }
}
