import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import type Koa from 'koa';
import type Router from '@koa/router';
import type { CodeStore, Executor, FunctionRecord, FunctionStore, Stores, ThrowawayRuntime } from '@fnhost/core';
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
import { policyRoutes } from './api/policy.ts';
import { PolicyCache } from './policy/cache.ts';
import { MachineAddresses } from './policy/machine.ts';
import { internalRoutes } from './internal/routes.ts';
import type { RuntimeTokenVerifier } from './internal/tokens.ts';
import { RuntimeTokens } from './internal/tokens.ts';
import { errorMiddleware } from './http/errors.ts';
import { healthRoutes } from './http/health.ts';
import { listen } from './http/listen.ts';
import { mainApp } from './http/main-app.ts';
import { CodeCollector } from './code/collector.ts';
import { codeRoutes } from './code/routes.ts';
import { refusePanelHost } from './admin/panel-host.ts';
import { EGRESS_SOCKET, startEgress, type Egress } from './egress/start.ts';
import { Invoker, type Diagnoser, type ExecutionRecorder } from './invoke/proxy.ts';
import type { Logger } from './log.ts';
import { InstanceTracker } from './logs/instance.ts';
import { LogWriter } from './logs/writer.ts';
import { Metrics } from './metrics.ts';
import { KvGuard } from './kv/guard.ts';
import { quotaFor, recordedLimitFor } from './kv/settings.ts';
import { RecordedQuota } from './quotas/recorded.ts';
import type { Clock } from '@fnhost/core/clock.ts';
import { LocalScheduler, systemClock } from './scheduler/local.ts';
import { ScheduleLedger } from './scheduler/ledger.ts';
import { fireScheduled, missedRunsAtStart } from './scheduler/runs.ts';
import { scheduleRunRoutes } from './api/schedule-runs.ts';
import { sandboxStatus } from './sandbox/fallback.ts';
import { internalServer, type InternalListener } from './sandbox/internal-listener.ts';
import { SandboxGatewaySockets } from './sandbox/gateway-sockets.ts';
import { GATEWAY_SOCKET_NAME } from './sandbox/argv.ts';
import { runtimeBounds } from './internal/runtime-bounds.ts';
import { Sandboxes } from './sandbox/sandbox.ts';
import { loadSandboxSettings, type SandboxSettings } from './sandbox/settings.ts';
import { DEFAULT_RUNTIME_MAIN } from './executor/local.ts';
import { Background } from './background.ts';
import { PolicyFollower } from './policy/follower.ts';
import { boundListener, deriveBounds, serverOptions } from './http/connection-bounds.ts';
import { BodyBudget } from './invoke/body-budget.ts';
import { AsyncAcceptor, ASYNC_CALLS_PREFIX, ASYNC_INVOKE_PREFIX } from './async/acceptor.ts';
import { AsyncDispatcher } from './async/dispatcher.ts';
import { callbackPayloadOf } from './async/callback.ts';
import { AsyncCallbackSender, callbackMetricsText } from './async/callback-sender.ts';
import { policiesFor } from './egress/decision.ts';
import { asyncMetricsText } from './async/metrics.ts';
import { asyncRoutes } from './async/routes.ts';
import { readNofile, type NofileLimits } from './resources/descriptors.ts';
import { Refusals } from './resources/refusals.ts';
import { loadResourceSettings, type ResourceSettings } from './resources/settings.ts';

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
  /** The code store as the pods' fetches read it: through this replica's disk cache (cluster/code-cache.ts). */
  codeStoreForPods?(store: CodeStore): CodeStore;
  /** Digests a function's pods may fetch besides its current code: its replay throwaways' (cluster/start.ts). */
  extraCodeDigests?(functionId: string): Iterable<string>;
  /** The namespaces where functions may live. */
  namespaceGate: NamespaceGate;
  /** Every finished execution (status feedback). */
  onExecution(functionId: string, statusCode: number): void;
  /** A throwaway version's pod for one replay call (function:replay --code; cluster/throwaway.ts). */
  throwaway(fn: FunctionRecord): Promise<ThrowawayRuntime>;
  /** Extra Prometheus lines (watches, held calls, status writes). */
  metricsText(): string;
  /** `namespace/fn-<name>` of the function whose pod has this address (from the EndpointSlices), for refusal logs. */
  serviceOfAddress?(address: string): string | undefined;
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
  /** Bounds on connections, timeouts and body memory (default: from the environment, resources/settings.ts). */
  resources?: ResourceSettings;
  /** The descriptor limit the bounds are derived from (main.ts raises it first; default: read now). */
  nofile?: NofileLimits;
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
  /** Where background tasks report their caught failures (background.ts). */
  background: Background;
  /** The request bodies' memory budget (invoke/body-budget.ts). */
  bodyBudget: BodyBudget;
  /** A function's runtime token (what its runtime presents to /internal/v1). */
  runtimeToken(functionId: string): string;
  /** One machine's code GC (code/collector.ts). */
  codeCollector: CodeCollector | undefined;
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
  // Every background task's failure is caught, counted and logged here, never uncaught (background.ts).
  const background = new Background({ count: (task) => metrics.backgroundFailed(task), logger });
  const refusals = new Refusals({ metrics, logger });
  const resources = options.resources ?? loadResourceSettings(process.env);
  const bounds = deriveBounds((options.nofile ?? readNofile()).soft, resources, config.trustProxy);
  for (const warning of bounds.warnings) logger.warn(warning);
  const bodyBudget = new BodyBudget(resources.bodyMemoryBytes);
  const tokens = new RuntimeTokens();
  // One machine runs every execution here; cluster mode's replicas share them.
  const perFunction = runtimeBounds(config, metrics, logger, { allExecutionsHere: cluster === undefined, serviceOfAddress: cluster?.serviceOfAddress });
  // The writer's progress goes to the store with each batch, so another gateway can count what a kill took.
  const instances = new InstanceTracker({
    store: stores.instances,
    deadAfterMs: config.deadGatewayAfterMs,
    progressIntervalMs: config.logProgressIntervalMs,
    logger,
    countFailure: (task) => metrics.backgroundFailed(task),
    counts: (): { accepted: number; written: number } => ({ accepted: writer.owed, written: writer.written }),
  });
  const writer: LogWriter = new LogWriter({ logs: stores.logs, counters: stores.counters, logger, tracker: instances, countFailure: () => metrics.backgroundFailed('log_writer') });
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
    code: stores.code,
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
    loadTimeoutMs: config.loadTimeoutSeconds * 1000,
    clock,
    background,
  });
  const executor: Executor & Diagnoser & { readonly running: number } = cluster?.executor ?? local!;
  let functions!: FunctionService;
  const ledger = new ScheduleLedger({ store: stores.scheduleRuns, logger, startingDeadlineMs: config.scheduleStartingDeadlineSeconds * 1000 });
  const scheduler = new LocalScheduler({
    clock,
    logger,
    background,
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
    kvQuota: (fn) => quotaFor(fn, config.kv, cluster !== undefined),
  });
  if (config.benchDisableRecording) logger.warn('FNHOST_BENCH_DISABLE_RECORDING=1: executions are NOT recorded (benchmarks only)');
  let recorder: ExecutionRecorder = config.benchDisableRecording ? { record() {} } : writer;
  if (cluster !== undefined) {
    const inner = recorder;
    // Recorded-request bytes per namespace (./quotas/recorded.ts): past the quota, stored without bodies.
    const recordedQuota = new RecordedQuota({
      exchanges: stores.exchanges, now, metrics, logger,
      limitOf: (ns) => recordedLimitFor(ns, config.kv),
      functionsOf: (ns) => functions.all(ns),
    });
    recorder = {
      begin: () => inner.begin?.(),
      record(log, retention) {
        cluster.onExecution(log.function_id, log.status_code);
        const fn = log.exchange === undefined ? undefined : functions.byId(log.function_id);
        if (fn !== undefined && log.exchange !== undefined) return inner.record({ ...log, exchange: recordedQuota.admit(fn, log.exchange) }, retention);
        return inner.record(log, retention);
      },
    };
  }
  invoker = new Invoker({
    functions, executor, recorder, metrics, logger, trustProxy: config.trustProxy,
    scheduleToken: cluster === undefined ? undefined : (id, token) => cluster.scheduleToken(id, token),
    now,
    onScheduleRun: (fn, log, plannedAt) => ledger.ran(fn, log, plannedAt),
    bodies: { budget: bodyBudget, idleTimeoutMs: resources.bodyIdleTimeoutMs, refusals },
    executions: { began: (f, id) => perFunction.executions.began(f, id), ended: (f, id) => perFunction.executions.ended(f, id, now()) },
  });
  // Asynchronous invocation (async/, docs/async.md): accepted into the store, delivered by every gateway's dispatcher through the same run path.
  const asyncDispatcher = new AsyncDispatcher({
    store: stores.asyncCalls, functions, runner: invoker, settings: config.async, owner: instances.id, now, background,
    ended: (call, completion) => asyncCallbacks.deliver(call, callbackPayloadOf(call, completion)),
    onRecount: (c) => logger.warn('an async byte count was recounted', { count: c.id, was: c.counted, corrected_by: c.by }),
  });
  const asyncAcceptor = new AsyncAcceptor({
    store: stores.asyncCalls, functions, settings: config.async, now, logger, refusals,
    bodies: { budget: bodyBudget, idleTimeoutMs: resources.bodyIdleTimeoutMs, refusals },
    accepted: (functionId) => asyncDispatcher.wake(functionId),
  });
  // Cluster mode: several gateway replicas share the policies in MongoDB, so none may cache them.
  const policies = new PolicyCache(stores.policies, { shared: cluster !== undefined });
  // And a change written through another replica closes the tunnels it denies on this one too.
  const policyFollower = cluster === undefined ? undefined : new PolicyFollower({ store: stores.policies, changed: (scope) => policies.changed(scope), clock, background });

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
      }) + asyncMetricsText(asyncDispatcher, now()) + callbackMetricsText(asyncCallbacks) + (cluster?.metricsText() ?? '') + (egress?.proxy.metricsText() ?? ''),
  });
  // Who may do what: one machine, the admin token only; cluster mode, the namespace rule and Kubernetes RBAC too.
  const access = new AccessControl({ kube: cluster?.kubeAccess, gate: cluster?.namespaceGate });
  const api = [
    functionRoutes({ functions, invoker, writer, stores, now, access }),
    executionRoutes({ functions, writer, stores, now, access }),
    replayRoutes({ functions, invoker, writer, stores, now, access, throwaway: cluster?.throwaway ?? ((fn) => executor.throwaway!(fn)) }),
    asyncRoutes({ functions, store: stores.asyncCalls, now, access, requeued: (functionId) => asyncDispatcher.wake(functionId) }),
    scheduleRunRoutes({ functions, invoker, ledger, now, access, startingDeadlineSeconds: cluster === undefined ? config.scheduleStartingDeadlineSeconds : undefined }),
    policyRoutes({ policies, functions, now, access, check: () => (egress === undefined ? undefined : (id, target) => egress!.proxy.explain(id, target)) }),
    infoRoutes({ mode: cluster === undefined ? 'local' : 'cluster', default_namespace: functions.defaultNamespace, sandbox: sandbox === undefined ? undefined : { enabled: sandbox.enabled, warning: sandbox.warning } }),
    codeRoutes({ store: stores.code, functions, access, settings: config.code, bodyIdleTimeoutMs: resources.bodyIdleTimeoutMs, refusals, now }),
  ];
  const kvGuard = new KvGuard({ kv: stores.kv, settings: config.kv, cluster: cluster !== undefined, metrics, logger });
  // The machine itself (its interfaces, in cluster mode the node) and the platform's ranges: protected (docs/egress.md).
  const machine = new MachineAddresses({ platform: config.egressPlatform, extra: config.egressNodeAddresses });
  // Callbacks of async calls: decided as the function's own connections are (its policies, the protected ranges, the platform's listeners).
  const asyncCallbacks = new AsyncCallbackSender({
    store: stores.asyncCalls, settings: config.async.callbacks, refusals, background, now, pollMs: config.async.pollMs,
    policies: (functionId) => policiesFor(policies, functionId, machine.current()),
    callbackHosts: (functionId) => functions.byId(functionId)?.async?.callback_hosts,
    listener: () => {
      const m = machine.current();
      const tcp = egress?.tcpAddress === undefined ? [] : [Number(egress.tcpAddress.slice(egress.tcpAddress.lastIndexOf(':') + 1))];
      return { isMachine: (a) => m.isMachine(a), ports: [...listenerPorts(), ...tcp] };
    },
  });
  const internal = internalRoutes({ tokens: cluster?.runtimeTokens ?? tokens, functions, kv: stores.kv, kvGuard, insight: stores.insight, consoleCapture: config.consoleCapture, flushRecords: () => writer.flush(), policies, protection: () => machine.current(), now, connections: perFunction.internalConnections, console: perFunction.console, code: { store: cluster?.codeStoreForPods?.(stores.code) ?? stores.code, functions, extraDigests: cluster?.extraCodeDigests, bound: perFunction.codeFetches } });
  const app = mainApp({ health, api, internal, adminToken: options.adminToken, kubeAccess: cluster?.kubeAccess, trustProxy: config.trustProxy, logger });
  // The admin panel: its page, sign-in and session-authenticated API, on its own listener.
  const admin = adminPanel({ token: options.adminToken, now, sessionStore: stores.sessions, logger, background });
  const adminServer = createServer(serverOptions(bounds.admin), adminApp({ panel: admin, api, trustProxy: config.trustProxy, logger }).callback());
  const koa = app.callback();

  let shuttingDown = false;
  const server = createServer(serverOptions(bounds.main), (req, res) => {
    // While shutting down, calls still arriving on open keep-alive connections are
    // served (and recorded) with Connection: close, so each connection ends after it.
    if (shuttingDown) res.setHeader('connection', 'close');
    // Nothing is served on the panel's host name: its cookie jar is the panel's alone (admin/panel-host.ts).
    if (refusePanelHost(req, res)) return;
    if (req.url!.startsWith('/invoke/')) invoker.handleHttp(req, res);
    else if (req.url!.startsWith(ASYNC_INVOKE_PREFIX) || req.url!.startsWith(ASYNC_CALLS_PREFIX)) asyncAcceptor.handleHttp(req, res);
    else void koa(req, res);
  });
  const listenerPorts = () => [server, adminServer].flatMap((s) => { const a = s.address(); return a !== null && typeof a === 'object' ? [a.port] : []; });
  // Connections: a global bound from the descriptor limit minus the reserve, a per-client bound, header and request timeouts (http/connection-bounds.ts).
  boundListener(server, bounds.main, refusals, 'main');
  boundListener(adminServer, bounds.admin, refusals, 'admin');

  egress = await startEgress({
    config, logger, policies, machine,
    listenerPorts,
    tokens: cluster?.runtimeTokens ?? tokens,
    knows: (id) => functions.byId(id) !== undefined,
    local: local === undefined || sandboxes !== undefined ? undefined : unsandboxedEgress(join(config.dataDir, EGRESS_SOCKET)),
    sandboxed: local !== undefined && sandboxes !== undefined ? { runtimeSetting: Sandboxes.egressProxy } : undefined,
    guard: perFunction.egressConnections,
  });
  policyFollower?.start();
  // Sandboxed runtimes reach the internal API and the egress proxy on sockets of their own sandbox (sandbox/gateway-sockets.ts).
  const internalSocket: InternalListener | undefined = sandboxes === undefined ? undefined : internalServer(internal, errorMiddleware(logger));
  if (sandboxes !== undefined) {
    sandboxes.gatewaySockets = new SandboxGatewaySockets({
      internal: { name: GATEWAY_SOCKET_NAME, server: internalSocket!.server, guard: perFunction.internalConnections },
      egress: { name: EGRESS_SOCKET, server: egress.sandboxServer!, guard: perFunction.egressConnections },
    });
  }
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
  logger.info('connection bounds', {
    nofile: bounds.nofile, fd_reserve: bounds.reserve,
    max_connections: bounds.main.maxConnections, max_connections_per_client: bounds.main.perClient,
    admin_max_connections: bounds.admin.maxConnections, headers_timeout_ms: bounds.main.headersTimeoutMs,
    request_timeout_ms: bounds.main.requestTimeoutMs, body_idle_timeout_ms: resources.bodyIdleTimeoutMs, body_memory_bytes: resources.bodyMemoryBytes,
  });
  for (const late of lateRuns) scheduler.start(late.functionId, late.plannedAt);
  asyncDispatcher.start();
  asyncCallbacks.start();

  const sweep = async () => {
    const t = now();
    for (const fn of functions.all()) {
      try {
        await stores.logs.applyRetention(fn.function_id, fn.retention, t);
      } catch (err) {
        background.failed('retention_sweep', err, { function_id: fn.function_id });
      }
    }
    try {
      await stores.scheduleRuns.sweep(t);
    } catch (err) {
      background.failed('retention_sweep', err, { what: 'schedule ledger' });
    }
    try {
      await stores.asyncCalls.sweep(t);
    } catch (err) {
      background.failed('retention_sweep', err, { what: 'async calls' });
    }
    try {
      await stores.kv.sweep(t);
    } catch (err) {
      background.failed('retention_sweep', err, { what: 'kv' });
    }
  };
  // One machine's code GC (cluster mode has its own, beside the operator).
  const codeCollector = cluster !== undefined ? undefined : new CodeCollector({
    store: stores.code, references: () => functions.all().map((fn) => fn.code_ref), graceMs: config.code.gcGraceMs, intervalMs: config.code.gcIntervalMs, now, background, logger,
  });
  codeCollector?.start();
  const sweeper = setInterval(background.guard('retention_sweep', sweep), options.sweepIntervalMs ?? 3_600_000);
  sweeper.unref();
  // One sweep soon after start too, so a gateway restarted often still applies retention.
  const firstSweep = setTimeout(background.guard('retention_sweep', sweep), 5_000);
  firstSweep.unref();

  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      ready = false;
      clearInterval(sweeper);
      clearTimeout(firstSweep);
      await codeCollector?.close();
      await policyFollower?.close();
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
      // Async attempts under way end and are recorded; past the grace their leases expire and another gateway runs them.
      await asyncDispatcher.stop(Math.max(0, deadline - Date.now()));
      // Callbacks under way end; past the grace they stay pending on their calls (docs/async.md "Callbacks").
      await asyncCallbacks.stop(Math.max(0, deadline - Date.now()));
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

  return { url: listenUrl, server, app, adminUrl, adminServer, routers: [health, admin.router, ...api, internal], functions, executor, scheduler, ledger, writer, instances, invoker, metrics, egress, background, bodyBudget, runtimeToken: (id) => (cluster?.runtimeTokens ?? tokens).tokenFor(id), codeCollector, sweep, close };
}

/** Unsandboxed runtimes share the gateway's view: they reach the proxy's socket at its own path. */
function unsandboxedEgress(socketPath: string): { socketPath: string; runtimeSetting: string } {
  return { socketPath, runtimeSetting: `unix:${socketPath}` };
}
