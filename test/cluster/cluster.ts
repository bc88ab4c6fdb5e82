import { execFile, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

// The test cluster for mocha tests of every area: ensureCluster() brings the
// single-node cluster up when it is not (test/cluster/up.sh, idempotent and
// locked, so parallel callers start it once) and returns how to reach it.
// The cluster stays up after the tests: `make cluster-down` stops it.

const HERE = fileURLToPath(new URL('.', import.meta.url));

export interface Cluster {
  /** Path of the admin kubeconfig (token of system:masters, the harness CA). */
  kubeconfig: string;
  /** Path of the kubectl binary of the cluster's version. */
  kubectl: string;
  helm: string;
  /** State dir: pids, logs/, pki/, kubeconfig, containerd's root. */
  stateDir: string;
  /** Kubernetes binaries (kube-apiserver, kubelet, kubectl, etcd, ...). */
  binDir: string;
  /** helm and coredns. */
  toolsBin: string;
  /** containerd's socket; images live in its `k8s.io` namespace. */
  containerdSocket: string;
  nodeName: string;
  /** CoreDNS address (the bridge's), the pods' nameserver. */
  dnsServer: string;
  podCidr: string;
  serviceCidr: string;
  /** Environment for child processes: KUBECONFIG and PATH with the cluster's binaries. */
  env: Record<string, string>;
}

function run(cmd: string, args: string[], opts: { timeoutMs: number; inherit?: boolean }): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', opts.inherit ? 'inherit' : 'pipe'] });
    let out = '';
    let err = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr?.setEncoding('utf8').on('data', (d: string) => (err += d));
    const timer = setTimeout(() => child.kill('SIGTERM'), opts.timeoutMs);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(out);
      else reject(new Error(`${cmd} ${args.join(' ')} failed (${signal ?? `exit ${code}`})${err ? `: ${err.trim().split('\n').slice(-5).join('\n')}` : ''}`));
    });
  });
}

async function describe(): Promise<Omit<Cluster, 'env'>> {
  return JSON.parse(await run(`${HERE}env.sh`, ['--json'], { timeoutMs: 10_000 }));
}

/** Resolves when the API server answers /readyz with the harness kubeconfig. */
export function apiserverReady(c: Pick<Cluster, 'kubeconfig' | 'kubectl'>): Promise<boolean> {
  return new Promise((resolve) => {
    execFile(c.kubectl, ['--kubeconfig', c.kubeconfig, 'get', '--raw', '/readyz'], { timeout: 10_000 }, (err, stdout) =>
      resolve(!err && String(stdout).trim() === 'ok'),
    );
  });
}

let pending: Promise<Cluster> | undefined;

/**
 * Brings the cluster up if needed (cold: builds Kubernetes, etcd, helm and
 * CoreDNS, installs Debian packages as root, builds images; warm: seconds)
 * and returns its paths. Set FNHOST_CLUSTER_LOG=1 to see the harness's progress.
 */
export function ensureCluster(): Promise<Cluster> {
  pending ??= (async () => {
    await run(`${HERE}up.sh`, ['all'], { timeoutMs: 45 * 60_000, inherit: Boolean(process.env.FNHOST_CLUSTER_LOG) });
    const d = await describe();
    if (!(await apiserverReady(d))) throw new Error(`the test cluster's API server is not ready after up.sh; see ${d.stateDir}/logs/kube-apiserver.log`);
    return { ...d, env: { KUBECONFIG: d.kubeconfig, PATH: `${d.binDir}:${d.toolsBin}:${process.env.PATH ?? ''}` } };
  })();
  pending.catch(() => (pending = undefined));
  return pending;
}

/** Builds DIR/Dockerfile with BASE=localhost/node-base:24-slim and imports it into the cluster as NAME:TAG. */
export async function buildImage(dir: string, name: string): Promise<void> {
  await run(`${HERE}images.sh`, ['build', dir, name], { timeoutMs: 20 * 60_000, inherit: Boolean(process.env.FNHOST_CLUSTER_LOG) });
}
