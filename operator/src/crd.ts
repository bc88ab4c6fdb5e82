import { limits, MAX_KV_QUOTA_BYTES, MAX_KV_QUOTA_KEYS, MAX_ASYNC_RETRIES, MIN_ASYNC_MAX_AGE_SECONDS, MAX_ASYNC_MAX_AGE_SECONDS, MAX_CALLBACK_HOSTS } from '@fnhost/core';
import { MAX_CRONJOB_NAME_LENGTH } from './names.ts';
import * as scale from '@fnhost/core/scaling.ts';

// The Function CRD as data, built from core's limits so that the schema, the
// gateway and the CLI agree. crds/fnhost.dev_functions.yaml is this object
// written by `node operator/src/crd-gen.ts`; a unit test keeps them equal.

// Cron fields as the CronJob controller and cron-parser both accept them:
// `*`, numbers, ranges, steps, lists; month and weekday names; `?` in the day fields.
function cronField(num: string, question = false): string {
  const element = `(\\*${question ? '|\\?' : ''}|${num}(-${num})?)(/[1-9][0-9]*)?`;
  return `${element}(,${element})*`;
}
const CRON_FIELDS: Array<{ name: string; pattern: string; allowed: string }> = [
  { name: 'minute', pattern: cronField('[0-5]?[0-9]'), allowed: '0-59' },
  { name: 'hour', pattern: cronField('([01]?[0-9]|2[0-3])'), allowed: '0-23' },
  { name: 'day-of-month', pattern: cronField('(0?[1-9]|[12][0-9]|3[01])', true), allowed: '1-31' },
  { name: 'month', pattern: cronField('(0?[1-9]|1[0-2]|(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec))'), allowed: '1-12 or JAN-DEC' },
  { name: 'day-of-week', pattern: cronField('([0-7]|(?i:sun|mon|tue|wed|thu|fri|sat))', true), allowed: '0-7 (0 and 7 are Sunday) or SUN-SAT' },
];
const FIVE_FIELDS = '^\\s*\\S+\\s+\\S+\\s+\\S+\\s+\\S+\\s+\\S+\\s*$';

function cronRules() {
  const rules = [
    {
      rule: `self.cron.matches(r'${FIVE_FIELDS}')`,
      message: 'schedule.cron must have exactly five fields "minute hour day-of-month month day-of-week", for example "*/5 * * * *"',
      reason: 'FieldValueInvalid',
      fieldPath: '.cron',
    },
  ];
  CRON_FIELDS.forEach((f, i) => {
    const parts = CRON_FIELDS.map((_, j) => (j === i ? `(${f.pattern})` : '\\S+'));
    rules.push({
      // Only judged when there are five fields, so that one mistake gives one message.
      rule: `!self.cron.matches(r'${FIVE_FIELDS}') || self.cron.matches(r'^\\s*${parts.join('\\s+')}\\s*$')`,
      message: `schedule.cron: the ${f.name} field (field ${i + 1}) is invalid: use *, numbers ${f.allowed}, ranges a-b, steps */n or a-b/n, and lists a,b`,
      reason: 'FieldValueInvalid',
      fieldPath: '.cron',
    });
  });
  return rules;
}

const DNS_SUBDOMAIN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';
const UUID = '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$';

function keyRef(what: string) {
  return {
    type: 'object',
    description: `A key of a ${what} in the Function's namespace, as in a Pod's env.`,
    required: ['name', 'key'],
    properties: {
      name: { type: 'string', minLength: 1, maxLength: 253, pattern: DNS_SUBDOMAIN, description: `Name of the ${what} (a DNS subdomain).` },
      key: { type: 'string', minLength: 1, maxLength: 253, pattern: '^[-._a-zA-Z0-9]+$', description: `Key within the ${what}: letters, digits, -, _ and .` },
      optional: { type: 'boolean', description: `Start the function even when the ${what} or key is missing.` },
    },
  };
}

function specSchema() {
  return {
    type: 'object',
    description: 'What the function is and how it runs.',
    'x-kubernetes-validations': [
      {
        rule: 'has(self.code) != has(self.codeRef)',
        message: 'exactly one of spec.code (the module inline) and spec.codeRef ({digest, size} of code uploaded to the platform: fnhost bundle --push) is required',
        reason: 'FieldValueRequired',
      },
      {
        rule: 'has(oldSelf.functionId) == has(self.functionId) && (!has(self.functionId) || self.functionId == oldSelf.functionId)',
        message: "spec.functionId is fixed when the Function is created and cannot be added, changed or removed later: a new identity would orphan the function's stored execution logs",
        reason: 'FieldValueForbidden',
      },
    ],
    properties: {
      code: {
        type: 'string',
        minLength: 1,
        maxLength: limits.MAX_CODE_BYTES,
        description: `The module source: ESM (export default or a named \`handler\`) or CommonJS (module.exports); a handler that imports packages is bundled into one module by \`fnhost bundle <file> -o out.mjs\`. At most ${limits.MAX_CODE_BYTES} characters (and ${limits.MAX_CODE_BYTES / 1024} KiB as UTF-8, checked by the operator), below the 1 MiB a ConfigMap holds. Over ~200 KiB apply with \`kubectl apply --server-side\`: client-side apply copies the object into an annotation capped at 256 KiB.`,
      },
      codeRef: {
        type: 'object',
        description: `Instead of code: the module held in the platform's code store by digest (MongoDB GridFS), for bundles over ${limits.INLINE_CODE_BYTES / 1024} KiB and up to ${limits.MAX_CODE_REF_BYTES / 1024 / 1024} MiB. Upload it first from the same namespace (fnhost bundle <file> --push, or PUT /api/v1/code/{digest}); until then the Function is Ready=False CodeMissing. The runtime pods fetch it from the gateway at start and keep it in their emptyDir.`,
        required: ['digest', 'size'],
        properties: {
          digest: { type: 'string', pattern: '^sha256:[0-9a-f]{64}$', description: 'sha256:<64 lowercase hex digits> of the bytes.' },
          size: { type: 'integer', minimum: 1, maximum: limits.MAX_CODE_REF_BYTES, description: 'Size in bytes.' },
        },
      },
      functionId: {
        type: 'string',
        pattern: UUID,
        description: 'Optional. The stable UUID of /invoke/{functionId}. Leave it unset: the operator derives it from namespace and name (UUIDv5), so it is the same after every kubectl apply, restore or GitOps sync. Set it only to keep the id of a function imported from elsewhere (a random one-machine id), or to move a function from another namespace with the annotation fnhost.dev/function-id-home naming that namespace (a grant: docs/security.md, Tenancy); an id belongs to the namespace it was first given to, so naming another namespace\'s id without a grant gets Ready=False FunctionIdTaken. It cannot change after creation.',
      },
      routes: {
        type: 'array',
        maxItems: limits.MAX_ROUTES,
        description: 'Path patterns such as /users/:userId that fill req.params.',
        items: { type: 'string', maxLength: limits.MAX_ROUTE_LENGTH, pattern: '^/[A-Za-z0-9\\-._~:/*@]*$' },
      },
      env: {
        type: 'array',
        maxItems: limits.MAX_ENV_VARS,
        description: 'Environment of the handler (process.env). Names starting with FNHOST_ are reserved.',
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['name'],
        items: {
          type: 'object',
          required: ['name'],
          'x-kubernetes-validations': [
            { rule: "!self.name.startsWith('FNHOST_')", message: 'env names starting with FNHOST_ are reserved for the platform', reason: 'FieldValueForbidden', fieldPath: '.name' },
            { rule: '!(has(self.value) && has(self.valueFrom))', message: 'an env entry sets value or valueFrom, not both', reason: 'FieldValueForbidden' },
          ],
          properties: {
            name: { type: 'string', minLength: 1, maxLength: 128, pattern: '^[A-Za-z_][A-Za-z0-9_]*$', description: 'Letters, digits and _, not starting with a digit.' },
            value: { type: 'string', maxLength: limits.MAX_ENV_VALUE_BYTES },
            valueFrom: {
              type: 'object',
              description: 'A Secret or ConfigMap key, as in a Pod.',
              'x-kubernetes-validations': [
                { rule: 'has(self.secretKeyRef) != has(self.configMapKeyRef)', message: 'valueFrom names exactly one of secretKeyRef or configMapKeyRef', reason: 'FieldValueInvalid' },
              ],
              properties: { secretKeyRef: keyRef('Secret'), configMapKeyRef: keyRef('ConfigMap') },
            },
          },
        },
      },
      timeoutSeconds: {
        type: 'integer',
        minimum: 1,
        maximum: limits.MAX_TIMEOUT_SECONDS,
        default: limits.DEFAULT_TIMEOUT_SECONDS,
        description: `Execution time limit. The platform maximum is an operator setting (at most ${limits.MAX_TIMEOUT_SECONDS}); above it the Function is Ready=False with reason TimeoutAboveMaximum.`,
      },
      memoryMiB: {
        type: 'integer',
        minimum: limits.MIN_MEMORY_MIB,
        maximum: limits.MAX_MEMORY_MIB,
        default: limits.DEFAULT_MEMORY_MIB,
        description: "Heap limit of the handler in MiB. The container's memory limit is this plus the runtime's overhead (an operator setting).",
      },
      active: { type: 'boolean', default: true, description: 'false scales the function to zero pods, suspends its schedule, and invocations are refused.' },
      replicas: { type: 'integer', minimum: 0, maximum: 100, default: 1, description: 'Runtime pods while active (ignored when scaling is set).' },
      scaleToZero: {
        type: 'object',
        description:
          'Opt-in idle scale to zero: the operator scales the Deployment to zero pods when nothing invoked the function for idleSeconds (counted from status.lastInvocationTime or creation); the next call is held by the gateway while a pod starts. Unlike active: false, calls are served.',
        properties: { idleSeconds: { type: 'integer', minimum: 30, maximum: 86400, default: 300, description: 'Seconds without an invocation before the function is scaled to zero.' } },
      },
      scaling: {
        type: 'object',
        description:
          'Autoscaling on concurrency (replaces replicas): the gateways measure the calls in flight, averaged over a stable window (60 s) and a panic window (6 s); the operator runs ceil(demand / targetConcurrency) pods within minReplicas..maxReplicas, scaling up at once on a burst (the short window above twice the capacity) and down only on the stable window. minReplicas 0 lets an idle function go to zero pods (after scaleToZero.idleSeconds, default 300).',
        'x-kubernetes-validations': [
          { rule: '!has(self.minReplicas) || !has(self.maxReplicas) || self.minReplicas <= self.maxReplicas', message: 'scaling.minReplicas must not be above scaling.maxReplicas', reason: 'FieldValueInvalid', fieldPath: '.minReplicas' },
        ],
        properties: {
          minReplicas: { type: 'integer', minimum: 0, maximum: scale.MAX_REPLICAS, default: scale.DEFAULT_MIN_REPLICAS, description: 'Fewest pods while the function is not idle; 0 allows scale to zero when idle.' },
          maxReplicas: { type: 'integer', minimum: 1, maximum: scale.MAX_REPLICAS, default: scale.DEFAULT_MAX_REPLICAS, description: 'Most pods.' },
          targetConcurrency: { type: 'integer', minimum: 1, maximum: scale.MAX_TARGET_CONCURRENCY, default: scale.DEFAULT_TARGET_CONCURRENCY, description: 'Calls in flight per pod the autoscaler aims at.' },
        },
      },
      cpu: {
        type: 'object',
        description: "CPU of the runtime container as Kubernetes quantities (250m, 0.5, 2). Unset: the operator's FNHOST_CPU_REQUEST and FNHOST_CPU_LIMIT; never above FNHOST_CPU_LIMIT (Ready=False CpuAboveMaximum).",
        properties: {
          request: { type: 'string', maxLength: 16, pattern: scale.CPU_QUANTITY_PATTERN, description: 'CPU request (what the scheduler reserves).' },
          limit: { type: 'string', maxLength: 16, pattern: scale.CPU_QUANTITY_PATTERN, description: 'CPU limit (the most the container may use).' },
        },
      },
      schedule: {
        type: 'object',
        required: ['cron'],
        description: 'Invoke the function on a schedule (a CronJob calls the gateway).',
        'x-kubernetes-validations': cronRules(),
        properties: {
          cron: { type: 'string', minLength: 9, maxLength: 256, description: 'Five fields: minute hour day-of-month month day-of-week, for example "*/5 * * * *".' },
          timezone: {
            type: 'string',
            default: 'UTC',
            maxLength: 64,
            pattern: '^[A-Za-z][A-Za-z0-9_+\\-]*(/[A-Za-z0-9_+\\-]+)*$',
            description: 'IANA time zone the fields are read in, such as UTC or Europe/Paris.',
          },
          suspend: { type: 'boolean', default: false, description: 'Keep the schedule but do not fire it.' },
        },
      },
      recordRequests: {
        type: 'object',
        description: "Keep each execution's request and response for replay (fnhost function:replay; docs/replay.md). Off by default: bodies may hold personal data.",
        properties: {
          enabled: { type: 'boolean', default: false },
          maxBodyBytes: { type: 'integer', minimum: 0, maximum: limits.MAX_RECORD_BODY_BYTES, default: limits.MAX_RECORD_BODY_BYTES, description: 'Each body is kept up to this many bytes.' },
          redact: {
            type: 'object',
            description: 'Masked before anything is stored. A policy the gateway cannot parse turns recording off.',
            properties: {
              headers: { type: 'array', maxItems: limits.MAX_REDACT_HEADERS, items: { type: 'string', maxLength: 256 } },
              jsonPaths: { type: 'array', maxItems: limits.MAX_REDACT_JSON_PATHS, items: { type: 'string', pattern: '^\\$', maxLength: limits.MAX_REDACT_JSON_PATH_LENGTH }, description: "$.card.number, $.items[*].iban, $..iban (no filters)" },
            },
          },
        },
      },
      kvQuota: {
        type: 'object',
        description: "This function's KV quota (docs/kv.md \"Quotas\"); a field left out takes the platform's default (the chart's gateway.kv.maxBytes, gateway.kv.maxKeys).",
        properties: {
          maxBytes: { type: 'integer', minimum: 1, maximum: MAX_KV_QUOTA_BYTES, description: 'Bytes of keys (UTF-8) plus values (JSON) the function may store.' },
          maxKeys: { type: 'integer', minimum: 1, maximum: MAX_KV_QUOTA_KEYS, description: 'Keys the function may store.' },
        },
      },
      async: {
        type: 'object',
        description: 'Asynchronous invocation (docs/async.md): retries after a 5xx, a timeout or an out-of-memory, and how long after acceptance a call may still start; a field left out takes the default (2, 21600: as Lambda).',
        properties: {
          maxRetries: { type: 'integer', minimum: 0, maximum: MAX_ASYNC_RETRIES },
          maxAgeSeconds: { type: 'integer', minimum: MIN_ASYNC_MAX_AGE_SECONDS, maximum: MAX_ASYNC_MAX_AGE_SECONDS },
          callbackHosts: {
            type: 'array',
            maxItems: MAX_CALLBACK_HOSTS,
            description: 'Hosts an X-Callback-Url may name (docs/async.md "Callbacks"): "hooks.example.com", "*.example.org" (the names below it), an IP address, each optionally with ":port". Empty or absent: no callbacks. The gateway checks each entry again and refuses "*" and CIDRs.',
            items: { type: 'string', minLength: 1, maxLength: 300, pattern: '^[^*/]*$|^\\*\\.[^*/]+$' },
          },
        },
      },
      retention: {
        type: 'object',
        required: ['type'],
        default: { type: 'none' },
        description: 'How long or how many execution logs are kept.',
        'x-kubernetes-validations': [
          { rule: "!has(self.days) || self.type == 'time'", message: 'retention.days is only allowed with type time (use count with type count)', reason: 'FieldValueForbidden', fieldPath: '.days' },
          { rule: "!has(self.count) || self.type == 'count'", message: 'retention.count is only allowed with type count (use days with type time)', reason: 'FieldValueForbidden', fieldPath: '.count' },
          { rule: "self.type != 'time' || has(self.days)", message: `retention type time needs days (1 to ${limits.MAX_RETENTION_DAYS})`, reason: 'FieldValueRequired', fieldPath: '.days' },
          { rule: "self.type != 'count' || has(self.count)", message: `retention type count needs count (1 to ${limits.MAX_RETENTION_COUNT})`, reason: 'FieldValueRequired', fieldPath: '.count' },
        ],
        properties: {
          type: { type: 'string', enum: ['time', 'count', 'none'], description: 'time: keep days; count: keep the newest count; none: keep everything.' },
          days: { type: 'integer', minimum: 1, maximum: limits.MAX_RETENTION_DAYS },
          count: { type: 'integer', minimum: 1, maximum: limits.MAX_RETENTION_COUNT },
        },
      },
    },
  };
}

function statusSchema() {
  const condition = {
    type: 'object',
    required: ['type', 'status', 'lastTransitionTime', 'reason', 'message'],
    properties: {
      type: { type: 'string', maxLength: 316 },
      status: { type: 'string', enum: ['True', 'False', 'Unknown'] },
      observedGeneration: { type: 'integer', format: 'int64', minimum: 0 },
      lastTransitionTime: { type: 'string', format: 'date-time' },
      reason: { type: 'string', maxLength: 1024 },
      message: { type: 'string', maxLength: 32768 },
    },
  };
  return {
    type: 'object',
    description: 'Written by the operator.',
    properties: {
      functionId: { type: 'string', description: 'The stable UUID of /invoke/{functionId}.' },
      code: { type: 'string', maxLength: 32, description: 'Where the code is: inline (spec.code), or the short digest of spec.codeRef (written by the operator).' },
      url: { type: 'string', description: 'Where the function is invoked.' },
      observedGeneration: { type: 'integer', format: 'int64' },
      conditions: { type: 'array', 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'], items: condition },
      // Written by the gateway (field manager fnhost-gateway), at most once per function per interval.
      lastInvocationTime: { type: 'string', format: 'date-time', description: 'When the function was last invoked (written by the gateway, batched).' },
      errorRate: { type: 'string', maxLength: 16, description: 'Share of executions with status >= 400 in the last 5 minutes, over every gateway replica, such as 5% (written by the gateway at most once per status interval while there are calls, and 0% once the window has passed the last call).' },
      concurrency: {
        type: 'object',
        maxProperties: 64,
        description: 'Calls in flight, one entry per gateway replica (its own key): averages over the stable and panic windows (written by the gateways; input of the autoscaler).',
        additionalProperties: {
          type: 'object',
          required: ['stable', 'panic', 'at'],
          properties: { stable: { type: 'number', minimum: 0 }, panic: { type: 'number', minimum: 0 }, at: { type: 'string', format: 'date-time' } },
        },
      },
      loadFailure: {
        type: 'object',
        description: 'A runtime pod failed to load the module (written by the gateway, which asks each starting pod; the operator shows it as CodeLoaded=False LoadFailed while that pod runs the current code, and removes it once the function is ready).',
        required: ['pod', 'kind', 'message', 'at'],
        properties: {
          pod: { type: 'string', maxLength: 253 },
          kind: { type: 'string', enum: ['syntax', 'no_handler', 'failed'] },
          message: { type: 'string', maxLength: 4096, description: "The runtime's text: the module's error with its line and column in the user's file." },
          at: { type: 'string', format: 'date-time' },
        },
      },
      autoscaler: {
        type: 'object',
        description: 'What the autoscaler decided last (written by the operator).',
        required: ['replicas', 'mode'],
        properties: {
          replicas: { type: 'integer', minimum: 0 },
          mode: { type: 'string', enum: ['stable', 'panic'] },
          panicUntil: { type: 'string', format: 'date-time' },
          observed: { type: 'string', maxLength: 64, description: 'Summed concurrency seen: stable/panic.' },
        },
      },
    },
  };
}

export function functionCrd() {
  const max = limits.MAX_FUNCTION_NAME_LENGTH;
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'functions.fnhost.dev', labels: { 'app.kubernetes.io/part-of': 'fnhost' } },
    spec: {
      group: 'fnhost.dev',
      scope: 'Namespaced',
      names: { kind: 'Function', listKind: 'FunctionList', plural: 'functions', singular: 'function', shortNames: ['fn'], categories: ['fnhost'] },
      versions: [
        {
          name: 'v1alpha1',
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: [
            { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
            { name: 'Active', type: 'boolean', jsonPath: '.spec.active' },
            { name: 'Schedule', type: 'string', jsonPath: '.spec.schedule.cron' },
            { name: 'Retention', type: 'string', jsonPath: '.spec.retention.type' },
            { name: 'URL', type: 'string', jsonPath: '.status.url' },
            { name: 'Code', type: 'string', description: 'inline (spec.code) or the short digest of spec.codeRef.', jsonPath: '.status.code' },
            { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
            { name: 'Reason', type: 'string', priority: 1, jsonPath: '.status.conditions[?(@.type=="Ready")].reason' },
            { name: 'Function ID', type: 'string', priority: 1, jsonPath: '.status.functionId' },
            { name: 'Last Invocation', type: 'date', priority: 1, jsonPath: '.status.lastInvocationTime' },
            { name: 'Errors-5min', type: 'string', priority: 1, description: 'Share of executions with status >= 400 in the last 5 minutes, over every gateway replica.', jsonPath: '.status.errorRate' },
            { name: 'Replicas', type: 'integer', priority: 1, jsonPath: '.status.autoscaler.replicas' },
          ],
          schema: {
            openAPIV3Schema: {
              type: 'object',
              description: 'A function hosted by fnhost.',
              required: ['spec'],
              'x-kubernetes-validations': [
                {
                  // CEL at the root may read metadata.name (and only it): this keeps owned names within limits.
                  rule: `self.metadata.name.size() <= ${max}`,
                  message: `a Function name is at most ${max} characters, so that the names of what it owns (such as the CronJob fn-<name>-cron, at most ${MAX_CRONJOB_NAME_LENGTH}) fit Kubernetes' limits`,
                  reason: 'FieldValueInvalid',
                },
                {
                  rule: "self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",
                  message: 'a Function name is a DNS-1123 label: lowercase letters, digits and -, starting and ending with a letter or digit',
                  reason: 'FieldValueInvalid',
                },
              ],
              properties: { apiVersion: { type: 'string' }, kind: { type: 'string' }, metadata: { type: 'object' }, spec: specSchema(), status: statusSchema() },
            },
          },
        },
      ],
    },
  };
}

export const CRD_HEADER = `# The fnhost Function custom resource. Reference and decisions: docs/operator.md.
# Generated from operator/src/crd.ts (limits from core/src/limits.ts):
#   node operator/src/crd-gen.ts > crds/fnhost.dev_functions.yaml
# Install: kubectl apply --server-side -f crds/fnhost.dev_functions.yaml
`;
