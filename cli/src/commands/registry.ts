import type { CommandSpec, OptionSpec } from './spec.ts';

// Every command, its flags and its help, without loading any command's code:
// main.ts imports only the module of the command being run.

const fnArg = '<function>';

const env: OptionSpec = { type: 'string', multiple: true, value: 'KEY=VALUE', description: 'environment variable for the function (repeatable)' };
const timeout: OptionSpec = { type: 'string', value: '<seconds>', description: 'execution time limit (default 30)' };
const memory: OptionSpec = { type: 'string', value: '<MiB>', description: 'memory limit (default 128)' };
const recordRequests: OptionSpec = { type: 'string', value: 'on|off', description: 'keep each execution\'s request and response for function:replay (default off; bodies may hold personal data)' };
const recordBodyLimit: OptionSpec = { type: 'string', value: '<bytes>', description: 'keep each recorded body up to this many bytes (0-65536, default 65536)' };
const redactHeader: OptionSpec = { type: 'string', multiple: true, value: '<name>', description: 'mask this header in recorded requests and responses (repeatable; replaces the list)' };
const redactJson: OptionSpec = { type: 'string', multiple: true, value: '<path>', description: 'mask this JSON path in recorded bodies, e.g. $.card.number or $..iban (repeatable; replaces the list)' };
const allowLoadError: OptionSpec = { type: 'boolean', description: 'store the code even though its top level throws while loading (its calls then answer 500 until fixed)' };
const kvMaxBytes: OptionSpec = { type: 'string', value: '<bytes>|default', description: 'KV quota: bytes of keys and values the function may store, e.g. 1048576 or 50Mi (default: the platform\'s, 100Mi unless set)' };
const kvMaxKeys: OptionSpec = { type: 'string', value: '<n>|default', description: 'KV quota: keys the function may store (default: the platform\'s, 100000 unless set)' };
const callbackHost: OptionSpec = { type: 'string', multiple: true, value: '<host>', description: 'a host X-Callback-Url of an async call may name: hooks.example.com, *.example.org, an address, each optionally :port (repeatable; replaces the list; default: no callbacks)' };
const noCallbacks: OptionSpec = { type: 'boolean', description: 'take no X-Callback-Url (empties the callback hosts)' };
const route: OptionSpec = { type: 'string', multiple: true, value: '<pattern>', description: 'route pattern such as /users/:userId that fills req.params (repeatable)' };

export const COMMANDS: CommandSpec[] = [
  {
    name: 'function:create',
    args: ['<name>'],
    summary: 'Create a function from a JavaScript or TypeScript module and the packages it imports',
    details: [
      '<name> is a DNS-1123 label: lowercase letters, digits and "-", at most 40 characters.',
      'The file is bundled with the packages it imports (resolved from its project) into one module, as fnhost bundle does.',
    ],
    options: {
      file: { type: 'string', short: 'f', value: '<path>', description: 'the module exporting the handler (required)' },
      env,
      timeout,
      memory,
      route,
      'record-requests': recordRequests,
      'record-body-limit': recordBodyLimit,
      'redact-header': redactHeader,
      'redact-json': redactJson,
      'kv-max-bytes': kvMaxBytes,
      'kv-max-keys': kvMaxKeys,
      'callback-host': callbackHost,
      cron: { type: 'string', value: '<expr>', description: 'run on this 5-field cron schedule as well' },
      timezone: { type: 'string', value: '<zone>', description: 'IANA time zone of --cron (default UTC)' },
      'allow-load-error': allowLoadError,
    },
    json: true,
    remote: true,
    examples: ['fnhost function:create hello --file hello.js', 'fnhost function:create report --file report.js --env LOG_LEVEL=debug --cron "0 9 * * 1"'],
    load: () => import('./create.ts'),
  },
  {
    name: 'function:deploy',
    args: [fnArg],
    summary: "Replace a function's code (and optionally its settings)",
    details: [
      '--env and --route, when given, replace the whole set (not merged); settings not named stay as they are.',
      'On a cluster it waits until the new code serves: the operator has rolled it out (the Function\'s Ready condition at its new generation).',
      'On one machine the server answers once the new runtime has loaded the code, so there is nothing more to wait for.',
    ],
    options: {
      file: { type: 'string', short: 'f', value: '<path>', description: 'the new module (required)' },
      env,
      timeout,
      memory,
      route,
      'no-wait': { type: 'boolean', description: 'return once the change is stored, without waiting for the new code to serve (cluster mode)' },
      'wait-timeout': { type: 'string', value: '<seconds>', description: 'how long to wait for the new code to serve (cluster mode; default 180)' },
      'record-requests': recordRequests, 'record-body-limit': recordBodyLimit, 'redact-header': redactHeader, 'redact-json': redactJson,
      'allow-load-error': allowLoadError,
      'kv-max-bytes': kvMaxBytes, 'kv-max-keys': kvMaxKeys,
      'callback-host': callbackHost, 'no-callbacks': noCallbacks,
    },
    json: true,
    remote: true,
    examples: ['fnhost function:deploy hello --file hello.js', 'fnhost function:deploy hello --file hello.js --no-wait'],
    load: () => import('./deploy.ts'),
  },
  {
    name: 'function:list',
    args: [],
    summary: 'List the functions',
    options: { 'all-namespaces': { type: 'boolean', short: 'A', description: 'list the functions of every namespace (with a NAMESPACE column)' } },
    json: true,
    remote: true,
    examples: ['fnhost function:list', 'fnhost function:list -A', 'fnhost function:list --output json | jq -r ".functions[].name"'],
    load: () => import('./list.ts'),
  },
  {
    name: 'function:get',
    args: [fnArg],
    summary: 'Show a function: state, retention, schedule, total executions',
    options: {},
    json: true,
    remote: true,
    examples: ['fnhost function:get hello'],
    load: () => import('./get.ts'),
  },
  {
    name: 'function:delete',
    args: [fnArg],
    summary: 'Delete a function and its execution logs',
    details: ['Asks for confirmation on a terminal. Without a terminal, --yes is required.'],
    options: { yes: { type: 'boolean', short: 'y', description: 'do not ask for confirmation' } },
    json: false,
    remote: true,
    examples: ['fnhost function:delete hello', 'fnhost function:delete hello --yes'],
    load: () => import('./delete.ts'),
  },
  {
    name: 'function:activate',
    args: [fnArg],
    summary: 'Let the function be invoked again',
    options: {},
    json: true,
    remote: true,
    examples: ['fnhost function:activate hello'],
    load: () => import('./activation.ts').then((m) => ({ run: m.activate })),
  },
  {
    name: 'function:deactivate',
    args: [fnArg],
    summary: 'Stop the function from being invoked (it answers 403) and from running on its schedule',
    options: {},
    json: true,
    remote: true,
    examples: ['fnhost function:deactivate hello'],
    load: () => import('./activation.ts').then((m) => ({ run: m.deactivate })),
  },
  {
    name: 'function:logs',
    args: [fnArg],
    summary: 'List the execution logs of a function, newest first',
    details: [
      'On a terminal the table is interactive: ←/→ or n/p change page, s cycles the status filter, r reloads, q quits.',
      'Piped, or with --output json, it prints once and exits. --follow prints new executions as they arrive',
      '(with --output json: one log record per line).',
      '--stack prints once, on a terminal too, with the error and its stack under each row whose',
      "handler threw: the files and lines of your own sources (the bundle's source map). JSON always has error_stack.",
      '--id <log-id> shows one record: its fields (cold start and wait included), then what its execution wrote',
      'through console, both streams in order with each line\'s offset (up to 1,000 lines / 64 KiB, output of',
      'deferred work up to a second after the answer included). In the interactive table, Enter opens the selected record.',
    ],
    options: {
      status: { type: 'string', value: 'success|error|all', description: 'which executions: 2xx, 400 and above, or all (default all)' },
      limit: { type: 'string', value: '<int>', description: 'records per page, 1-1000 (default 50)' },
      page: { type: 'string', value: '<int>', description: '1-based page number (default 1)' },
      follow: { type: 'boolean', short: 'F', description: 'keep running and show new executions as they arrive' },
      interval: { type: 'string', value: '<seconds>', description: 'how often --follow asks the server (default 2)' },
      stack: { type: 'boolean', description: "show each thrown error's message and stack (your files and lines) under its row" },
      id: { type: 'string', value: '<log-id>', description: 'show this one record and its console output' },
    },
    json: true,
    remote: true,
    examples: [
      'fnhost function:logs hello',
      'fnhost function:logs hello --status error --limit 5 --page 2 --output json | jq .pagination',
      'fnhost function:logs hello --follow',
      'fnhost function:logs hello --status error --stack',
      'fnhost function:logs hello --id log_Fqvy4aY8SLBE6suc2xvx',
    ],
    load: () => import('./logs.ts'),
  },
  {
    name: 'function:retention:set',
    args: [fnArg],
    summary: 'Set how long or how many execution logs the function keeps',
    options: {
      type: { type: 'string', value: 'time|count|none', description: 'time keeps --days days, count keeps the --count newest, none keeps all' },
      days: { type: 'string', value: '<int>', description: 'with --type time: days to keep (1-3650)' },
      count: { type: 'string', value: '<int>', description: 'with --type count: records to keep (1-10000000)' },
    },
    json: true,
    remote: true,
    examples: ['fnhost function:retention:set hello --type time --days 7', 'fnhost function:retention:set hello --type count --count 100', 'fnhost function:retention:set hello --type none'],
    load: () => import('./retention.ts'),
  },
  {
    name: 'policy:show',
    args: [],
    summary: 'Show the global network policy, or with --function what applies to one function',
    options: { function: { type: 'string', value: '<function>', description: 'the function\'s own policy instead of the global one' }, },
    json: true,
    remote: true,
    examples: ['fnhost policy:show', 'fnhost policy:show --function hello --output json'],
    load: () => import('./policy.ts'),
  },
  {
    name: 'policy:default',
    args: ['<allow|deny>'],
    summary: 'Set what a network policy does with a connection no rule names',
    details: ['Changing the global policy needs fnhost-egress-admin in cluster mode. The machine itself, link-local and metadata addresses stay protected either way.'],
    options: { function: { type: 'string', value: '<function>', description: 'the function\'s own policy instead of the global one' }, },
    json: true,
    remote: true,
    examples: ['fnhost policy:default deny', 'fnhost policy:default allow --function hello'],
    load: () => import('./policy.ts'),
  },
  {
    name: 'policy:add',
    args: ['<allow|deny>', '<pattern>'],
    summary: 'Add one pattern to the allow or deny list of a network policy',
    details: [
      'Patterns: example.com, *.example.com, an IP address or a CIDR; a host or address may name one port (127.0.0.1:3000).',
      'Allowing a name allows the addresses it resolves to, unless a deny rule names one or it is protected. A server on',
      'this machine (say a dev server on 127.0.0.1:3000) is reached only through an allow of its address',
      '(policy:add allow 127.0.0.1:3000): that opens the machine to the function on that port.',
    ],
    options: { function: { type: 'string', value: '<function>', description: 'the function\'s own policy instead of the global one' }, },
    json: true,
    remote: true,
    examples: ['fnhost policy:add allow api.example.com', 'fnhost policy:add deny 10.0.0.0/8', 'fnhost policy:add allow 127.0.0.1:3000 --function hello'],
    load: () => import('./policy.ts'),
  },
  {
    name: 'policy:remove',
    args: ['<allow|deny>', '<pattern>'],
    summary: 'Remove one pattern from the allow or deny list of a network policy',
    options: { function: { type: 'string', value: '<function>', description: 'the function\'s own policy instead of the global one' }, },
    json: true,
    remote: true,
    examples: ['fnhost policy:remove allow api.example.com', 'fnhost policy:remove deny 10.0.0.0/8 --function hello'],
    load: () => import('./policy.ts'),
  },
  {
    name: 'policy:check',
    args: [fnArg, '<host[:port]>'],
    summary: 'Would this function be let connect to host:port now? The rule, the scope and the addresses',
    details: ['A dry run of the egress proxy, as kubectl auth can-i: prints yes or no and why; exits 0 for yes, 1 for no. Port 443 when none is given.'],
    options: {},
    json: true,
    remote: true,
    examples: ['fnhost policy:check hello api.example.com', 'fnhost policy:check hello 127.0.0.1:3000 --output json'],
    load: () => import('./policy.ts'),
  },
  {
    name: 'function:scale',
    args: [fnArg],
    summary: 'Kubernetes: set pods, autoscaling on concurrency, scale to zero and CPU of a function',
    details: [
      'Flags not given leave their setting as it is. --min/--max/--target turn autoscaling on (or adjust it): the',
      'gateways measure calls in flight and the operator runs ceil(calls / target) pods between min and max, at once',
      'on a burst, down over a minute. --min 0 or --scale-to-zero lets an idle function go to zero pods.',
    ],
    options: {
      replicas: { type: 'string', value: '<int>', description: 'fixed pods while active (0-100), when not autoscaling' },
      min: { type: 'string', value: '<int>', description: 'autoscaling: fewest pods (0-100; 0 allows scale to zero)' },
      max: { type: 'string', value: '<int>', description: 'autoscaling: most pods (1-100)' },
      target: { type: 'string', value: '<int>', description: 'autoscaling: calls in flight per pod (1-1000)' },
      autoscale: { type: 'string', value: 'on|off', description: 'turn autoscaling on (defaults 1-10 pods, target 10) or off (back to --replicas)' },
      'scale-to-zero': { type: 'string', value: 'on|off|<seconds>', description: 'zero pods after this long without a call (30-86400; on: 300)' },
      'cpu-request': { type: 'string', value: '<cpu>|default', description: "CPU request such as 250m or 0.5 (default: the operator's)" },
      'cpu-limit': { type: 'string', value: '<cpu>|default', description: "CPU limit, at most the operator's FNHOST_CPU_LIMIT" },
    },
    json: true,
    remote: true,
    examples: [
      'fnhost function:scale hello --min 1 --max 10 --target 5',
      'fnhost function:scale hello --scale-to-zero 120',
      'fnhost function:scale hello --autoscale off --replicas 2 --cpu-request 250m --cpu-limit 1',
    ],
    load: () => import('./scale.ts'),
  },
  {
    name: 'function:schedule:set',
    args: [fnArg],
    summary: 'Run the function on a cron schedule',
    options: {
      cron: { type: 'string', value: '"<expr>"', description: 'five fields: minute hour day-of-month month day-of-week (required)' },
      timezone: { type: 'string', value: '<zone>', description: 'IANA time zone the fields are read in (default UTC)' },
    },
    json: true,
    remote: true,
    examples: ['fnhost function:schedule:set hello --cron "0 * * * *"', 'fnhost function:schedule:set hello --cron "0 9 * * 1" --timezone Europe/Paris'],
    load: () => import('./schedule.ts').then((m) => ({ run: m.setSchedule })),
  },
  {
    name: 'function:schedule:disable',
    args: [fnArg],
    summary: 'Stop the scheduled runs (the expression is kept)',
    options: {},
    json: true,
    remote: true,
    examples: ['fnhost function:schedule:disable hello'],
    load: () => import('./schedule.ts').then((m) => ({ run: m.disableSchedule })),
  },
  {
    name: 'function:schedule:runs',
    args: [fnArg],
    summary: 'Show the ledger of scheduled runs: each planned run, its record, lag or why it was missed, and the next ones',
    details: [
      "Newest planned first; times in the schedule's zone (named in the heading; --output json gives UTC).",
      'A run is missed when the platform was down (past the starting deadline), the function was inactive, or the previous run was still going.',
    ],
    options: { limit: { type: 'string', short: 'n', value: '<n>', description: `entries to show (default 20, at most 200)` } },
    json: true,
    remote: true,
    examples: ['fnhost function:schedule:runs hello', 'fnhost function:schedule:runs hello --output json | jq ".runs[0]"'],
    load: () => import('./schedule-runs.ts').then((m) => ({ run: m.listRuns })),
  },
  {
    name: 'function:schedule:run',
    args: [fnArg],
    summary: 'Fire the schedule now: the request a scheduled run sends, recorded as a manual schedule run',
    details: ['Unlike function:test (a request you choose, trigger test), this sends what the schedule sends (POST / with {}) and enters the run in the ledger. Exits with 1 when the function answers 5xx.'],
    options: {},
    json: true,
    remote: true,
    examples: ['fnhost function:schedule:run hello'],
    load: () => import('./schedule-runs.ts').then((m) => ({ run: m.runNow })),
  },
  {
    name: 'function:test',
    args: [fnArg],
    summary: 'Run the function once and show its answer',
    details: ['Sends POST / with the JSON body {} unless told otherwise. Exits with 1 when the function answers 5xx.'],
    options: {
      data: { type: 'string', short: 'd', value: '<json>', description: 'JSON request body (default {})' },
      method: { type: 'string', short: 'X', value: '<method>', description: 'HTTP method (default POST)' },
      path: { type: 'string', value: '<path>', description: 'request path seen by the handler (default /)' },
    },
    json: true,
    remote: true,
    examples: ['fnhost function:test hello', `fnhost function:test hello --data '{"name":"Ada"}'`, 'fnhost function:test users --method GET --path /users/42'],
    load: () => import('./test.ts'),
  },
  {
    name: 'function:invoke',
    args: [fnArg],
    summary: 'Call the function through its public path, as a caller does (no admin token); --async queues it',
    details: [
      'Unlike function:test (the owner\'s test run, trigger test), this is a call a caller makes: /invoke, or with --async /async-invoke (docs/async.md).',
      'With --async it prints the async id; --wait then waits for the final answer (retries included). Exits with 1 on a 5xx, a refused call, or a call that failed or died.',
    ],
    options: {
      data: { type: 'string', short: 'd', value: '<body>', description: 'request body (sent as application/json unless --header names a Content-Type)' },
      method: { type: 'string', short: 'X', value: '<method>', description: 'HTTP method (default POST)' },
      path: { type: 'string', value: '<path>', description: 'sub-path and query the handler sees (default /)' },
      header: { type: 'string', short: 'H', multiple: true, value: '"Name: value"', description: 'request header (repeatable)' },
      async: { type: 'boolean', description: 'queue the call (202 with an async id) instead of waiting for its answer' },
      wait: { type: 'boolean', description: 'with --async: wait for the final answer' },
    },
    json: true,
    remote: true,
    examples: ['fnhost function:invoke hello --data \'{"name":"Ada"}\'', 'fnhost function:invoke hello --async --wait', 'fnhost function:invoke users -X GET --path /users/42 -H "Authorization: Bearer abc"'],
    load: () => import('./async.ts').then((m) => ({ run: m.invoke })),
  },
  {
    name: 'function:async',
    args: [fnArg],
    summary: 'Show the function\'s queued, running and dead async calls',
    details: [
      'Oldest accepted first. A dead call used up its retries or its age; requeue it with function:async:retry.',
      'CALLBACK is the X-Callback-Url\'s delivery: pending, delivered or failed, with the POSTs tried (a failed one says why on the next line).',
    ],
    options: {
      limit: { type: 'string', short: 'n', value: '<n>', description: 'calls to show (default 100, at most 1000)' },
      state: { type: 'string', value: '<states>|all', description: 'comma-separated states to show: queued, running, succeeded, failed, dead (default queued,running,dead)' },
    },
    json: true,
    remote: true,
    examples: ['fnhost function:async hello', 'fnhost function:async hello --state all', 'fnhost function:async hello --output json | jq ".calls[0]"'],
    load: () => import('./async.ts').then((m) => ({ run: m.listAsync })),
  },
  {
    name: 'function:async:set',
    args: [fnArg],
    summary: "Set the function's async retries, maximum age and callback hosts",
    details: [
      'Only the settings named change. "default" takes a setting back to its default (2 retries, 21600 s).',
      'Callbacks (X-Callback-Url) are off until hosts are listed; a URL naming another host is refused with 400 when the call is made.',
    ],
    options: {
      'max-retries': { type: 'string', value: '<0-2>|default', description: 'retries after a 5xx, a timeout or an out-of-memory (default 2)' },
      'max-age': { type: 'string', value: '<seconds>|default', description: 'how long after acceptance a call may still start (60-21600, default 21600)' },
      'callback-host': callbackHost,
      'no-callbacks': noCallbacks,
    },
    json: true,
    remote: true,
    examples: ['fnhost function:async:set hello --callback-host hooks.example.com --callback-host "*.example.org"', 'fnhost function:async:set hello --max-retries 0', 'fnhost function:async:set hello --no-callbacks'],
    load: () => import('./async-settings.ts'),
  },
  {
    name: 'function:async:retry',
    args: [fnArg, '[async-id...]'],
    summary: 'Requeue dead async calls: the ones named, or --all',
    details: ['A requeued call starts again as new: attempts from 1, its age from now.'],
    options: { all: { type: 'boolean', description: 'requeue every dead call of the function' } },
    json: true,
    remote: true,
    examples: ['fnhost function:async:retry hello async_AbCdEfGhIjKlMnOpQrStUv', 'fnhost function:async:retry hello --all'],
    load: () => import('./async.ts').then((m) => ({ run: m.retryAsync })),
  },
  {
    name: 'function:replay',
    args: [fnArg, '<log-id>'],
    summary: "Send a recorded request again and show how the answer differs",
    details: [
      'The record must have its request stored: the function records requests (--record-requests on) since before it ran.',
      'The function runs for real (KV writes, outbound calls), so this asks first; --yes skips the question, and without a terminal --yes is required.',
      'With --code, the request runs once against that module (bundled as function:create does) as a throwaway version: never deployed, the serving code untouched. One machine only.',
      'Exits with 1 when the replay answered 5xx.',
    ],
    options: {
      code: { type: 'string', value: '<file>', description: 'run against this module instead of the deployed code (not deployed)' },
      yes: { type: 'boolean', short: 'y', description: 'do not ask for confirmation' },
    },
    json: true,
    remote: true,
    examples: ['fnhost function:replay pay log_Ab3dEf', 'fnhost function:replay pay log_Ab3dEf --code ./fix.ts --yes'],
    load: () => import('./replay.ts'),
  },
  {
    name: 'bundle',
    args: ['<file>'],
    summary: 'Bundle a handler and the packages it imports into one module, as function:create does',
    details: [
      'Packages resolve from the project <file> lives in (its package.json and node_modules); TypeScript is compiled;',
      "Node's built-ins stay imports. The module carries an inline source map, so errors name your files and lines.",
      'For a Function resource applied with kubectl (spec.code): see docs/cluster-mode.md.',
      'With --push, the module is uploaded to the server by its digest (when the server lacks it) and the codeRef: lines',
      'to paste into a Function\'s spec are printed instead of the module (for code over 256 KiB, and up to 50 MiB).',
    ],
    options: {
      out: { type: 'string', short: 'o', value: '<path>', description: 'write the module here (default: stdout)' },
      push: { type: 'boolean', description: 'upload the module to the server and print the codeRef: (digest, size) for a Function manifest' },
    },
    json: false,
    remote: true,
    examples: ['fnhost bundle src/handler.ts -o handler.mjs', 'fnhost bundle src/handler.ts --push'],
    load: () => import('./bundle.ts'),
  },
  {
    name: 'login',
    args: [],
    summary: 'Save a server URL and token for later commands',
    details: [
      'Checks them against the server, then writes $XDG_CONFIG_HOME/fnhost/config.json (or ~/.config/fnhost/config.json) with mode 0600.',
      'Without --token, reads the token from stdin (prompting on a terminal), like gh auth login --with-token.',
      'Against a cluster, --namespace (or FNHOST_NAMESPACE) is saved with the login; without one, each command',
      'uses the current kube context\'s namespace, else the gateway\'s default. Login prints which one and from where.',
      'With --kube (a cluster whose gateway takes Kubernetes tokens), no token is saved: each command presents the current',
      'kube context\'s credential (a token or an exec plugin), and Kubernetes RBAC decides what it may do.',
    ],
    options: { kube: { type: 'boolean', description: "use the current kube context's credentials instead of a token (checked by the cluster's RBAC)" } },
    json: false,
    remote: true,
    examples: [
      'fnhost login --url https://fn.example.com --token "$TOKEN"',
      'fnhost login --url https://fn.example.com < token.txt',
      'fnhost login --url https://fn.example.com --namespace team-a < token.txt',
      'fnhost login --url https://fn.example.com --kube',
    ],
    load: () => import('./login.ts'),
  },
];

export const CONNECTION_OPTIONS: Record<string, OptionSpec> = {
  url: { type: 'string', value: '<url>', description: 'server URL (else FNHOST_URL, the saved login, http://127.0.0.1:8080)' },
  token: { type: 'string', value: '<token>', description: 'admin token (else FNHOST_TOKEN, the saved login, ./.fnhost/token)' },
  namespace: {
    type: 'string',
    short: 'n',
    value: '<namespace>',
    description: "namespace of the functions on a cluster (else FNHOST_NAMESPACE, the saved login's, the current kube context's, the gateway's default)",
  },
};

export const OUTPUT_OPTION: OptionSpec = { type: 'string', short: 'o', value: 'json|text', description: 'output format (default text; json prints only the JSON)' };
export const HELP_OPTION: OptionSpec = { type: 'boolean', short: 'h', description: 'show this help' };

export function findCommand(name: string): CommandSpec | undefined {
  return COMMANDS.find((c) => c.name === name);
}

/** All options a command accepts: its own, then the connection and output ones. */
export function optionsOf(spec: CommandSpec): Record<string, OptionSpec> {
  return {
    ...spec.options,
    ...(spec.remote ? CONNECTION_OPTIONS : {}),
    ...(spec.json ? { output: OUTPUT_OPTION } : {}),
    help: HELP_OPTION,
  };
}

/** The closest command name, for "did you mean"; undefined when nothing is close. */
export function suggestCommand(input: string): string | undefined {
  let best: { name: string; distance: number } | undefined;
  for (const { name } of COMMANDS) {
    const candidates = [name, name.replace(/^function:/, '')];
    for (const candidate of candidates) {
      const d = editDistance(input.toLowerCase(), candidate);
      if (best === undefined || d < best.distance) best = { name, distance: d };
    }
  }
  return best !== undefined && best.distance <= Math.max(2, Math.floor(input.length / 3)) ? best.name : undefined;
}

export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = row;
  }
  return prev[b.length]!;
}
