import { LABEL_ROLE, ownedNames, ROLE_SCHEDULE } from '../names.ts';
import type { FunctionResource } from '@fnhost/core/function-resource.ts';
import type { KubeObject, Settings } from '../types.ts';
import { containerSecurityContext, effectiveSpec, hostAliasesOf, ownedMeta, podSecurityContext, SCAN_SKIPS } from './common.ts';
import { SCHEDULE_TOKEN_KEY } from './secret.ts';

/** The header the gateway checks to accept a scheduled trigger (docs/operator.md). */
export const SCHEDULE_TOKEN_HEADER = 'x-fnhost-schedule-token';
/** The planned time of the run (ISO 8601), for the gateway's ledger of scheduled runs (docs/operator.md). */
export const SCHEDULED_TIME_HEADER = 'x-fnhost-scheduled-time';
/**
 * The pod label holding its Job's name. The CronJob controller names each Job
 * `<cronjob>-<scheduled time in minutes since the epoch>`, so the job knows
 * which planned run it is without reading the API server.
 */
export const JOB_NAME_LABEL = 'batch.kubernetes.io/job-name';

// The job's whole program, run by the runtime image's own node: no extra image.
// It calls the gateway (so the run is logged like any other), prints the
// outcome, and fails the Job when the gateway or the function did not answer 2xx.
// The schedule token is a file of the Secret (FNHOST_SCHEDULE_TOKEN_FILE), never an environment variable.
// The planned time comes from the Job's name (FNHOST_JOB_NAME, JOB_NAME_LABEL); a name
// without it (a Job made by hand) sends none, and the gateway takes the newest planned time.
export const INVOKE_SCRIPT = [
  "const url = process.env.FNHOST_INVOKE_URL;",
  "const timeout = Number(process.env.FNHOST_INVOKE_TIMEOUT_MS);",
  "const minute = /-(\\d{1,12})$/.exec(process.env.FNHOST_JOB_NAME || '');",
  "let token;",
  "try { token = require('node:fs').readFileSync(process.env.FNHOST_SCHEDULE_TOKEN_FILE, 'utf8').trim(); }",
  "catch (err) { console.error(JSON.stringify({ msg: 'scheduled invocation failed', url, error: 'cannot read FNHOST_SCHEDULE_TOKEN_FILE (' + (err && err.code) + ')' })); process.exit(1); }",
  "const headers = { 'content-type': 'application/json', 'x-fnhost-schedule-token': token };",
  "if (minute) headers['x-fnhost-scheduled-time'] = new Date(Number(minute[1]) * 60000).toISOString();",
  "fetch(url, { method: 'POST', headers, body: '{}', signal: AbortSignal.timeout(timeout) })",
  "  .then(async (res) => { const body = (await res.text()).slice(0, 500); console.log(JSON.stringify({ msg: 'scheduled invocation', url, status: res.status, body })); process.exitCode = res.ok ? 0 : 1; })",
  "  .catch((err) => { console.error(JSON.stringify({ msg: 'scheduled invocation failed', url, error: String(err && err.message || err) })); process.exitCode = 1; });",
].join('\n');

/** Where the job pod mounts its Secret's schedule token (only that key). */
export const SCHEDULE_TOKEN_DIR = '/fnhost/schedule';

/** null when the Function has no schedule: the CronJob must not exist. */
export function cronJobFor(fn: FunctionResource, settings: Settings): KubeObject | null {
  const e = effectiveSpec(fn);
  if (!e.schedule) return null;
  const names = ownedNames(fn.metadata.name);
  const invokeUrl = `${settings.gatewayUrl}/invoke/${e.functionId}`;
  return {
    apiVersion: 'batch/v1',
    kind: 'CronJob',
    metadata: { ...ownedMeta(fn, names.cronJob), annotations: { ...SCAN_SKIPS } },
    spec: {
      schedule: e.schedule.cron,
      timeZone: e.schedule.timezone,
      // A run still going when the next is due is not doubled up.
      concurrencyPolicy: 'Forbid',
      // After an outage a missed run still starts within 5 minutes, never later,
      // and the CronJob controller never gives up on "too many missed starts".
      startingDeadlineSeconds: 300,
      suspend: e.schedule.suspend || !e.active,
      successfulJobsHistoryLimit: 1,
      failedJobsHistoryLimit: 3,
      jobTemplate: {
        metadata: { labels: ownedMeta(fn, names.cronJob).labels },
        spec: {
          // At most once per tick: retrying could run a non-idempotent handler twice.
          backoffLimit: 0,
          activeDeadlineSeconds: e.timeoutSeconds + 60,
          ttlSecondsAfterFinished: 3600,
          template: {
            metadata: { labels: { ...ownedMeta(fn, names.cronJob).labels, [LABEL_ROLE]: ROLE_SCHEDULE } },
            spec: {
              restartPolicy: 'Never',
              automountServiceAccountToken: false,
              enableServiceLinks: false,
              ...hostAliasesOf(settings),
              // fsGroup: the token file (mode 0440) belongs to the pod's group, readable by its uid.
              securityContext: { ...podSecurityContext(settings), fsGroup: settings.runAsUser },
              containers: [
                {
                  name: 'invoke',
                  image: settings.runtimeImage,
                  imagePullPolicy: settings.imagePullPolicy,
                  command: ['node', '-e', INVOKE_SCRIPT],
                  env: [
                    { name: 'FNHOST_INVOKE_URL', value: invokeUrl },
                    { name: 'FNHOST_INVOKE_TIMEOUT_MS', value: String((e.timeoutSeconds + 30) * 1000) },
                    { name: 'FNHOST_SCHEDULE_TOKEN_FILE', value: `${SCHEDULE_TOKEN_DIR}/${SCHEDULE_TOKEN_KEY}` },
                    { name: 'FNHOST_JOB_NAME', valueFrom: { fieldRef: { fieldPath: `metadata.labels['${JOB_NAME_LABEL}']` } } },
                  ],
                  resources: { requests: { cpu: '10m', memory: '96Mi' }, limits: { cpu: settings.cpuLimit, memory: '96Mi' } },
                  securityContext: containerSecurityContext(),
                  volumeMounts: [{ name: 'schedule-token', mountPath: SCHEDULE_TOKEN_DIR, readOnly: true }],
                },
              ],
              // Only the schedule token: the runtime token of the same Secret stays out of this pod.
              volumes: [{ name: 'schedule-token', secret: { secretName: names.secret, items: [{ key: SCHEDULE_TOKEN_KEY, path: SCHEDULE_TOKEN_KEY }], defaultMode: 0o440 } }],
            },
          },
        },
      },
    },
  };
}
