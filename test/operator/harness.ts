import { execFile, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { pollUntil, type Check } from '../helpers/wait.ts';

// Helpers of the operator's cluster tests: the cluster comes from the
// harness's ensureCluster() (test/cluster/cluster.ts), or from
// FNHOST_TEST_KUBECONFIG / FNHOST_TEST_KUBECTL when set.

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface ClusterAccess {
  kubeconfig: string;
  kubectl: string;
  /** The host's address on the pod bridge, where pods reach servers of the tests. */
  hostIp?: string;
}

export async function getCluster(): Promise<ClusterAccess> {
  if (process.env.FNHOST_TEST_KUBECONFIG) {
    return { kubeconfig: process.env.FNHOST_TEST_KUBECONFIG, kubectl: process.env.FNHOST_TEST_KUBECTL ?? 'kubectl', hostIp: process.env.FNHOST_TEST_HOST_IP };
  }
  // Imported by URL so that the type check does not depend on the harness file.
  const harness: { ensureCluster(): Promise<Record<string, string>> } = await import(new URL('../cluster/cluster.ts', import.meta.url).href);
  const c = await harness.ensureCluster();
  const kubeconfig = c.kubeconfig ?? c.kubeconfigPath;
  const kubectl = c.kubectl ?? c.kubectlPath;
  if (!kubeconfig || !kubectl) throw new Error(`ensureCluster() returned ${JSON.stringify(Object.keys(c))}; expected kubeconfig and kubectl paths`);
  // The harness's CoreDNS listens on the bridge's address, which is the host's address for pods.
  return { kubeconfig, kubectl, hostIp: process.env.FNHOST_TEST_HOST_IP ?? c.dnsServer };
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

export function makeKubectl(c: ClusterAccess) {
  return (args: string[], stdin?: string): Promise<RunResult> =>
    new Promise((resolve) => {
      const child = execFile(c.kubectl, args, { env: { ...process.env, KUBECONFIG: c.kubeconfig }, maxBuffer: 16 * 1024 * 1024, timeout: 60_000 }, (err, stdout, stderr) => {
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout: String(stdout), stderr: String(stderr) });
      });
      if (stdin !== undefined) child.stdin!.end(stdin);
    });
}

export function waitFor<T>(what: string, check: Check<T>, timeoutMs = 30_000, intervalMs = 250): Promise<T> {
  return pollUntil(what, check, timeoutMs, intervalMs);
}

export function uniqueName(prefix: string): string {
  return `${prefix}-${randomBytes(3).toString('hex')}`;
}

export interface OperatorProcess {
  child: ChildProcess;
  identity: string;
  port: Promise<number>;
  logs: Array<Record<string, unknown>>;
  exited: Promise<number | null>;
  stop(signal?: NodeJS.Signals): Promise<void>;
}

export function startOperator(c: ClusterAccess, env: Record<string, string>): OperatorProcess {
  const identity = env.FNHOST_POD_NAME ?? uniqueName('op');
  const child = spawn(process.execPath, [`${ROOT}operator/src/main.ts`], {
    // FNHOST_TEST_OPERATOR_KUBECONFIG: run the operator with other credentials
    // (for example those of operator/deploy/rbac.yaml) than the test's kubectl.
    env: { ...process.env, KUBECONFIG: process.env.FNHOST_TEST_OPERATOR_KUBECONFIG || c.kubeconfig, FNHOST_OPERATOR_PORT: '0', FNHOST_OPERATOR_HOST: '127.0.0.1', FNHOST_POD_NAME: identity, FNHOST_LOG_LEVEL: 'debug', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: Array<Record<string, unknown>> = [];
  let resolvePort: (p: number) => void;
  const port = new Promise<number>((r) => (resolvePort = r));
  let buffer = '';
  child.stdout!.setEncoding('utf8');
  child.stdout!.on('data', (chunk: string) => {
    buffer += chunk;
    let nl: number;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      try {
        const rec = JSON.parse(line);
        logs.push(rec);
        if (rec.msg === 'operator started') resolvePort(rec.port);
      } catch {
        logs.push({ raw: line });
      }
    }
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (d: string) => {
    stderr += d;
    if (process.env.FNHOST_TEST_VERBOSE) process.stderr.write(d);
  });
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  return {
    child,
    identity,
    port,
    logs,
    exited,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
      if (stderr && process.env.FNHOST_TEST_VERBOSE) process.stderr.write(stderr);
    },
  };
}

export async function metric(op: OperatorProcess, name: string): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${await op.port}/metrics`);
  const text = await res.text();
  let total = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith(name + ' ') || line.startsWith(name + '{')) total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}

/**
 * Waits until no operator of a fnhost Helm release runs in the cluster. Such
 * an operator watches every namespace, so it would reconcile this test's
 * Functions with other settings and fight the test's own operator over them
 * (on the shared test cluster: a release another test file installed and is
 * still uninstalling). Fails with that cause when it does not go away.
 */
export async function waitForNoReleaseOperator(kubectl: ReturnType<typeof makeKubectl>, timeoutMs = 90_000): Promise<void> {
  const selector = 'app.kubernetes.io/part-of=fnhost,app.kubernetes.io/component=operator';
  let running: string[] = [];
  await waitFor(
    'no fnhost release operator in the cluster',
    async () => {
      const r = await kubectl(['get', 'pods', '-A', '-l', selector, '-o', 'json']);
      if (r.code !== 0) throw new Error(r.stderr);
      running = JSON.parse(r.stdout).items.map((p: any) => `${p.metadata.namespace}/${p.metadata.name}`);
      return running.length === 0;
    },
    timeoutMs,
    1000,
  ).catch(() => {
    throw new Error(`an operator of a fnhost Helm release runs in the cluster (${running.join(', ')}): it would fight this test's operator over every Function; uninstall it first`);
  });
}
