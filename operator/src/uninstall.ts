import { KubeConfig } from '@kubernetes/client-node';
import type { Clock } from '@fnhost/core/clock.ts';
import { KubeClient, isNotFound, paths } from './kube.ts';
import { jsonLogger, type Logger } from './log.ts';
import { MANAGED_BY } from './names.ts';

// node operator/src/uninstall.ts: the chart's pre-delete hook (helm uninstall
// runs it while the operator still runs). Functions go first, in an order
// that never leaves a function pod without its NetworkPolicy nor a CronJob
// firing at a gateway that is gone:
//   1. every Function is made inactive: the operator scales its Deployment
//      to zero and suspends its CronJob; running schedule Jobs are deleted;
//   2. once no function pod is left, every Function is deleted: the
//      operator's finalizer removes its logs and lets it go, and the garbage
//      collector removes what it owned (the NetworkPolicy with the last one).
// A step that does not finish within the timeout fails the hook, naming what
// is left, and helm uninstall stops before removing the operator
// (docs/install.md, "Uninstalling").

export class UninstallError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UninstallError';
  }
}

interface Named {
  metadata: { name: string; namespace?: string };
}
interface FunctionItem extends Named {
  spec?: { active?: boolean };
}

const FUNCTION_OBJECTS = `app.kubernetes.io/managed-by=${MANAGED_BY}`;
/**
 * Function pods: not the generic pods of the namespace's pool (pool.ts), which run no user code and
 * go with the last Function (owner references); a pod specialized for a function is deleted by the
 * operator once its function is inactive, so it is waited for here.
 */
const FUNCTION_PODS = `${FUNCTION_OBJECTS},fnhost.dev/role!=pool`;

export interface UninstallOptions {
  /** "" for every namespace. */
  watchNamespace: string;
  timeoutMs: number;
  pollMs: number;
  clock: Clock;
  log: Logger;
}

const describe = (items: Named[]) => items.slice(0, 10).map((i) => `${i.metadata.namespace}/${i.metadata.name}`).join(', ') + (items.length > 10 ? `, and ${items.length - 10} more` : '');

export async function uninstallFunctions(client: KubeClient, options: UninstallOptions): Promise<void> {
  const { clock, log } = options;
  const deadline = clock.now() + options.timeoutMs;
  const listFunctions = async () => (await client.request<{ items: FunctionItem[] }>('GET', paths.functions(options.watchNamespace || undefined))).items;
  const listIn = async (kind: 'pods' | 'jobs', namespaces: string[]) => {
    const found: Named[] = [];
    for (const ns of namespaces) {
      const path = kind === 'pods' ? paths.pods(ns) : `/apis/batch/v1/namespaces/${ns}/jobs`;
      found.push(...(await client.request<{ items: Named[] }>('GET', path, { query: { labelSelector: kind === 'pods' ? FUNCTION_PODS : FUNCTION_OBJECTS } })).items);
    }
    return found;
  };
  const waitUntil = async (what: string, left: () => Promise<Named[]>) => {
    for (;;) {
      const items = await left();
      if (items.length === 0) return;
      if (clock.now() >= deadline) throw new UninstallError(`${what}: still there after ${Math.round(options.timeoutMs / 1000)} s: ${describe(items)}. Is the operator running? (kubectl logs deploy/<release>-fnhost-operator)`);
      await new Promise((r) => clock.setTimeout(() => r(undefined), options.pollMs));
    }
  };

  const functions = await listFunctions();
  const namespaces = [...new Set(functions.map((f) => f.metadata.namespace!))];
  log.info('uninstall: removing Functions before the platform', { functions: functions.length, namespaces });
  if (functions.length === 0) return;

  for (const fn of functions) {
    if (fn.spec?.active === false) continue;
    try {
      await client.mergePatch(paths.function(fn.metadata.namespace!, fn.metadata.name), { spec: { active: false } });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
  for (const job of await listIn('jobs', namespaces)) {
    await client
      .request('DELETE', `/apis/batch/v1/namespaces/${job.metadata.namespace}/jobs/${job.metadata.name}`, { body: { kind: 'DeleteOptions', apiVersion: 'v1', propagationPolicy: 'Foreground' } })
      .catch((err: unknown) => { if (!isNotFound(err)) throw err; });
  }
  await waitUntil('function pods (scaled to zero by the operator)', () => listIn('pods', namespaces));
  log.info('uninstall: no function pod left; deleting the Functions');

  for (const fn of functions) await client.delete(paths.function(fn.metadata.namespace!, fn.metadata.name));
  await waitUntil('Functions (released by the operator\'s finalizer)', listFunctions);
  log.info('uninstall: every Function is gone');
}

if (import.meta.main) {
  const log = jsonLogger('info', { component: 'fnhost-uninstall' });
  const kc = new KubeConfig();
  kc.loadFromDefault();
  const seconds = Number(process.env.FNHOST_UNINSTALL_TIMEOUT_SECONDS ?? '240');
  uninstallFunctions(new KubeClient(kc, { maxInFlight: 4 }), {
    watchNamespace: process.env.FNHOST_WATCH_NAMESPACE ?? '',
    timeoutMs: (Number.isFinite(seconds) && seconds > 0 ? seconds : 240) * 1000,
    pollMs: 2_000,
    // Timers that keep the process alive (the operator's systemClock unrefs them): the hook's pod
    // must not exit 0 while it waits.
    clock: { now: () => Date.now(), setTimeout: (fn, ms) => setTimeout(fn, ms), clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout) },
    log,
  }).then(
    () => process.exit(0),
    (err: unknown) => {
      log.error('uninstall: Functions could not be removed first; helm uninstall stops here', { error: (err as Error).message });
      process.exit(1);
    },
  );
}
