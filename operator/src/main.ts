import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { systemClock } from './clock.ts';
import { Controller, describe } from './controller.ts';
import { startHttpServer } from './http.ts';
import { KubeClient, paths } from './kube.ts';
import { LeaderElector } from './leader.ts';
import { jsonLogger } from './log.ts';
import type { Logger } from './log.ts';
import { openMongoStoresPatiently } from '@fnhost/core/store/mongo/open-patiently.ts';
import { logProcessWarnings } from '@fnhost/core/process-warnings.ts';
import { secretDigest } from '@fnhost/core/bearer.ts';
import { resolveSecretFiles, SecretFileError } from '@fnhost/core/secret-files.ts';
import type { CodeStore, Stores } from '@fnhost/core';
import type { FunctionResource } from '@fnhost/core/function-resource.ts';
import { CodeCollector, type ReplicaSetView } from './code-gc.ts';
import { NoopLogCleaner, StoreLogCleaner } from './logcleaner.ts';
import type { LogCleaner } from './logcleaner.ts';
import { Metrics } from './metrics.ts';
import { Reconciler } from './reconciler.ts';
import { SettingsError, loadSettings } from './settings.ts';
import { resolveGatewayHostAliases } from './gateway-hosts.ts';
import type { Settings } from './types.ts';
import { lookup } from 'node:dns/promises';
import { makeCodeChecker } from './validate.ts';
import { EventRecorder } from './events.ts';
import { FunctionIdHomes, FunctionIdIndex, MemoryFunctionIdHomeStore } from './identities.ts';

// node operator/src/main.ts — uses $KUBECONFIG, ~/.kube/config, or the
// in-cluster service account, in that order (client-node's loadFromDefault).

/**
 * The gateway's addresses for function pods' /etc/hosts (gateway-hosts.ts). The
 * gateway's Service may be created in the same install as the operator, so a name
 * that does not resolve yet is asked again for a minute; with the NetworkPolicy on,
 * pods could not reach the gateway without it, so the operator does not start.
 */
async function gatewayHostAliases(settings: Settings, log: Logger): Promise<Settings['gatewayHostAliases']> {
  const lookupIp = async (host: string) => (await lookup(host, { family: 0 })).address;
  for (let attempt = 1; ; attempt++) {
    const { aliases, failed } = await resolveGatewayHostAliases(settings, lookupIp);
    if (failed.length === 0) {
      if (aliases.length > 0) log.info('gateway addresses for function pods', { hostAliases: aliases });
      return aliases;
    }
    if (attempt >= 30) {
      const names = failed.map((f) => `${f.host} (${f.error})`).join(', ');
      if (settings.networkPolicy !== undefined) {
        log.error(`cannot resolve the gateway's host names for function pods, which get no DNS under FNHOST_NETWORK_POLICY: ${names}`);
        process.exit(2);
      }
      log.warn(`cannot resolve the gateway's host names for function pods; they will use DNS: ${names}`);
      return aliases;
    }
    await new Promise((r) => setTimeout(r, 2_000));
  }
}

/** Settings that may come from a file instead (NAME_FILE; docs/operator.md). */
const OPERATOR_SECRET_SETTINGS = ['FNHOST_TOKEN_KEY', 'MONGODB_URL', 'FNHOST_METRICS_TOKEN'] as const;

async function main(): Promise<void> {
  let settings;
  let env: NodeJS.ProcessEnv;
  try {
    env = resolveSecretFiles(process.env, OPERATOR_SECRET_SETTINGS);
    settings = loadSettings(env);
  } catch (err) {
    if (err instanceof SettingsError || err instanceof SecretFileError) {
      process.stderr.write(JSON.stringify({ time: new Date().toISOString(), level: 'error', msg: `invalid setting: ${err.message}` }) + '\n');
      process.exit(2);
    }
    throw err;
  }
  const log = jsonLogger(settings.logLevel, { component: 'fnhost-operator', identity: settings.identity });
  logProcessWarnings((msg, fields) => log.warn(msg, fields));
  settings.gatewayHostAliases = await gatewayHostAliases(settings, log);
  const metrics = new Metrics();
  const kc = new KubeConfig();
  kc.loadFromDefault();
  const client = new KubeClient(kc, {
    maxInFlight: settings.maxInFlight,
    metrics: {
      onResponse: (method, status) => metrics.inc('fnhost_operator_api_requests_total', 'API server requests by method and status.', { method, code: String(status) }),
      onThrottled: () => metrics.inc('fnhost_operator_api_throttled_total', 'Requests the API server answered 429 (retried after a backoff).'),
    },
  });
  metrics.gauge('fnhost_operator_api_inflight', 'API requests in flight.', () => client.inFlight);
  // The finalizer's cleanup: a deleted Function's execution logs and counter
  // in the platform's MongoDB (the gateway's MONGODB_URL); without it, nothing
  // outside the cluster is cleaned (NoopLogCleaner, for clusters without a store).
  let stores: Stores | undefined;
  let logCleaner: LogCleaner = new NoopLogCleaner();
  // Until MongoDB answers, /readyz says so (and the log, at every attempt): the operator waits for
  // it rather than exiting, so a missing MongoDB is a clear reason, not a crash loop.
  let waitingFor: string | undefined = env.MONGODB_URL ? 'connecting to MongoDB' : undefined;
  let leading = false;
  let controller: Controller | undefined;
  const server = await startHttpServer(settings.port, process.env.FNHOST_OPERATOR_HOST || '0.0.0.0', {
    ready: () => waitingFor === undefined && (!leading || controller?.synced === true),
    notReadyReason: () => waitingFor ?? 'informers not synced',
    metrics,
    metricsTokenDigest: settings.metricsToken === undefined ? undefined : secretDigest(settings.metricsToken),
  });
  if (env.MONGODB_URL) {
    stores = await openMongoStoresPatiently({ url: env.MONGODB_URL, log, onWaiting: (reason) => { waitingFor = reason; } });
    waitingFor = undefined;
    logCleaner = new StoreLogCleaner(stores.logs, stores.counters, stores.scheduleRuns, stores.asyncCalls);
  }
  const events = new EventRecorder({ client, clock: systemClock, log, instance: settings.identity });
  const identities = new FunctionIdIndex();
  // Each functionId's home (docs/security.md "Tenancy"): in MongoDB with the chart; without a store, for this process's life.
  if (stores === undefined) log.warn('no MONGODB_URL: functionId homes are kept in memory only, so an operator restart forgets them');
  const homes = new FunctionIdHomes({ store: stores?.homes ?? new MemoryFunctionIdHomeStore(), index: identities, clock: systemClock, grants: settings.functionIdGrants === true });
  // Referenced code (spec.codeRef) lives in the store's code bucket (GridFS): whether a namespace uploaded a digest, and GC.
  const codeStore: CodeStore | undefined = stores?.code;
  const codePresence = codeStore === undefined ? undefined : async (namespace: string, digest: string) => (await codeStore.stat(namespace, digest)) !== null;
  const reconciler = new Reconciler({ client, settings, codeChecker: makeCodeChecker(), logCleaner, clock: systemClock, log, events, homes, codePresence });
  const codeCollector =
    codeStore === undefined
      ? undefined
      : new CodeCollector({
          store: codeStore,
          listFunctions: async () => (await client.request<{ items: FunctionResource[] }>('GET', paths.functions())).items ?? [],
          listReplicaSets: async () => (await client.request<{ items: ReplicaSetView[] }>('GET', '/apis/apps/v1/replicasets', { query: { labelSelector: 'app.kubernetes.io/managed-by=fnhost-operator' } })).items ?? [],
          clock: systemClock,
          log,
          graceMs: settings.codeGcGraceSeconds * 1000,
        });
  if (codeCollector !== undefined) {
    metrics.gauge('fnhost_operator_code_gc_deleted_total', 'Unreferenced code blobs deleted by code GC.', () => codeCollector.deleted);
    metrics.gauge('fnhost_operator_code_gc_failures_total', 'Code GC passes that failed (nothing deleted).', () => codeCollector.failures);
  }
  const ctl = new Controller({ client, reconciler, clock: systemClock, log, metrics, workers: settings.workers, watchNamespace: settings.watchNamespace, identities });
  controller = ctl;
  metrics.gauge('fnhost_operator_events_posted_total', 'Kubernetes Events posted on Functions.', () => events.posted);
  metrics.gauge('fnhost_operator_events_dropped_total', 'Events not posted: the same one within 10 minutes, or over the per-Function or global rate bound.', () => events.dropped);
  const elector = new LeaderElector(
    client,
    {
      namespace: settings.leaseNamespace,
      name: settings.leaseName,
      identity: settings.identity,
      leaseDurationSeconds: settings.leaseDurationSeconds,
      renewDeadlineSeconds: settings.renewDeadlineSeconds,
      retryPeriodSeconds: settings.retryPeriodSeconds,
    },
    systemClock,
    log,
  );
  metrics.gauge('fnhost_operator_leader', '1 while this replica holds the Lease.', () => (leading ? 1 : 0));
  log.info('operator started', {
    port: (server.address() as AddressInfo).port,
    image: settings.runtimeImage,
    gatewayUrl: settings.gatewayUrl,
    watchNamespace: settings.watchNamespace || '(all)',
    leaderElection: settings.leaderElection,
    logCleaner: logCleaner.name,
    server: kc.getCurrentCluster()?.server,
  });

  let stopping = false;
  const shutdown = async (signal: string, code = 0) => {
    if (stopping) return;
    stopping = true;
    log.info('stopping', { signal });
    await ctl.stop().catch(() => {});
    await elector.release();
    await stores?.close().catch(() => {});
    server.close();
    process.exit(code);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));

  const lead = async () => {
    leading = true;
    // Only the leader collects code, and only when it sees every namespace's references (code-gc.ts).
    if (codeCollector !== undefined && !settings.watchNamespace) codeCollector.start(settings.codeGcIntervalSeconds * 1000);
    else if (codeCollector !== undefined) log.warn('code GC is off: this operator watches one namespace and cannot see the references of the others', { watchNamespace: settings.watchNamespace });
    await ctl.start();
  };
  if (!settings.leaderElection) {
    await lead();
    return;
  }
  await elector.run(lead, (reason) => {
    log.error('lost leadership; exiting so that a fresh process waits for the Lease', { reason });
    void shutdown('leadership lost', 1);
  });
}

main().catch((err) => {
  process.stderr.write(JSON.stringify({ time: new Date().toISOString(), level: 'error', msg: 'operator failed', error: describe(err) }) + '\n');
  process.exit(1);
});
