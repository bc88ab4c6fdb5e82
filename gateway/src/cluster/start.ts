import { nextFireTime, type FunctionRecord } from '@fnhost/core';
import type { ClusterParts } from '../app.ts';
import type { Logger } from '../log.ts';
import type { Clock } from '@fnhost/core/clock.ts';
import { systemClock } from '../scheduler/local.ts';
import { EndpointIndex, type EndpointSlice } from './endpoints.ts';
import { ClusterExecutor, type PodStatusView } from './executor.ts';
import { FunctionCache, KubeFunctionStore, type HomeReader } from './functions.ts';
import { httpHealthProbe } from './probe.ts';
import { KubeApiError, KubeClient, paths } from './kube.ts';
import { Reflector } from './reflector.ts';
import type { FunctionResource } from '@fnhost/core/function-resource.ts';
import { cannotRunReason, derivedFunctionId, keyOf, serviceNameOf } from './resource.ts';
import { ConcurrencyMeter } from './concurrency.ts';
import { DEFAULT_TARGET_CONCURRENCY } from '@fnhost/core/scaling.ts';
import type { ClusterSettings } from './settings.ts';
import { ERROR_WINDOW_MS, StatusFeedback, type ErrorWindow, type StatusFields } from './status.ts';
import { DerivedTokens } from './tokens.ts';
import { KubeAccess } from '../access/kube-access.ts';
import { KubeNamespaceGate } from './namespace-gate.ts';
import { ClusterThrowaways } from './throwaway.ts';
import { LoadWatch } from './load-watch.ts';
import { DiskCodeCache } from './code-cache.ts';
import { loadFailureOf } from '../executor/load-check.ts';
import { loadFailureText } from '../functions/code-check.ts';
import { loadsAsModule } from '../executor/module-file.ts';
import { PoolClaimer, poolPhaseMetrics } from './pool/claimer.ts';
import { GENERIC_POD_SELECTOR, GenericPodIndex } from './pool/generic-pods.ts';
import type { PoolPod } from './pool/claim.ts';
import { ColdStartEventLimiter, coldStartEvent, coldStartNote } from './pool/events.ts';
import { deriveToken } from './resource.ts';

// Builds the cluster-mode parts of the gateway (ClusterParts in app.ts): two
// watches (Functions; EndpointSlices of the operator's Services), the caches
// they feed, the pod-picking executor with its hold queue (and the HTTP probe
// of starting pods it uses while calls are held), derived tokens and the
// status feedback. Resolves once both watches have listed, so /readyz
// turns 200 only when the gateway knows every function and its pods.

/** Only the EndpointSlices of Services the operator made (the Service's labels are copied onto its slices). */
export const ENDPOINT_SLICE_SELECTOR = 'app.kubernetes.io/managed-by=fnhost-operator';
/** How long the server keeps one watch open (it then ends it and the reflector resumes). */
const WATCH_TIMEOUT_SECONDS = 300;

export interface ClusterStartOptions {
  settings: ClusterSettings;
  logger: Logger;
  clock?: Clock;
  /** A KubeConfig (tests); default: $KUBECONFIG, ~/.kube/config, or the pod's service account. */
  kubeConfig?: import('@kubernetes/client-node').KubeConfig;
  /** The stored executions the error rate's window is counted from (LogStore.recentCounts); without it, this gateway's own calls. */
  recentCounts?: ErrorWindow['counts'];
  /** Each functionId's home (the store's FunctionIdHomeStore): who may be served under an id (docs/security.md "Tenancy"). */
  homes?: HomeReader;
}

export interface StartedCluster extends ClusterParts {
  client: KubeClient;
  cache: FunctionCache;
  endpoints: EndpointIndex;
  feedback: StatusFeedback;
  executorImpl: ClusterExecutor;
  throwaways: ClusterThrowaways;
}

function watchQuery(labelSelector?: string): Record<string, string | undefined> {
  return { allowWatchBookmarks: 'true', timeoutSeconds: String(WATCH_TIMEOUT_SECONDS), labelSelector };
}

export async function startCluster(options: ClusterStartOptions): Promise<StartedCluster> {
  const { settings, logger } = options;
  const clock = options.clock ?? systemClock;
  let kc = options.kubeConfig;
  if (kc === undefined) {
    const { KubeConfig } = await import('@kubernetes/client-node');
    kc = new KubeConfig();
    kc.loadFromDefault();
  }
  const client = new KubeClient(kc, { maxInFlight: settings.maxInFlight });
  const ns = settings.watchNamespace || undefined;

  let metrics: { backgroundFailed(task: string): void } | undefined;
  const cache = new FunctionCache({
    homes: options.homes,
    onHomeError: (functionId, err) => {
      metrics?.backgroundFailed('function_id_home_read');
      logger.warn('reading a functionId\'s home failed; the last known home stays, read again in 5 s', { functionId, error: (err as Error).message });
    },
  });
  const functionsWatch = new Reflector<FunctionResource>({
    name: 'functions',
    list: () => client.list<FunctionResource>(paths.functions(ns)),
    watch: (rv, onEvent, signal) => client.watch(paths.functions(ns), { ...watchQuery(), resourceVersion: rv }, onEvent, signal),
    onChange: (change) => cache.apply(change),
    clock,
    logger,
  });
  const endpoints = new EndpointIndex();
  const slicesWatch = new Reflector<EndpointSlice>({
    name: 'endpointslices',
    list: () => client.list<EndpointSlice>(paths.endpointSlices(ns), { labelSelector: ENDPOINT_SLICE_SELECTOR }),
    watch: (rv, onEvent, signal) => client.watch(paths.endpointSlices(ns), { ...watchQuery(ENDPOINT_SLICE_SELECTOR), resourceVersion: rv }, onEvent, signal),
    onChange: (change) => endpoints.apply(change),
    clock,
    logger,
  });

  const feedback = new StatusFeedback({
    clock,
    logger,
    intervalMs: settings.statusIntervalMs,
    window: options.recentCounts === undefined ? undefined : { ms: ERROR_WINDOW_MS, counts: options.recentCounts },
    concurrency: {
      meter: new ConcurrencyMeter(),
      gatewayId: settings.gatewayId,
      capacity: (functionId) => {
        const res = cache.resource(functionId);
        if (res?.spec.scaling == null) return undefined;
        const ready = endpoints.origins(keyOf(res.metadata.namespace ?? 'default', serviceNameOf(res.metadata.name))).length;
        return (res.spec.scaling.targetConcurrency ?? DEFAULT_TARGET_CONCURRENCY) * Math.max(1, ready);
      },
    },
    writer: {
      async write(functionId: string, fields: StatusFields): Promise<boolean> {
        const fn = cache.get(functionId);
        if (fn === undefined) return false;
        try {
          await client.request('PATCH', paths.functionStatus(fn.namespace, fn.name), { body: { status: fields }, contentType: 'application/merge-patch+json', query: { fieldManager: 'fnhost-gateway' } });
        } catch (err) {
          if (err instanceof KubeApiError && err.statusCode === 404) return false;
          throw err;
        }
        return true;
      },
    },
  });
  // The pool of generic pods (issue 32): a cold call claims and specializes one beside the wake.
  // Its generic pods are watched, so a cold call claims one without listing them first.
  const genericPods = settings.pool ? new GenericPodIndex() : undefined;
  const poolWatch =
    genericPods === undefined
      ? undefined
      : new Reflector<PoolPod>({
          name: 'pool-pods',
          list: () => client.list<PoolPod>(paths.pods(ns), { labelSelector: GENERIC_POD_SELECTOR }),
          watch: (rv, onEvent, signal) => client.watch(paths.pods(ns), { ...watchQuery(GENERIC_POD_SELECTOR), resourceVersion: rv }, onEvent, signal),
          onChange: (change) => genericPods.apply(change),
          clock,
          logger,
        });
  void poolWatch?.synced.then(() => genericPods!.markSynced());
  const claimer = settings.pool
    ? new PoolClaimer({ client, tokenKey: settings.tokenKey, runtimeToken: (id) => deriveToken(settings.tokenKey, 'runtime', id), clock, index: genericPods })
    : undefined;
  const coldEvents = new ColdStartEventLimiter();
  const executor = new ClusterExecutor({
    endpoints,
    clock,
    lookup: (id) => cache.get(id),
    runtimePods: async (fn) =>
      (await client.list<PodStatusView>(paths.pods(fn.namespace), { labelSelector: `fnhost.dev/function=${fn.name},fnhost.dev/role=runtime` })).items,
    wake: (fn) => feedback.wake(fn.function_id),
    cannotRun: (fn) => cannotRunReason(cache.resource(fn.function_id)),
    calls: { started: (id) => feedback.callStarted(id), ended: (id) => feedback.callEnded(id) },
    probe: httpHealthProbe,
    holdMs: settings.holdMs,
    maxHeld: settings.maxHeld,
    maxHeldPerFunction: settings.maxHeldPerFunction,
    pool:
      claimer === undefined
        ? undefined
        : async (fn) => {
            const res = cache.resource(fn.function_id);
            return res === undefined ? { fallback: 'pool_empty', detail: 'the Function is not in the cache' } : claimer.serve(res);
          },
    coldStart: (fn, path, reason, detail) => {
      const res = cache.resource(fn.function_id);
      logger.info('cold start', { function: `${fn.namespace}/${fn.name}`, path, reason, detail });
      if (res === undefined || reason === 'pool_off' || !coldEvents.allow(fn.function_id, clock.now())) return;
      client.request('POST', `/apis/events.k8s.io/v1/namespaces/${fn.namespace}/events`, { body: coldStartEvent(res, path, coldStartNote(path, reason, detail), clock.now(), settings.gatewayId), timeoutMs: 10_000 }).catch((err: Error) => {
        metrics?.backgroundFailed('cold_start_event');
        logger.warn('recording a cold start event failed', { function: `${fn.namespace}/${fn.name}`, error: err.message });
      });
    },
  });
  const tokens = new DerivedTokens(settings.tokenKey, cache);
  // Kubernetes tokens on the management API: reviews by the API server, through the same client (docs/cluster-mode.md).
  const kubeAccess = settings.kubeTokens ? new KubeAccess({ send: (path, body) => client.request('POST', path, { body, timeoutMs: 10_000 }) }) : undefined;
  const namespaceGate = new KubeNamespaceGate(settings.functionNamespaces, async (namespace) => {
    try {
      const found = await client.request<{ metadata?: { labels?: Record<string, string> } }>('GET', paths.namespace(namespace), { timeoutMs: 10_000 });
      return found.metadata?.labels ?? {};
    } catch (err) {
      if (err instanceof KubeApiError && err.statusCode === 404) return undefined;
      throw err;
    }
  });

  const throwaways = new ClusterThrowaways({ client, cache, endpoints, clock, logger });
  const codeCache = new DiskCodeCache({ dir: settings.codeCacheDir, maxBytes: settings.codeCacheMaxBytes, log: logger });
  // Code that fails to load in its pods, shown on the Function (docs/cluster-mode.md "Code that fails to load").
  const loadWatch = new LoadWatch({
    subscribe: (listener) => endpoints.subscribe(listener),
    startingPods: (service) => endpoints.startingPods(service),
    functionOf: (service) => {
      const [namespace, serviceName] = service.split('/') as [string, string];
      return serviceName.startsWith('fn-') ? cache.resourceByName(namespace, serviceName.slice(3)) : undefined;
    },
    ask: (origin, timeoutMs) => loadFailureOf({ origin }, timeoutMs),
    text: (fn, answer) => (typeof fn.spec.code === 'string' && fn.spec.code !== '' ? loadFailureText(answer.kind, answer.message, fn.spec.code, loadsAsModule(fn.spec.code)) : answer.message),
    report: async (fn, failure) => {
      await client.request('PATCH', paths.functionStatus(fn.metadata.namespace ?? 'default', fn.metadata.name), {
        body: { status: { loadFailure: failure } },
        contentType: 'application/merge-patch+json',
        query: { fieldManager: 'fnhost-gateway' },
      });
    },
    clock,
    logger,
  });

  functionsWatch.start();
  slicesWatch.start();
  // Not waited for: until its first list the claimer lists the pods itself.
  poolWatch?.start();
  await Promise.all([functionsWatch.synced, slicesWatch.synced]);
  loadWatch.start();
  // Leftovers of a gateway that died mid-replay, now and then every minute.
  throwaways.startSweeping();
  logger.info('cluster caches synced', { functions: cache.all().length, throwaways: cache.throwaways().length, endpoint_slices: slicesWatch.size, namespace: ns ?? '(all)', server: client.server });

  return {
    client,
    cache,
    endpoints,
    feedback,
    executorImpl: executor,
    throwaways,
    throwaway: (fn) => throwaways.start(fn),
    index: cache,
    functionStore: new KubeFunctionStore(client, cache, functionsWatch.synced),
    executor,
    schedules: {
      sync() {},
      nextRun(functionId: string): number | undefined {
        const fn: FunctionRecord | undefined = cache.get(functionId);
        if (fn?.schedule == null || !fn.schedule.enabled || !fn.active) return undefined;
        try {
          return nextFireTime(fn.schedule.cron, fn.schedule.timezone, clock.now());
        } catch {
          return undefined;
        }
      },
    },
    runtimeTokens: tokens,
    scheduleToken: (functionId, token) => tokens.verifySchedule(functionId, token),
    newFunctionId: derivedFunctionId,
    defaultNamespace: settings.defaultNamespace,
    kubeAccess,
    namespaceGate,
    codeStoreForPods: (store) => codeCache.wrap(store),
    extraCodeDigests: (functionId) => {
      const fn = cache.get(functionId);
      if (fn === undefined) return [];
      return cache.throwaways({ namespace: fn.namespace, name: fn.name }).flatMap((t) => (t.spec.codeRef?.digest ? [t.spec.codeRef.digest] : []));
    },
    onExecution: (functionId, statusCode) => feedback.record(functionId, statusCode),
    serviceOfAddress: (address) => endpoints.serviceOfAddress(address),
    bindMetrics(bound) {
      metrics = bound;
    },
    metricsText(): string {
      const lines: Array<[string, string, string, number]> = [
        ['fnhost_cluster_functions', 'gauge', 'Functions in the watch cache (throwaway versions not counted).', cache.all().length],
        ['fnhost_cluster_replay_throwaways_total', 'counter', 'Throwaway Functions created for replays with code (function:replay --code).', throwaways.created],
        ['fnhost_cluster_replay_throwaways_swept_total', 'counter', 'Throwaway Functions deleted past their expiry (left by a gateway that stopped mid-replay).', throwaways.swept],
        ['fnhost_cluster_watch_restarts_total', 'counter', 'Watches started again after a failure.', functionsWatch.restarts + slicesWatch.restarts + (poolWatch?.restarts ?? 0)],
        ['fnhost_cluster_held_calls', 'gauge', 'Calls waiting for a function to have a ready pod.', executor.held],
        ['fnhost_cluster_holds_total', 'counter', 'Calls that had to wait for a ready pod.', executor.holds],
        ['fnhost_cluster_hold_timeouts_total', 'counter', 'Held calls that got no pod within their bound (503).', executor.holdTimeouts],
        ['fnhost_cluster_hold_rejections_total', 'counter', 'Calls refused because too many were held (503).', executor.holdRejections],
        ['fnhost_cluster_pod_probes_total', 'counter', 'Health probes of starting pods while calls were held.', executor.probes],
        ['fnhost_cluster_unrunnable_calls_total', 'counter', 'Calls answered 503 at once because the function cannot run (its status, or its pods failed to load the code).', executor.unrunnable],
        ['fnhost_cluster_refused_pods_total', 'counter', 'Calls refused by a pod its slice still listed as ready (the call went to another pod or was held).', executor.refusals],
        ['fnhost_cluster_status_writes_total', 'counter', 'Function status writes (invocation feedback).', feedback.writes],
        ['fnhost_cluster_code_cache_hits_total', 'counter', 'Code fetches of pods served from this replica\'s disk cache.', codeCache.hits],
        ['fnhost_cluster_code_cache_misses_total', 'counter', 'Code fetches of pods that read the blob from the store (then cached).', codeCache.misses],
        ['fnhost_cluster_load_questions_total', 'counter', 'Starting runtime pods asked how their module load ended (load watch).', loadWatch.asked],
        ['fnhost_cluster_load_failures_reported_total', 'counter', 'Module load failures of runtime pods written into their Function\'s status.loadFailure.', loadWatch.reported],
        ['fnhost_cluster_api_requests_total', 'counter', 'Kubernetes API requests (not watches).', client.requests],
        ['fnhost_cluster_api_throttled_total', 'counter', 'API requests answered 429 and retried.', client.throttled],
        ['fnhost_cluster_token_reviews_total', 'counter', 'TokenReviews sent (Kubernetes tokens on the management API; cached answers not counted).', kubeAccess?.tokenReviews ?? 0],
        ['fnhost_cluster_access_reviews_total', 'counter', 'SubjectAccessReviews sent (cached answers not counted).', kubeAccess?.accessReviews ?? 0],
      ];
      const cold =
        '# HELP fnhost_cluster_cold_starts_total Cold starts (a call held for a function with no ready pod) by the path that served it: a pod specialized from the pool, or the function\'s Deployment.\n' +
        '# TYPE fnhost_cluster_cold_starts_total counter\n' +
        `fnhost_cluster_cold_starts_total{path="pool"} ${executor.coldStarts.pool}\n` +
        `fnhost_cluster_cold_starts_total{path="deployment"} ${executor.coldStarts.deployment}\n` +
        '# HELP fnhost_cluster_pool_fallbacks_total Cold starts the pool could not serve, by reason (the Deployment path served them).\n' +
        '# TYPE fnhost_cluster_pool_fallbacks_total counter\n' +
        [...executor.poolFallbacks].map(([reason, n]) => `fnhost_cluster_pool_fallbacks_total{reason="${reason}"} ${n}\n`).join('') +
        '# HELP fnhost_cluster_pool_claim_conflicts_total Pool pods another gateway replica claimed first (409 on the conditional patch).\n' +
        '# TYPE fnhost_cluster_pool_claim_conflicts_total counter\n' +
        `fnhost_cluster_pool_claim_conflicts_total ${claimer?.conflicts ?? 0}\n` +
        (claimer === undefined ? '' : poolPhaseMetrics(claimer.phases));
      const releases =
        '# HELP fnhost_cluster_hold_releases_total Held calls sent on to a pod, by what found it first: probe (the gateway probing a starting pod) or slice (its EndpointSlice said ready).\n' +
        '# TYPE fnhost_cluster_hold_releases_total counter\n' +
        `fnhost_cluster_hold_releases_total{by="probe"} ${executor.releasedByProbe}\n` +
        `fnhost_cluster_hold_releases_total{by="slice"} ${executor.releasedBySlice}\n` +
        `fnhost_cluster_hold_releases_total{by="pool"} ${executor.releasedByPool}\n`;
      return lines.map(([name, type, help, value]) => `# HELP ${name} ${help}\n# TYPE ${name} ${type}\n${name} ${value}\n`).join('') + releases + cold;
    },
    async close(): Promise<void> {
      throwaways.close();
      loadWatch.close();
      functionsWatch.stop();
      slicesWatch.stop();
      poolWatch?.stop();
      await feedback.close();
    },
  };
}

