import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

// Knative Serving's queue-proxy, the peer yardstick of P1: built from the Go module proxy into
// the cache the test cluster's Go tools use (test/cluster/build-bins.sh, ~/.cache/fnhost), and
// run with the environment Knative's revision reconciler gives it
// (knative.dev/serving pkg/reconciler/revision/resources/queue.go, makeQueueContainer).

export const QUEUE_PROXY_VERSION = 'v0.42.2';
/** queue-proxy's fixed ports: it binds them all, so it runs in a network namespace of its own. */
export const QUEUE_SERVING_PORT = 8012;
export const USER_PORT = 8080;

const CACHE = process.env.FNHOST_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'fnhost');
const DIR = join(CACHE, 'tools', `queue-proxy-${QUEUE_PROXY_VERSION}`);
export const QUEUE_PROXY_BIN = join(DIR, 'bin', 'queue');

/** Builds knative.dev/serving/cmd/queue at QUEUE_PROXY_VERSION unless the cache has it (cold: a few minutes). */
export function buildQueueProxy(): string {
  if (existsSync(QUEUE_PROXY_BIN)) return QUEUE_PROXY_BIN;
  const mod = join(DIR, 'mod');
  mkdirSync(mod, { recursive: true });
  writeFileSync(join(mod, 'go.mod'), 'module local/qpbin\n\ngo 1.24\n');
  writeFileSync(join(mod, 'tools.go'), '//go:build tools\n\npackage tools\n\nimport _ "knative.dev/serving/cmd/queue"\n');
  const env = { ...process.env, GOFLAGS: '-mod=mod' };
  console.error(`building queue-proxy ${QUEUE_PROXY_VERSION} from the Go module proxy into ${QUEUE_PROXY_BIN}`);
  execFileSync('nice', ['-n', '10', 'go', 'get', `knative.dev/serving@${QUEUE_PROXY_VERSION}`], { cwd: mod, env, stdio: 'inherit' });
  execFileSync('nice', ['-n', '10', 'go', 'build', '-trimpath', '-ldflags', '-s -w', '-o', QUEUE_PROXY_BIN, 'knative.dev/serving/cmd/queue'], { cwd: mod, env, stdio: 'inherit' });
  return QUEUE_PROXY_BIN;
}

/** Knative's default config-logging zap-logger-config (config/core/configmaps/logging.yaml). */
const LOGGING_CONFIG = JSON.stringify({
  level: 'info', development: false, outputPaths: ['stdout'], errorOutputPaths: ['stderr'], encoding: 'json',
  encoderConfig: { timeKey: 'timestamp', levelKey: 'severity', nameKey: 'logger', callerKey: 'caller', messageKey: 'message', stacktraceKey: 'stacktrace', lineEnding: '', levelEncoder: '', timeEncoder: 'iso8601', durationEncoder: '', callerEncoder: '' },
});

/** The queue-proxy container's environment for a revision with Knative's defaults (ContainerConcurrency 0, timeout 300 s). */
export function queueProxyEnv(gomaxprocs: number): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    GOMAXPROCS: String(gomaxprocs),
    SERVING_NAMESPACE: 'default',
    SERVING_SERVICE: 'hello',
    SERVING_CONFIGURATION: 'hello',
    SERVING_REVISION: 'hello-00001',
    QUEUE_SERVING_PORT: String(QUEUE_SERVING_PORT),
    QUEUE_SERVING_TLS_PORT: '8112',
    CONTAINER_CONCURRENCY: '0',
    REVISION_TIMEOUT_SECONDS: '300',
    REVISION_RESPONSE_START_TIMEOUT_SECONDS: '0',
    REVISION_IDLE_TIMEOUT_SECONDS: '0',
    SERVING_POD: 'hello-00001-deployment-5d9c7f7b8-abcde',
    SERVING_POD_IP: '127.0.0.1',
    SERVING_LOGGING_CONFIG: LOGGING_CONFIG,
    SERVING_LOGGING_LEVEL: 'info',
    SERVING_REQUEST_LOG_TEMPLATE: '',
    SERVING_ENABLE_REQUEST_LOG: 'false',
    SERVING_REQUEST_METRICS_BACKEND: 'prometheus',
    SERVING_REQUEST_METRICS_REPORTING_PERIOD_SECONDS: '5',
    TRACING_CONFIG_BACKEND: 'none',
    TRACING_CONFIG_ZIPKIN_ENDPOINT: '',
    TRACING_CONFIG_DEBUG: 'false',
    TRACING_CONFIG_SAMPLE_RATE: '0.1',
    USER_PORT: String(USER_PORT),
    SYSTEM_NAMESPACE: 'knative-serving',
    METRICS_DOMAIN: 'knative.dev/internal/serving',
    SERVING_READINESS_PROBE: JSON.stringify({ tcpSocket: { port: USER_PORT, host: '127.0.0.1' }, successThreshold: 1 }),
    ENABLE_PROFILING: 'false',
    SERVING_ENABLE_PROBE_REQUEST_LOG: 'false',
    METRICS_COLLECTOR_ADDRESS: '',
    HOST_IP: '127.0.0.1',
    ENABLE_HTTP2_AUTO_DETECTION: 'false',
    ENABLE_HTTP_FULL_DUPLEX: 'false',
    ROOT_CA: '',
    ENABLE_MULTI_CONTAINER_PROBES: 'false',
  };
}

/** Starts queue-proxy and resolves once it answers on QUEUE_SERVING_PORT (a call through it to the user container). */
export async function startQueueProxy(bin: string, gomaxprocs: number): Promise<{ url: string; process: ChildProcess }> {
  const child = spawn(bin, [], { env: queueProxyEnv(gomaxprocs), stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (c: string) => {
    stderr = (stderr + c).slice(-4000);
  });
  const url = `http://127.0.0.1:${QUEUE_SERVING_PORT}`;
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`queue-proxy exited with ${child.exitCode}: ${stderr}`);
    try {
      const r = await fetch(url + '/');
      await r.arrayBuffer();
      if (r.status === 200) return { url, process: child };
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`queue-proxy did not answer 200 within 20 s: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}
