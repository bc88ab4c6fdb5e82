import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import type Koa from 'koa';
import type Router from '@koa/router';
import type { Executor, FunctionRecord, FunctionStore, Stores, ThrowawayRuntime } from '@fnhost/core';
import { digest, type AdminToken } from './auth.ts';
import { AccessControl, type NamespaceGate } from './access/control.ts';
import type { KubeAccess } from './access/kube-access.ts';
import { ConfigError, type GatewayConfig } from './config.ts';
import { LocalExecutor } from './executor/local.ts';
import { FunctionService, type FunctionIndex, type ScheduleSink } from './functions/service.ts';
import { adminApp } from './admin/listener.ts';
import { adminPanel } from './admin/router.ts';
import { functionRoutes } from './api/functions.ts';
import { executionRoutes } from './api/executions.ts';
import { replayRoutes } from './api/replay.ts';
import { infoRoutes } from './api/info.ts';
import { PolicyCache, policyRoutes } from './api/policy.ts';
import { internalRoutes, type RuntimeTokenVerifier } from './internal/routes.ts';
import { RuntimeTokens } from './internal/tokens.ts';
import { errorMiddleware } from './http/errors.ts';
import { healthRoutes } from './http/health.ts';
import { listen } from './http/listen.ts';
import { mainApp } from './http/main-app.ts';
import { EGRESS_SOCKET, startEgress, type Egress } from './egress/start.ts';
import { Invoker, type Diagnoser, type ExecutionRecorder } from './invoke/proxy.ts';
import type { Logger } from './log.ts';
import { InstanceTracker } from './logs/instance.ts';
import { LogWriter } from './logs/writer.ts';
import { Metrics } from './metrics.ts';
import type { Clock } from '@fnhost/core/clock.ts';
import { LocalScheduler, systemClock } from './scheduler/local.ts';
import { ScheduleLedger } from './scheduler/ledger.ts';
import { fireScheduled, missedRunsAtStart } from './scheduler/runs.ts';
import { scheduleRunRoutes } from './api/schedule-runs.ts';
import { sandboxStatus } from './sandbox/fallback.ts';
import { listenInternal, type InternalListener } from './sandbox/internal-listener.ts';
import { Sandboxes } from './sandbox/sandbox.ts';
import { loadSandboxSettings, type SandboxSettings } from './sandbox/settings.ts';
import { DEFAULT_RUNTIME_MAIN } from './executor/local.ts';

// Assembles one gateway: stores, the function cache, the local executor, the
// scheduler, the log writer, and two listeners: the main one (the raw
// invocation path beside the Koa app of http/main-app.ts: bearer-token
// management API, internal API, health) and the admin panel's own
// (admin/listener.ts), so that function pages and the panel never share an
// origin (docs/security.md). In cluster
// mode (gateway/src/cluster/start.ts) the same program runs with other parts
// plugged into the same seams: functions from Function resources, pods as
// upstreams, CronJobs instead of the local scheduler, derived tokens.

/** What cluster mode plugs in instead of the one-machine parts. */
export interface ClusterParts {
  /** The watch-backed cache of Function resources, and the FunctionStore seam over them. */
  index: FunctionIndex;
  functionStore: FunctionStore;
  executor: Executor & Diagnoser & { readonly running: number };
  /** next_run_at of schedules that CronJobs fire (sync does nothing). */
  schedules: ScheduleSink;
  runtimeTokens: RuntimeTokenVerifier & { tokenFor(functionId: string): string };
  scheduleToken(functionId: string, token: string): boolean;
  newFunctionId(namespace: string, name: string): string;
  defaultNamespace: string;
  /** Kubernetes tokens on the management API (TokenReview, SubjectAccessReview); undefined: admin token only. */
  kubeAccess?: KubeAccess;
  /** The namespaces where functions may live. */
  namespaceGate: NamespaceGate;
  /** Every finished execution (status feedback). */
  onExecution(functionId: string, statusCode: number): void;
  /** A throwaway version's pod for one replay call (function:replay --code; cluster/throwaway.ts). */
  throwaway(fn: FunctionRecord): Promise<ThrowawayRuntime>;
  /** Extra Prometheus lines (watches, held calls, status writes). */
  metricsText(): string;
  /** Where the cluster parts count their caught background failures (the platform's Metrics, made after them). */
  bindMetrics?(metrics: Pick<Metrics, 'backgroundFailed'>): void;
  /** Stops watches and flushes status feedback. */
  close(): Promise<void>;
}

export interface PlatformOptions {
  config: GatewayConfig;
  stores: Stores;
  adminToken: AdminToken;
  logger: Logger;
  /** Injected in tests to drive schedules; the system clock otherwise. */
  clock?: Clock;
  runtimeMain?: string;
  /** Pass runtime output through (default true; tests turn it off). */
  forwardRuntimeOutput?: boolean;
  /** Retention and KV sweep period. */
  sweepIntervalMs?: number;
  /** Cluster mode: the parts that replace the local executor, scheduler, function store and tokens. */
  cluster?: ClusterParts;
  /** One machine: the runtimes' sandbox (default: from the environment, docs/sandbox.md). */
  sandbox?: SandboxSettings;
}

export interface Platform<E extends Executor = LocalExecutor> {
  /** The main listener: /invoke, /api/v1 (bearer token), /internal/v1, health. */
  url: string;
  server: Server;
  app: Koa;
  /** The admin panel's listener: /admin and its cookie-authenticated API /admin/api/v1. */
  adminUrl: string;
  adminServer: Server;
  routers: Router[];
  functions: FunctionService;
  executor: E;
  scheduler: LocalScheduler;
  /** The ledger of scheduled runs (gateway/src/scheduler/ledger.ts). */
  ledger: ScheduleLedger;
  writer: LogWriter;
  /** This gateway's instance in the store, and the count of records lost by dead ones. */
  instances: InstanceTracker;
  invoker: Invoker;
  metrics: Metrics;
  /** The egress proxy every outbound connection of a function goes through (docs/egress.md). */
  egress: Egress;
  /** A function's runtime token (what its runtime presents to /internal/v1). */
  runtimeToken(functionId: string): string;
  sweep(): Promise<void>;
  /** Graceful: stop accepting, finish in-flight (bounded), flush logs, stop runtimes, close stores. */
  close(): Promise<void>;
}

export function startPlatform(options: PlatformOptions & { cluster?: undefined }): Promise<Platform>;
export function startPlatform(options: PlatformOptions & { cluster: ClusterParts }): Promise<Platform<Executor>>;
export async function startPlatform(options: PlatformOptions): Promise<Platform<Executor>> {
  const { config, logger, cluster } = options;
  const stores: Stores = cluster === undefined ? options.stores : { ...options.stores, functions: cluster.functionStore };
  const clock = options.clock ?? systemClock;
  const now = () => clock.now();
  const metrics = new Metrics();
  cluster?.bindMetrics?.(metrics);
  const tokens = new RuntimeTokens();
  // The writer's progress goes to the store with each batch, so another gateway can count what a kill took.
  const instances = new InstanceTracker({
    store: stores.instances,
    deadAfterMs: config.deadGatewayAfterMs,
    progressIntervalMs: config.logProgressIntervalMs,
    logger,
    counts: (): { accepted: number; written: number } => ({ accepted: writer.owed, written: writer.written }),
  });
  const writer: LogWriter = new LogWriter({ logs: stores.logs, counters: stores.counters, logger, tracker: instances });
  let listenUrl = '';
  const executionUrl = () => config.publicUrl ?? listenUrl;

  // One machine: a sandbox per runtime where the OS offers one; otherwise a warning, or a refusal (sandbox/fallback.ts).
  const sandboxSettings = options.sandbox ?? loadSandboxSettings(process.env);
  const runtimeMain = options.runtimeMain ?? DEFAULT_RUNTIME_MAIN;
  const support = cluster !== undefined ? undefined : await Sandboxes.detect({ settings: sandboxSettings, dataDir: config.dataDir, runtimeMain });
  const sandbox = support === undefined ? undefined : sandboxStatus(support, sandboxSettings, config.host);
  if (sandbox?.warning !== undefined) logger.warn(sandbox.warning);
  if (support?.sandboxed === true && support.leftovers !== undefined && (support.leftovers.strays > 0 || support.leftovers.staleCgroups > 0)) {
    logger.info(`ended ${support.leftovers.strays} stray sandbox(es) and removed the cgroups of ${support.leftovers.staleCgroups} gateway(s) that were killed before they could clean up`);
  }
  const sandboxes = support?.sandboxed === true ? support.sandboxes : undefined;

  // The invoker and the executor refer to each other through callbacks.
  let invoker!: Invoker;
  let egress: Egress | undefined;
  const local = cluster !== undefined ? undefined : new LocalExecutor({
    sandboxes,
    dataDir: config.dataDir,
    gatewayUrl: () => listenUrl,
    consoleCapture: config.consoleCapture,
    egressProxy: () => egress?.runtimeSetting,
    tokens,
    runtimeMain: options.runtimeMain,
    forwardOutput: options.forwardRuntimeOutput,
    logger,
    metrics,
    onOriginGone: (origin) => invoker.originGone(origin),
    idleMs: config.runtimeIdleSeconds * 1000,
    clock,
  });
  const executor: Executor & Diagnoser & { readonly running: number } = cluster?.executor ?? local!;
  let functions!: FunctionService;
  const ledger = new ScheduleLedger({ store: stores.scheduleRuns, logger, startingDeadlineMs: config.scheduleStartingDeadlineSeconds * 1000 });
  const scheduler = new LocalScheduler({
    clock,
    logger,
    fire: (functionId, plannedAt) => fireScheduled({ functions, invoker, ledger }, functionId, plannedAt),
    missed: (functionId, plannedAt, reason) => {
      const fn = functions.byId(functionId);
      if (fn !== undefined) ledger.missed(fn, plannedAt, reason);
    },
  });
  functions = new FunctionService({
    stores, executor, logger, now,
    scheduler: cluster?.schedules ?? scheduler,
    pendingCount: (id) => writer.pendingCount(id),
    executionUrl,
    maxTimeoutSeconds: config.maxTimeoutSeconds,
    index: cluster?.index,
    defaultNamespace: cluster?.defaultNamespace,
    multiNamespace: cluster !== undefined,
    newFunctionId: cluster?.newFunctionId,
  });
  if (config.benchDisableRecording) logger.warn('FNHOST_BENCH_DISABLE_RECORDING=1: executions are NOT recorded (benchmarks only)');
  let recorder: ExecutionRecorder = config.benchDisableRecording ? { record() {} } : writer;
  if (cluster !== undefined) {
    const inner = recorder;
    recorder = {
      begin: () => inner.begin?.(),
      record(log, retention) {
        cluster.onExecution(log.function_id, log.status_code);
        return inner.record(log, retention);
      },
    };
  }
  invoker = new Invoker({
    functions, executor, recorder, metrics, logger, trustProxy: config.trustProxy,
    scheduleToken: cluster === undefined ? undefined : (id, token) => cluster.scheduleToken(id, token),
    now,
    onScheduleRun: (fn, log, plannedAt) => ledger.ran(fn, log, plannedAt),
  });
  // Cluster mode: several gateway replicas share the policies in MongoDB, so none may cache them.
  const policies = new PolicyCache(stores.policies, { shared: cluster !== undefined });

  let ready = false;
  const health = healthRoutes({
    ready: () => ready,
    metricsTokenDigest: config.metricsToken === undefined ? undefined : digest(config.metricsToken),
    metricsText: () =>
      metrics.render({
        logQueueDepth: writer.depth,
        logRecordsDropped: writer.dropped,
        recordedBodiesDropped: writer.recordedBodiesDropped,
        logRecordsWritten: writer.written,
        logWriteFailures: writer.failures,
        runningRuntimes: executor.running,
        lostRecords: instances.totals,
      }) + (cluster?.metricsText() ?? '') + (egress?.proxy.metricsText() ?? ''),
  });
  // Who may do what: one machine, the admin token only; cluster mode, the namespace rule and Kubernetes RBAC too.
  const access = new AccessControl({ kube: cluster?.kubeAccess, gate: cluster?.namespaceGate });
  const api = [
    functionRoutes({ functions, invoker, writer, stores, now, access }),
    executionRoutes({ functions, writer, stores, now, access }),
    replayRoutes({ functions, invoker, writer, stores, now, access, throwaway: cluster?.throwaway ?? ((fn) => executor.throwaway!(fn)) }),
    scheduleRunRoutes({ functions, invoker, ledger, now, access, startingDeadlineSeconds: cluster === undefined ? config.scheduleStartingDeadlineSeconds : undefined }),
    policyRoutes({ policies, functions, now, access }),
    infoRoutes({ mode: cluster === undefined ? 'local' : 'cluster', default_namespace: functions.defaultNamespace, sandbox: sandbox === undefined ? undefined : { enabled: sandbox.enabled, warning: sandbox.warning } }),
  ];
  const internal = internalRoutes({ tokens: cluster?.runtimeTokens ?? tokens, functions, kv: stores.kv, insight: stores.insight, consoleCapture: config.consoleCapture, flushRecords: () => writer.flush(), policies, platform: config.egressPlatform, now });
  const app = mainApp({ health, api, internal, adminToken: options.adminToken, kubeAccess: cluster?.kubeAccess, trustProxy: config.trustProxy, logger });
  // The admin panel: its page, sign-in and session-authenticated API, on its own listener.
  const admin = adminPanel({ token: options.adminToken, now, sessionStore: stores.sessions, logger });
  const adminServer = createServer({ keepAliveTimeout: 65_000 }, adminApp({ panel: admin, api, trustProxy: config.trustProxy, logger }).callback());
  const koa = app.callback();

  let shuttingDown = false;
  const server = createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
    // While shutting down, calls still arriving on open keep-alive connections are
    // served (and recorded) with Connection: close, so each connection ends after it.
    if (shuttingDown) res.setHeader('connection', 'close');
    if (req.url!.startsWith('/invoke/')) invoker.handleHttp(req, res);
    else void koa(req, res);
  });
  server.headersTimeout = 66_000;

  egress = await startEgress({
    config, logger, policies,
    tokens: cluster?.runtimeTokens ?? tokens,
    knows: (id) => functions.byId(id) !== undefined,
    local: local === undefined ? undefined : sandboxes !== undefined
      ? { socketPath: sandboxes.egressSocket, runtimeSetting: Sandboxes.egressProxy }
      : unsandboxedEgress(join(config.dataDir, EGRESS_SOCKET)),
  });
  const internalSocket: InternalListener | undefined = sandboxes === undefined ? undefined : await listenInternal(sandboxes.gatewaySocket, internal, errorMiddleware(logger));
  if (local !== undefined) await local.reapStale();
  await functions.load();
  // Registered before the first record; its first look for dead instances runs meanwhile.
  await instances.start();
  // In cluster mode CronJobs fire schedules: the local scheduler stays empty.
  // The scheduler plans from this instant on; runs planned before it while no gateway ran are caught up once listening.
  const schedulingFrom = clock.now();
  const lateRuns = cluster === undefined ? await missedRunsAtStart({ ledger, logger }, functions.all(), schedulingFrom) : [];
  if (cluster === undefined) for (const fn of functions.all()) scheduler.sync(fn, fn.function_id);

  listenUrl = await listen(server, config.port, config.host);
  let adminUrl: string;
  try {
    adminUrl = await listen(adminServer, config.adminPort, config.adminHost);
  } catch (err) {
    server.close();
    throw new ConfigError(`the admin panel's listener (FNHOST_ADMIN_PORT=${config.adminPort}, FNHOST_ADMIN_HOST=${config.adminHost}) cannot listen: ${(err as Error).message}`);
  }
  ready = true;
  for (const late of lateRuns) scheduler.start(late.functionId, late.plannedAt);

  const sweep = async () => {
    const t = now();
    for (const fn of functions.all()) {
      try {
        await stores.logs.applyRetention(fn.function_id, fn.retention, t);
      } catch (err) {
        logger.error('retention sweep failed', { function_id: fn.function_id, error: (err as Error).message });
      }
    }
    try {
      await stores.scheduleRuns.sweep(t);
    } catch (err) {
      logger.error('schedule ledger sweep failed', { error: (err as Error).message });
    }
    try {
      await stores.kv.sweep(t);
    } catch (err) {
      logger.error('kv sweep failed', { error: (err as Error).message });
    }
  };
  const sweeper = setInterval(() => void sweep(), options.sweepIntervalMs ?? 3_600_000);
  sweeper.unref();
  // One sweep soon after start too, so a gateway restarted often still applies retention.
  const firstSweep = setTimeout(() => void sweep(), 5_000);
  firstSweep.unref();

  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      ready = false;
      clearInterval(sweeper);
      clearTimeout(firstSweep);
      admin.close();
      scheduler.stop();
      // Stop accepting; connections end as they fall idle (a caller's keep-alive connection
      // may still bring calls: they run and are recorded). Only once no connection is left,
      // or the grace period is over, is the log queue flushed for the last time: a record
      // queued after that flush would be lost.
      shuttingDown = true;
      const adminStopped = new Promise<void>((resolve) => adminServer.close(() => resolve()));
      adminServer.closeIdleConnections();
      const deadline = Date.now() + config.shutdownGraceMs;
      let allClosed = false;
      const stopped = new Promise<void>((resolve) => server.close(() => resolve())).then(() => {
        allClosed = true;
      });
      server.closeIdleConnections();
      const idleCloser = setInterval(() => server.closeIdleConnections(), 100);
      await Promise.race([stopped, new Promise((resolve) => setTimeout(resolve, Math.max(0, deadline - Date.now())).unref())]);
      await invoker.drain(Math.max(0, deadline - Date.now()));
      clearInterval(idleCloser);
      if (!allClosed) server.closeAllConnections();
      adminServer.closeAllConnections();
      await stopped;
      await adminStopped;
      // Executions whose connection was cut just now finish (and queue their record) first.
      await invoker.drain(1000);
      await ledger.flush();
      await writer.close();
      await instances.close();
      await cluster?.close();
      await executor.close();
      await egress!.proxy.close();
      await internalSocket?.close();
      await sandboxes?.removeRoot();
      await invoker.close();
      await stores.close();
    })();
    return closing;
  };

  return { url: listenUrl, server, app, adminUrl, adminServer, routers: [health, admin.router, ...api, internal], functions, executor, scheduler, ledger, writer, instances, invoker, metrics, egress, runtimeToken: (id) => (cluster?.runtimeTokens ?? tokens).tokenFor(id), sweep, close };
}

/** Unsandboxed runtimes share the gateway's view: they reach the proxy's socket at its own path. */
function unsandboxedEgress(socketPath: string): { socketPath: string; runtimeSetting: string } {
  return { socketPath, runtimeSetting: `unix:${socketPath}` };
}
