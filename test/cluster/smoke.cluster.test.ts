import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Resolver } from 'node:dns/promises';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { ensureCluster } from './cluster.ts';
import type { Cluster } from './cluster.ts';
import { pollUntil, type Check } from '../helpers/wait.ts';

// Smoke test of the single-node cluster that the harness builds: node health,
// pod networking (pod IP, Service ClusterIP, cluster DNS from the host and
// from a pod), a CEL rule of a CRD, and the kernel's OOM kill. Everything it
// creates lives in one namespace (and one CRD) removed at the end.

const NODE_BASE = 'localhost/node-base:24-slim';
const NS = `smoke-${randomBytes(3).toString('hex')}`;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

let cluster: Cluster;

function kubectl(args: string[], stdin?: string): Promise<Run> {
  return new Promise((resolve) => {
    const child = execFile(cluster.kubectl, args, { env: { ...process.env, KUBECONFIG: cluster.kubeconfig }, timeout: 60_000, maxBuffer: 8 << 20 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout: String(stdout), stderr: String(stderr) }),
    );
    if (stdin !== undefined) child.stdin!.end(stdin);
  });
}

async function ok(args: string[], stdin?: string): Promise<string> {
  const r = await kubectl(args, stdin);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed: ${r.stderr.trim()}`);
  return r.stdout;
}

const waitFor = <T>(what: string, check: Check<T>, timeoutMs = 120_000): Promise<T> => pollUntil(what, check, timeoutMs, 500);

async function getJson(args: string[]): Promise<any> {
  return JSON.parse(await ok([...args, '-o', 'json']));
}

async function httpGet(url: string): Promise<string> {
  const res = await fetch(url, { signal: AbortSignal.timeout(5_000) });
  if (res.status !== 200) throw new Error(`GET ${url}: HTTP ${res.status}`);
  return res.text();
}

// A non-root, read-only pod of the Node base serving "hello <hostname>".
const SERVER = `require('node:http').createServer((q, s) => s.end('hello ' + require('node:os').hostname())).listen(8080)`;
const restricted = {
  runAsNonRoot: true,
  runAsUser: 65534,
  readOnlyRootFilesystem: true,
  allowPrivilegeEscalation: false,
  capabilities: { drop: ['ALL'] },
};

function manifests(): string {
  const deployment = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: NS },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: 'web' } },
      template: {
        metadata: { labels: { app: 'web' } },
        spec: {
          automountServiceAccountToken: false,
          containers: [
            {
              name: 'web',
              image: NODE_BASE,
              imagePullPolicy: 'Never',
              command: ['node', '-e', SERVER],
              ports: [{ containerPort: 8080 }],
              securityContext: restricted,
              resources: { limits: { memory: '128Mi' }, requests: { memory: '64Mi', cpu: '10m' } },
              readinessProbe: { httpGet: { path: '/', port: 8080 }, periodSeconds: 1 },
            },
          ],
        },
      },
    },
  };
  const service = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'web', namespace: NS },
    spec: { selector: { app: 'web' }, ports: [{ port: 80, targetPort: 8080 }] },
  };
  return JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [deployment, service] });
}

describe('test cluster (real single-node Kubernetes)', function () {
  this.timeout(300_000);

  before(async function () {
    this.timeout(50 * 60_000); // a cold start builds everything
    cluster = await ensureCluster();
    await ok(['create', 'namespace', NS]);
  });

  after(async () => {
    if (!cluster) return;
    await kubectl(['delete', 'namespace', NS, '--wait=false']);
    await kubectl(['delete', 'crd', 'widgets.smoke.fnhost.dev', '--ignore-not-found', '--wait=false']);
  });

  it('has one Ready node without taints, reachable by the API server for logs', async () => {
    const node = await getJson(['get', 'node', cluster.nodeName]);
    const ready = node.status.conditions.find((c: { type: string }) => c.type === 'Ready');
    expect(ready.status).to.equal('True');
    expect(node.spec.taints ?? []).to.deep.equal([]);
    // The bridge's address: Kubernetes refuses a loopback node IP; the API server reaches the kubelet by it.
    expect(node.status.addresses).to.deep.include({ type: 'InternalIP', address: cluster.dnsServer });
    expect(node.status.nodeInfo.kubeletVersion).to.equal('v1.37.2');
  });

  describe('a non-root, read-only Deployment and its Service', () => {
    let podIP = '';
    let podName = '';
    let clusterIP = '';

    before(async () => {
      await ok(['apply', '-f', '-'], manifests());
      await ok(['-n', NS, 'rollout', 'status', 'deployment/web', '--timeout=180s']);
      const pods = await getJson(['-n', NS, 'get', 'pods', '-l', 'app=web']);
      podIP = pods.items[0].status.podIP;
      podName = pods.items[0].metadata.name;
      clusterIP = (await getJson(['-n', NS, 'get', 'service', 'web'])).spec.clusterIP;
    });

    it('runs as uid 65534 with a read-only root filesystem', async () => {
      const pod = await getJson(['-n', NS, 'get', 'pod', podName]);
      const sc = pod.spec.containers[0].securityContext;
      expect(sc.runAsUser).to.equal(65534);
      expect(sc.readOnlyRootFilesystem).to.equal(true);
      const probe = await kubectl(['-n', NS, 'exec', podName, '--', 'node', '-e', `try { require('fs').writeFileSync('/x', '1'); console.log('wrote') } catch (e) { console.log(e.code, process.getuid()) }`]);
      expect(probe.stdout.trim()).to.equal('EROFS 65534');
    });

    it('answers from the host over its pod IP and its Service ClusterIP', async () => {
      expect(podIP).to.match(/^10\.244\.0\.\d+$/);
      expect(await httpGet(`http://${podIP}:8080/`)).to.equal(`hello ${podName}`);
      expect(clusterIP).to.match(/^10\.96\./);
      expect(await waitFor('the ClusterIP to answer', () => httpGet(`http://${clusterIP}/`), 30_000)).to.equal(`hello ${podName}`);
    });

    it('answers from the host by its cluster DNS name (CoreDNS on the bridge, not the machine resolver)', async () => {
      const resolver = new Resolver({ timeout: 2_000, tries: 2 });
      resolver.setServers([cluster.dnsServer]);
      const [address] = await resolver.resolve4(`web.${NS}.svc.cluster.local`);
      expect(address).to.equal(clusterIP);
      expect(await httpGet(`http://${address}/`)).to.equal(`hello ${podName}`);
    });

    it('answers another pod by DNS name, ClusterIP and pod IP; kubectl logs shows its output', async () => {
      const client = `(async () => { for (const u of process.argv.slice(1)) { const r = await fetch(u); console.log(u + ' ' + r.status + ' ' + (await r.text())); } })().catch((e) => { console.error(String(e.cause ?? e)); process.exit(1); })`;
      const pod = {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'client', namespace: NS },
        spec: {
          restartPolicy: 'Never',
          automountServiceAccountToken: false,
          containers: [
            {
              name: 'client',
              image: NODE_BASE,
              imagePullPolicy: 'Never',
              command: ['node', '-e', client, `http://web/`, `http://web.${NS}.svc.cluster.local/`, `http://${clusterIP}/`, `http://${podIP}:8080/`],
              securityContext: restricted,
            },
          ],
        },
      };
      await ok(['apply', '-f', '-'], JSON.stringify(pod));
      const phase = await waitFor('the client pod to finish', async () => {
        const p = (await getJson(['-n', NS, 'get', 'pod', 'client'])).status.phase;
        return p === 'Succeeded' || p === 'Failed' ? p : undefined;
      });
      const logs = await ok(['-n', NS, 'logs', 'client']);
      expect(phase, logs).to.equal('Succeeded');
      expect(logs.trim().split('\n')).to.deep.equal([
        `http://web/ 200 hello ${podName}`,
        `http://web.${NS}.svc.cluster.local/ 200 hello ${podName}`,
        `http://${clusterIP}/ 200 hello ${podName}`,
        `http://${podIP}:8080/ 200 hello ${podName}`,
      ]);
    });
  });

  it('lets a pod reach the API server through the kubernetes Service with its service-account token', async () => {
    // What an in-cluster operator does: CA and token from the projected volume.
    const script = `const fs = require('fs'), https = require('https'); const d = '/var/run/secrets/kubernetes.io/serviceaccount/';
      https.get({ host: process.env.KUBERNETES_SERVICE_HOST, port: process.env.KUBERNETES_SERVICE_PORT, path: '/version', ca: fs.readFileSync(d + 'ca.crt'), headers: { authorization: 'Bearer ' + fs.readFileSync(d + 'token', 'utf8') } },
        (r) => { let b = ''; r.on('data', (c) => (b += c)); r.on('end', () => console.log(r.statusCode, JSON.parse(b).gitVersion)); }).on('error', (e) => { console.error(String(e)); process.exit(1); });`;
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'apiclient', namespace: NS },
      spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: NODE_BASE, imagePullPolicy: 'Never', command: ['node', '-e', script], securityContext: restricted }] },
    };
    await ok(['apply', '-f', '-'], JSON.stringify(pod));
    const phase = await waitFor('the API client pod to finish', async () => {
      const p = (await getJson(['-n', NS, 'get', 'pod', 'apiclient'])).status.phase;
      return p === 'Succeeded' || p === 'Failed' ? p : undefined;
    });
    const logs = await ok(['-n', NS, 'logs', 'apiclient']);
    expect(phase, logs).to.equal('Succeeded');
    expect(logs.trim()).to.equal('200 v1.37.2');
  });

  it('keeps the anonymous kubelet API out of reach of pods', async () => {
    const script = `const s = require('net').connect(10250, process.argv[1]); s.setTimeout(3000);
      s.on('connect', () => { console.log('connected'); process.exit(0); }); s.on('timeout', () => { console.log('timeout'); process.exit(0); }); s.on('error', (e) => { console.log(e.code); process.exit(0); });`;
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'kubeletprobe', namespace: NS },
      spec: { restartPolicy: 'Never', automountServiceAccountToken: false, containers: [{ name: 'c', image: NODE_BASE, imagePullPolicy: 'Never', command: ['node', '-e', script, cluster.dnsServer], securityContext: restricted }] },
    };
    await ok(['apply', '-f', '-'], JSON.stringify(pod));
    await waitFor('the probe pod to finish', async () => (await getJson(['-n', NS, 'get', 'pod', 'kubeletprobe'])).status.phase === 'Succeeded');
    expect((await ok(['-n', NS, 'logs', 'kubeletprobe'])).trim()).to.equal('timeout');
  });

  it('installs a Helm chart of a local image with --wait', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'fnhost-chart-'));
    try {
      await mkdir(join(dir, 'templates'));
      await writeFile(join(dir, 'Chart.yaml'), 'apiVersion: v2\nname: smoke\nversion: 0.1.0\n');
      const deployment = {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: '{{ .Release.Name }}' },
        spec: {
          replicas: 1,
          selector: { matchLabels: { app: '{{ .Release.Name }}' } },
          template: {
            metadata: { labels: { app: '{{ .Release.Name }}' } },
            spec: { containers: [{ name: 'web', image: '{{ .Values.image }}', imagePullPolicy: 'Never', command: ['node', '-e', SERVER], securityContext: restricted, readinessProbe: { httpGet: { path: '/', port: 8080 }, periodSeconds: 1 } }] },
          },
        },
      };
      await writeFile(join(dir, 'templates', 'deployment.yaml'), JSON.stringify(deployment));
      const out = await new Promise<Run>((resolve) =>
        execFile(cluster.helm, ['install', 'smoke', dir, '-n', NS, '--set', `image=${NODE_BASE}`, '--wait', '--timeout', '3m'], { env: { ...process.env, ...cluster.env }, timeout: 240_000 }, (err, stdout, stderr) =>
          resolve({ code: err ? 1 : 0, stdout: String(stdout), stderr: String(stderr) }),
        ),
      );
      expect(out.code, out.stderr).to.equal(0);
      expect(out.stdout).to.include('STATUS: deployed');
      expect((await getJson(['-n', NS, 'get', 'deployment', 'smoke'])).status.readyReplicas).to.equal(1);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('rejects an object that breaks a CEL rule of a CRD, with the rule message', async () => {
    const crd = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'widgets.smoke.fnhost.dev' },
      spec: {
        group: 'smoke.fnhost.dev',
        scope: 'Namespaced',
        names: { plural: 'widgets', singular: 'widget', kind: 'Widget' },
        versions: [
          {
            name: 'v1',
            served: true,
            storage: true,
            schema: {
              openAPIV3Schema: {
                type: 'object',
                properties: {
                  spec: {
                    type: 'object',
                    properties: { min: { type: 'integer' }, max: { type: 'integer' } },
                    'x-kubernetes-validations': [{ rule: 'self.min <= self.max', message: 'min must not exceed max' }],
                  },
                },
              },
            },
          },
        ],
      },
    };
    await ok(['apply', '-f', '-'], JSON.stringify(crd));
    await ok(['wait', '--for=condition=Established', 'crd/widgets.smoke.fnhost.dev', '--timeout=60s']);
    const widget = (min: number, max: number, name: string) => JSON.stringify({ apiVersion: 'smoke.fnhost.dev/v1', kind: 'Widget', metadata: { name, namespace: NS }, spec: { min, max } });
    await waitFor('the CRD to serve', async () => (await kubectl(['apply', '-f', '-'], widget(1, 2, 'good'))).code === 0, 30_000);
    const bad = await kubectl(['apply', '-f', '-'], widget(3, 2, 'bad'));
    expect(bad.code).to.not.equal(0);
    expect(bad.stderr).to.include('min must not exceed max');
  });

  it('reports a container over its memory limit as OOMKilled', async () => {
    const hog = `const keep = []; for (;;) { keep.push(Buffer.alloc(8 << 20, 1)); }`;
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'hog', namespace: NS },
      spec: {
        restartPolicy: 'Never',
        automountServiceAccountToken: false,
        containers: [
          {
            name: 'hog',
            image: NODE_BASE,
            imagePullPolicy: 'Never',
            command: ['node', '-e', hog],
            securityContext: restricted,
            resources: { limits: { memory: '64Mi' } },
          },
        ],
      },
    };
    await ok(['apply', '-f', '-'], JSON.stringify(pod));
    const terminated = await waitFor('the hog container to terminate', async () => {
      const s = (await getJson(['-n', NS, 'get', 'pod', 'hog'])).status.containerStatuses?.[0]?.state?.terminated;
      return s;
    });
    expect(terminated.reason).to.equal('OOMKilled');
    expect(terminated.exitCode).to.equal(137);
  });
});
