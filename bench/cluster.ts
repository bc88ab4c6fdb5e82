// Cluster mode on the test cluster (test/cluster/): P1 on the cluster, P5b, P6, P7.
//
//   node bench/cluster.ts [--seconds 6] [--rounds 2] [--functions 1000] [--cold 5] [--only p1,p7,p1off,p5b,p5pool,p14,p6,egress,autoscale] [--netpol on|off] [--big-kib 5120] [--pool-functions 5]
//
// Installs the chart as test/e2e does (images built with the harness's buildah,
// MongoDB = the wire-protocol stand-in on the host behind a relay on the bridge
// address), one gateway replica, then:
//   P1   autocannon from the host: through the gateway's Service (ClusterIP) vs
//        straight to the function pod's IP (the runtime itself); throughput
//        ratio, and the latency added at half of the gateway's max rate.
//   P7   1,000 concurrent connections vs 100 through the gateway: errors, ratio.
//   p1off (diagnostic) the gateway upgraded with recording off vs the same hop:
//        how much of P1's gap is the MongoDB writes on these shared cores.
//   P5b  the first call to a function scaled to zero for idleness
//        (spec.scaleToZero.idleSeconds 30): the gateway holds it, its wake
//        write makes the operator scale the Deployment up, and the call is
//        answered by the new pod; timed from the call to its answer.
//   p5pool P5b from the pool of generic pods (chart pool.size 2, issue 32) beside the
//        Deployment path in the same run: --pool-functions hello functions served from the
//        pool, as many with memoryMiB 160 (a size the pool does not hold: the Deployment
//        path), all scaled to zero together, called in turn (a pool call only once the pool
//        has a ready generic pod again), --rounds times; plus a 5 MiB bundle (--big-kib) by
//        reference from the pool. Images tagged $FNHOST_E2E_TAG (else bench).
//   P14  P5b for a 5 MiB bundle (--big-kib; bench/lib/generated-bundle.ts, source map inline)
//        beside a hello handler in the same rounds: the bundle uploaded through the gateway's
//        API (PUT /api/v1/code/{digest}) and applied as spec.codeRef, so the woken pod fetches
//        its code by digest; target: the bundle's p50 within 1.5× the hello handler's.
//   autoscale a 10× load step (1 → 10 calls in flight) on a function with spec.scaling:
//        time to the new replica count (asked for, all ready) and p50/p99 during the step.
//   egress (P11) sequential fetches to a server outside the cluster from a function
//        (through the gateway's egress proxy) vs from a plain pod (direct).
//   P6   N Functions (replicas 0, no pods: the node's pod limit is 110)
//        applied → all Ready, vs N plain Deployments (replicas 0) applied →
//        all observed; then 30 s of steady state: API writes by the operator
//        and the gateway (their own request counters).
// Only ratios measured in one run mean anything: the machine is shared.

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { digestOf } from '../core/src/code/digest.ts';
import { derivedFunctionId } from '../gateway/src/cluster/resource.ts';
import { startMongoServer } from '../test/helpers/mongo-server.ts';
import { getCluster, makeKubectl, uniqueName } from '../test/operator/harness.ts';
import { ROOT, buildPlatformImage, buildRuntimeImage, run, startRelay, testClusterPlatformNetworkPolicy, waitFor } from '../test/e2e/helpers.ts';
import { makeBundle } from './lib/generated-bundle.ts';
import { machineDescription, percentile } from './lib/stats.ts';
import { paced } from './lib/paced.ts';
import { reportFigure } from './lib/summary.ts';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '6' },
    rounds: { type: 'string', default: '2' },
    functions: { type: 'string', default: '1000' },
    cold: { type: 'string', default: '5' },
    only: { type: 'string', default: 'p1,p7,p5b,p6' },
    // off: NetworkPolicy not enforced for this run (the "before" of the cluster egress work).
    netpol: { type: 'string', default: 'on' },
    'big-kib': { type: 'string', default: '5120' },
    'pool-functions': { type: 'string', default: '5' },
  },
});
const SECONDS = Number(values.seconds);
const ROUNDS = Number(values.rounds);
const N = Number(values.functions);
const COLD = Number(values.cold);
const ONLY = new Set(values.only!.split(','));
const HELLO = `export default (req, res) => res.json({ hello: 'world' })`;

const autocannon = (await import('autocannon' as string)).default as (opts: Record<string, unknown>) => Promise<{
  requests: { average: number; total: number };
  latency: { p50: number; p99: number };
  non2xx: number;
  errors: number;
  timeouts: number;
}>;

const cluster = await getCluster();
const kubectl = makeKubectl(cluster);
if (values.netpol !== 'on' && values.netpol !== 'off') throw new Error(`--netpol must be on or off, got ${values.netpol}`);
// getCluster() starts the enforcer with the node; switched off here, on again at the end.
if (values.netpol === 'off') {
  const off = await run(`${ROOT}test/cluster/netpol.sh`, ['off'], { timeoutMs: 120_000 });
  if (off.code !== 0) throw new Error(`netpol.sh off: ${off.stderr}`);
}
const helm = (JSON.parse((await run(`${ROOT}test/cluster/env.sh`, ['--json'])).stdout) as { helm: string }).helm;
const suffix = uniqueName('b').slice(2);
const relNs = `fnhost-bench-${suffix}`;
const fnNs = `bench-fn-${suffix}`;
const release = 'bench';
const tmp = await mkdtemp(join(tmpdir(), 'fnhost-bench-'));
/** P6's plain Deployments live here; removed with the rest even when a step fails. */
const extraNamespace = `${fnNs}-deploy`;

const getJson = async (args: string[]) => {
  const r = await kubectl([...args, '-o', 'json']);
  if (r.code !== 0) throw new Error(r.stderr);
  return JSON.parse(r.stdout);
};
const log = (line: string) => process.stdout.write(line + '\n');

log(`# bench/cluster.ts ${new Date().toISOString()}  NetworkPolicy ${values.netpol}  ${machineDescription()}  load ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
// An image tag of one's own on a shared cluster (FNHOST_E2E_TAG, as the e2e tests).
const TAG = process.env.FNHOST_E2E_TAG ?? 'bench';
await Promise.all([buildPlatformImage(`localhost/fnhost-platform:${TAG}`), buildRuntimeImage(`localhost/fnhost-runtime:${TAG}`)]);
const mongo = await startMongoServer({ useEnv: false });
const relay = await startRelay(cluster.hostIp ?? '10.244.0.1', mongo.port!);
await kubectl(['create', 'namespace', fnNs]);
const valuesFile = join(tmp, 'values.json');
await writeFile(valuesFile, JSON.stringify({
  image: { repository: 'localhost/fnhost-platform', tag: TAG, pullPolicy: 'Never' },
  runtimeImage: { repository: 'localhost/fnhost-runtime', tag: TAG, pullPolicy: 'Never' },
  ...(ONLY.has('p5pool') ? { pool: { size: 2 } } : {}),
  mongodb: { url: `mongodb://${cluster.hostIp ?? '10.244.0.1'}:${relay.port}/fnhost_bench` },
  gateway: { replicas: 1, defaultNamespace: fnNs, resources: { requests: { cpu: '100m', memory: '256Mi' }, limits: { memory: '1Gi' } } },
  operator: { workers: 4, maxInFlight: 20, resources: { requests: { cpu: '50m', memory: '128Mi' }, limits: { memory: '1Gi' } }, functionCpuRequest: '10m' },
  networkPolicy: { platformCIDRs: ['10.244.0.0/24', '10.96.0.0/16'] },
  platformNetworkPolicy: testClusterPlatformNetworkPolicy(cluster.hostIp ?? '10.244.0.1', relay.port),
  // Only the bench's namespace: the cluster is shared with other test runs.
  functions: { watchNamespace: fnNs },
}));

async function cleanup(): Promise<void> {
  await kubectl(['delete', 'fn', '--all', '-n', fnNs, '--wait=true', '--timeout=300s']);
  await run(helm, ['uninstall', release, '-n', relNs, '--wait'], { env: { KUBECONFIG: cluster.kubeconfig }, timeoutMs: 300_000 });
  for (const ns of [fnNs, relNs, extraNamespace]) await kubectl(['delete', 'namespace', ns, '--wait=false', '--ignore-not-found']);
  await relay.close();
  await mongo.stop();
  await rm(tmp, { recursive: true, force: true });
  if (values.netpol === 'off') await run(`${ROOT}test/cluster/netpol.sh`, ['on'], { timeoutMs: 120_000 });
}

try {
  // This checkout's CRD: helm leaves an existing (maybe older) one as it is.
  const crd = await kubectl(['apply', '--server-side', '--force-conflicts', '-f', `${ROOT}crds/fnhost.dev_functions.yaml`]);
  if (crd.code !== 0) throw new Error(`applying the CRD: ${crd.stderr}`);
  const installed = await run(helm, ['install', release, `${ROOT}charts/fnhost`, '-n', relNs, '--create-namespace', '-f', valuesFile, '--wait', '--timeout', '8m'], { env: { KUBECONFIG: cluster.kubeconfig }, timeoutMs: 600_000 });
  if (installed.code !== 0) throw new Error(`helm install: ${installed.stderr}`);
  const svc = await getJson(['get', 'svc', `${release}-fnhost-gateway`, '-n', relNs]);
  const gateway = `http://${svc.spec.clusterIP}:8080`;
  const apply = async (name: string, spec: Record<string, unknown>) => {
    const r = await kubectl(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'fnhost.dev/v1alpha1', kind: 'Function', metadata: { name, namespace: fnNs }, spec }));
    if (r.code !== 0) throw new Error(r.stderr);
  };
  const ready = (name: string) =>
    waitFor(`${name} Ready`, async () => {
      const f = await getJson(['get', 'fn', name, '-n', fnNs]);
      return (f.status?.conditions ?? []).some((c: { type: string; status: string; reason: string }) => c.type === 'Ready' && c.status === 'True' && c.reason === 'Available') ? f : null;
    }, 180_000, 500);

  if (ONLY.has('p1') || ONLY.has('p7') || ONLY.has('p1off')) {
    await apply('hello', { code: HELLO, timeoutSeconds: 10 });
    await ready('hello');
    const pod = (await getJson(['get', 'pods', '-n', fnNs, '-l', 'fnhost.dev/function=hello,fnhost.dev/role=runtime'])).items[0];
    const direct = `http://${pod.status.podIP}:8080/`;
    const via = `${gateway}/invoke/${derivedFunctionId(fnNs, 'hello')}`;
    // P1's yardstick on the cluster: a minimal node:http + undici Pool proxy in a pod of its own
    // (the platform image carries undici), in front of the same function pod.
    const hopScript = `const http = require('node:http'); const { Pool } = require('/opt/fnhost/node_modules/undici');
const pool = new Pool(${JSON.stringify(`http://${pod.status.podIP}:8080`)}, { connections: 128, pipelining: 1 });
const s = http.createServer((req, res) => { pool.request({ path: '/', method: req.method, headers: req.headers }).then(async (r) => {
  const body = Buffer.from(await r.body.arrayBuffer()); res.writeHead(r.statusCode, { 'content-type': 'application/json', 'content-length': body.length }); res.end(body); }, () => { res.writeHead(502); res.end(); }); });
s.keepAliveTimeout = 65000; s.listen(8080, '0.0.0.0');`;
    const hopPod = {
      apiVersion: 'v1', kind: 'Pod', metadata: { name: 'hop', namespace: fnNs, labels: { app: 'bench-hop' } },
      spec: {
        automountServiceAccountToken: false,
        securityContext: { runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: 'RuntimeDefault' } },
        containers: [{ name: 'hop', image: 'localhost/fnhost-platform:bench', imagePullPolicy: 'Never', command: ['node', '-e', hopScript],
          ports: [{ containerPort: 8080 }], readinessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 1 },
          securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } } }],
      },
    };
    // Function pods take connections only from the gateway's pods (the operator's NetworkPolicy);
    // NetworkPolicies add up, so this one lets the yardstick in too.
    const hopIngress = {
      apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name: 'bench-hop-ingress', namespace: fnNs },
      spec: { podSelector: { matchLabels: { 'app.kubernetes.io/managed-by': 'fnhost-operator' } }, policyTypes: ['Ingress'], ingress: [{ from: [{ podSelector: { matchLabels: { app: 'bench-hop' } } }] }] },
    };
    const hopAllowed = await kubectl(['apply', '-f', '-'], JSON.stringify(hopIngress));
    if (hopAllowed.code !== 0) throw new Error(hopAllowed.stderr);
    const hopApplied = await kubectl(['apply', '-f', '-'], JSON.stringify(hopPod));
    if (hopApplied.code !== 0) throw new Error(hopApplied.stderr);
    const hopIp = (await waitFor('the hop pod', async () => {
      const p = await getJson(['get', 'pod', 'hop', '-n', fnNs]);
      return (p.status?.conditions ?? []).some((c: any) => c.type === 'Ready' && c.status === 'True') ? p : null;
    }, 120_000, 500)).status.podIP;
    const hop = `http://${hopIp}:8080/`;
    const gwPod = (await getJson(['get', 'pods', '-n', relNs, '-l', 'app.kubernetes.io/component=gateway'])).items[0];
    const viaPod = `http://${gwPod.status.podIP}:8080/invoke/${derivedFunctionId(fnNs, 'hello')}`;
    await waitFor('the gateway to serve hello', async () => (await fetch(via)).status === 200, 60_000, 500);
    // Warm both paths (JIT, connection pools, the log writer's first batches).
    await autocannon({ url: direct, connections: 50, duration: 3 });
    await autocannon({ url: hop, connections: 50, duration: 3 });
    await autocannon({ url: via, connections: 50, duration: 5 });
    const load = async (url: string, connections: number, extra: Record<string, unknown> = {}) => {
      await autocannon({ url, connections, duration: 1 });
      const r = await autocannon({ url, connections, duration: SECONDS, ...extra });
      return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors + r.timeouts + r.non2xx, total: r.requests.total };
    };
    if (ONLY.has('p1')) {
      type Row = Awaited<ReturnType<typeof load>>;
      const rows: Array<{ round: number; direct: Row; hop: Row; gwPod: Row; gw: Row }> = [];
      for (let round = 1; round <= ROUNDS; round++) rows.push({ round, direct: await load(direct, 50), hop: await load(hop, 50), gwPod: await load(viaPod, 50), gw: await load(via, 50) });
      log('\n## P1 on the cluster (autocannon 50 connections from the host; req/s, p50/p99 ms)');
      log('| round | function pod IP (direct) | undici hop pod → function | gateway pod IP → function | gateway Service → function | gateway pod / hop | gateway Service / direct | errors |');
      log('|---|---|---|---|---|---|---|---|');
      const cell = (r: Row) => `${r.rps.toFixed(0)} (${r.p50}/${r.p99})`;
      for (const r of rows) log(`| ${r.round} | ${cell(r.direct)} | ${cell(r.hop)} | ${cell(r.gwPod)} | ${cell(r.gw)} | ${(r.gwPod.rps / r.hop.rps).toFixed(2)}× | ${(r.gw.rps / r.direct.rps).toFixed(2)}× | ${r.gw.errors + r.gwPod.errors} |`);
      const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
      log(`median of per-round ratios: gateway/hop ${med(rows.map((r) => r.gwPod.rps / r.hop.rps)).toFixed(2)}×, gateway Service/direct ${med(rows.map((r) => r.gw.rps / r.direct.rps)).toFixed(2)}×`);
      const half = Math.max(1, Math.floor(Math.min(...rows.map((r) => r.gw.rps)) / 2));
      // Evenly paced (bench/lib/paced.ts), not autocannon's overallRate, which sends each second's quota in a burst.
      const target = (url: string) => ({ origin: new URL(url).origin, path: new URL(url).pathname });
      const dHalf = await paced(target(direct), half, SECONDS);
      const gHalf = await paced(target(via), half, SECONDS);
      log(`\nAt half of the gateway's max rate (${half}/s, evenly paced, latency from each request's due time): direct p50 ${dHalf.p50.toFixed(2)} ms p99 ${dHalf.p99.toFixed(2)} ms; through the gateway p50 ${gHalf.p50.toFixed(2)} ms p99 ${gHalf.p99.toFixed(2)} ms; added p50 ${(gHalf.p50 - dHalf.p50).toFixed(2)} ms, p99 ${(gHalf.p99 - dHalf.p99).toFixed(2)} ms (generator's worst send lag ${Math.max(dHalf.maxSendLagMs, gHalf.maxSendLagMs).toFixed(1)} ms)`);
      reportFigure({ target: 'P1 (cluster)', what: 'gateway pod / undici hop pod throughput', measured: `${med(rows.map((r) => r.gwPod.rps / r.hop.rps)).toFixed(2)}×`, bound: '≥ 0.8×', met: med(rows.map((r) => r.gwPod.rps / r.hop.rps)) >= 0.8 });
      reportFigure({ target: 'P1 (cluster)', what: `added p50 at half load (${half}/s, paced)`, measured: `${(gHalf.p50 - dHalf.p50).toFixed(2)} ms`, bound: '≤ 1 ms', met: gHalf.p50 - dHalf.p50 <= 1 });
      reportFigure({ target: 'P1 (cluster)', what: `added p99 at half load (${half}/s, paced)`, measured: `${(gHalf.p99 - dHalf.p99).toFixed(2)} ms`, bound: '≤ 2 ms', met: gHalf.p99 - dHalf.p99 <= 2 });
    }
    if (ONLY.has('p7')) {
      // The same 100 → 1,000 step against the undici hop pod and the function pod itself, in the
      // same run: on two shared cores the load generator's own 1,000 connections cost throughput
      // too, and these baselines show how much of the gateway's drop is the machine's.
      const steps: Array<[string, string]> = [['gateway Service → function', via], ['undici hop pod → function', hop], ['function pod IP (direct)', direct]];
      const p7: Array<{ name: string; at100: Awaited<ReturnType<typeof load>>; at1000: Awaited<ReturnType<typeof load>> }> = [];
      for (const [name, url] of steps) p7.push({ name, at100: await load(url, 100), at1000: await load(url, 1000) });
      log('\n## P7: 1,000 concurrent connections through the gateway (baselines: the hop pod, the function pod)');
      log(`| target | req/s at 100 | req/s at 1000 | 1000/100 | p50 ms 100/1000 | p99 ms 100/1000 | errors at 1000 (incl. non-2xx, timeouts) |`);
      log('|---|---|---|---|---|---|---|');
      for (const r of p7) log(`| ${r.name} | ${r.at100.rps.toFixed(0)} | ${r.at1000.rps.toFixed(0)} | ${(r.at1000.rps / r.at100.rps).toFixed(2)}× | ${r.at100.p50}/${r.at1000.p50} | ${r.at100.p99}/${r.at1000.p99} | ${r.at1000.errors} |`);
      const [gw7, hop7] = p7 as [(typeof p7)[0], (typeof p7)[0]];
      log(`gateway 1000/100: ${(gw7.at1000.rps / gw7.at100.rps).toFixed(2)}× (target ≥ 0.9×, zero errors); the hop's own step: ${(hop7.at1000.rps / hop7.at100.rps).toFixed(2)}×`);
      const step = gw7.at1000.rps / gw7.at100.rps;
      reportFigure({ target: 'P7', what: '1,000 / 100 connections through the gateway', measured: `${step.toFixed(2)}×, ${gw7.at1000.errors} errors`, bound: '≥ 0.9×, 0 errors', met: step >= 0.9 && gw7.at1000.errors === 0 });
    }
    if (ONLY.has('p1off')) {
      // What recording costs here: the gateway upgraded with its bench-only switch (no records,
      // so no MongoDB writes, which go to the Java stand-in on these same two cores), against
      // the same hop; then upgraded back.
      const upgrade = async (extraEnv: Array<{ name: string; value: string }>) => {
        const r = await run(helm, ['upgrade', release, `${ROOT}charts/fnhost`, '-n', relNs, '--reuse-values', '--set-json', `gateway.extraEnv=${JSON.stringify(extraEnv)}`, '--wait', '--timeout', '5m'], { env: { KUBECONFIG: cluster.kubeconfig }, timeoutMs: 600_000 });
        if (r.code !== 0) throw new Error(`helm upgrade: ${r.stderr}`);
        const pod = await waitFor('one gateway pod of the new revision', async () => {
          const pods = (await getJson(['get', 'pods', '-n', relNs, '-l', 'app.kubernetes.io/component=gateway'])).items.filter((p: any) => !p.metadata.deletionTimestamp);
          return pods.length === 1 && pods[0].status.podIP ? pods[0] : null;
        }, 120_000, 500);
        const url = `http://${pod.status.podIP}:8080/invoke/${derivedFunctionId(fnNs, 'hello')}`;
        await waitFor('the upgraded gateway to serve hello', async () => (await fetch(url)).status === 200, 60_000, 500);
        await autocannon({ url, connections: 50, duration: 3 });
        return url;
      };
      const offUrl = await upgrade([{ name: 'FNHOST_BENCH_DISABLE_RECORDING', value: '1' }]);
      const rows: Array<{ hop: number; off: number }> = [];
      for (let round = 1; round <= ROUNDS; round++) rows.push({ hop: (await load(hop, 50)).rps, off: (await load(offUrl, 50)).rps });
      log('\n## P1 on the cluster with recording off (bench switch; no MongoDB writes)');
      log('| round | undici hop pod → function | gateway pod IP, recording off | ratio |');
      log('|---|---|---|---|');
      rows.forEach((r, i) => log(`| ${i + 1} | ${r.hop.toFixed(0)} | ${r.off.toFixed(0)} | ${(r.off / r.hop).toFixed(2)}× |`));
      const ratios = rows.map((r) => r.off / r.hop).sort((a, b) => a - b);
      log(`median ratio: ${ratios[Math.floor(ratios.length / 2)]!.toFixed(2)}×`);
      await upgrade([]);
    }
  }

  if (ONLY.has('p5b')) {
    // The real path: the operator scales the function to zero after its idle window (30 s, the
    // minimum); the timed call is held by the gateway, whose wake write makes the operator scale
    // it back up; the call is answered when the new pod is ready.
    await apply('cold', { code: HELLO, timeoutSeconds: 30, scaleToZero: { idleSeconds: 30 } });
    await ready('cold');
    const url = `${gateway}/invoke/${derivedFunctionId(fnNs, 'cold')}`;
    await waitFor('cold served', async () => (await fetch(url)).status === 200, 60_000, 500);
    const samples: number[] = [];
    for (let i = 0; i < COLD; i++) {
      await waitFor('cold idle at zero pods', async () => {
        const [fn, pods] = await Promise.all([
          getJson(['get', 'fn', 'cold', '-n', fnNs]),
          getJson(['get', 'pods', '-n', fnNs, '-l', 'fnhost.dev/function=cold,fnhost.dev/role=runtime']),
        ]);
        const readyCondition = (fn.status?.conditions ?? []).find((c: any) => c.type === 'Ready');
        return readyCondition?.reason === 'Idle' && pods.items.length === 0;
      }, 300_000, 250);
      const started = performance.now();
      const answer = await fetch(url);
      await answer.arrayBuffer();
      if (answer.status !== 200) throw new Error(`cold call answered ${answer.status}`);
      samples.push(performance.now() - started);
    }
    log(`\n## P5b: first call to a function scaled to zero for idleness (${COLD} runs)`);
    log(`samples ms: ${samples.map((s) => s.toFixed(0)).join(', ')}; p50 ${percentile(samples, 50).toFixed(0)} ms, max ${Math.max(...samples).toFixed(0)} ms`);
    reportFigure({ target: 'P5b', what: 'first call to a function scaled to zero, p50', measured: `${percentile(samples, 50).toFixed(0)} ms`, bound: '≤ 1 s', met: percentile(samples, 50) <= 1000 });
  }

  if (ONLY.has('p5pool')) {
    const K = Number(values['pool-functions']);
    const idle = { timeoutSeconds: 30, scaleToZero: { idleSeconds: 30 } };
    const { code: big } = await makeBundle(join(tmp, 'pool-bundle'), Number(values['big-kib']) * 1024);
    const bytes = Buffer.from(big);
    const digest = digestOf(bytes);
    const secret = await getJson(['get', 'secret', `${release}-fnhost-admin`, '-n', relNs]);
    const put = await fetch(`${gateway}/api/v1/code/${digest}`, { method: 'PUT', headers: { authorization: `Bearer ${Buffer.from(secret.data.token, 'base64').toString('utf8')}`, 'content-type': 'application/octet-stream' }, body: bytes });
    if (put.status !== 200 && put.status !== 201) throw new Error(`upload ${digest}: ${put.status} ${await put.text()}`);
    const pool = Array.from({ length: K }, (_, i) => `pp-${i}`);
    const deployment = Array.from({ length: K }, (_, i) => `pd-${i}`);
    for (const name of pool) await apply(name, { code: HELLO, ...idle });
    for (const name of deployment) await apply(name, { code: HELLO, memoryMiB: 160, ...idle });
    await apply('pp-big', { codeRef: { digest, size: bytes.length }, ...idle });
    const all = [...pool, ...deployment, 'pp-big'];
    const atZero = async () => {
      const [fns, pods] = await Promise.all([getJson(['get', 'fn', '-n', fnNs]), getJson(['get', 'pods', '-n', fnNs, '-l', 'fnhost.dev/role in (runtime,specialized)'])]);
      const idleNames = new Set((fns.items as any[]).filter((f) => (f.status?.conditions ?? []).some((c: any) => c.type === 'Ready' && c.reason === 'Idle')).map((f) => f.metadata.name));
      return all.every((n) => idleNames.has(n)) && (pods.items as any[]).length === 0;
    };
    const poolReady = async () => ((await getJson(['get', 'pods', '-n', fnNs, '-l', 'app.kubernetes.io/name=fnhost-pool,fnhost.dev/role=pool'])).items as any[]).some((p) => (p.status?.conditions ?? []).some((c: any) => c.type === 'Ready' && c.status === 'True'));
    const timed = async (name: string) => {
      const started = performance.now();
      const answer = await fetch(`${gateway}/invoke/${derivedFunctionId(fnNs, name)}`);
      await answer.arrayBuffer();
      if (answer.status !== 200) throw new Error(`${name} answered ${answer.status}`);
      return performance.now() - started;
    };
    const metricsToken = Buffer.from((await getJson(['get', 'secret', `${release}-fnhost-metrics`, '-n', relNs])).data.token, 'base64').toString('utf8');
    // The gateway's own time per phase of a start from the pool (fnhost_cluster_pool_start_seconds_sum),
    // read before and after each pool call: where that call's time went (the rest is the call itself).
    const phaseSums = async (): Promise<Record<string, number>> => {
      const text = await (await fetch(`${gateway}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } })).text();
      return Object.fromEntries([...text.matchAll(/^fnhost_cluster_pool_start_seconds_sum\{phase="(\w+)"\} ([\d.]+)$/gm)].map((m) => [m[1]!, Number(m[2]) * 1000]));
    };
    const phases: Array<Record<string, number>> = [];
    const fromPool: number[] = [];
    const fromDeployment: number[] = [];
    const bigFromPool: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      await waitFor('every p5pool function idle at zero pods', atZero, 600_000, 500);
      for (let i = 0; i < K; i++) {
        await waitFor('a ready generic pool pod', poolReady, 120_000, 100);
        const before = await phaseSums();
        fromPool.push(await timed(pool[i]!));
        const after = await phaseSums();
        phases.push(Object.fromEntries(Object.keys(after).map((k) => [k, after[k]! - (before[k] ?? 0)])));
        fromDeployment.push(await timed(deployment[i]!));
      }
      await waitFor('a ready generic pool pod', poolReady, 120_000, 100);
      bigFromPool.push(await timed('pp-big'));
    }
    // The memory an idle generic pod holds (its cgroup's memory.current: RSS plus page cache).
    const generic = ((await getJson(['get', 'pods', '-n', fnNs, '-l', 'app.kubernetes.io/name=fnhost-pool,fnhost.dev/role=pool'])).items as any[])[0];
    const mem = generic === undefined ? undefined : await kubectl(['exec', '-n', fnNs, generic.metadata.name, '-c', 'runtime', '--', 'cat', '/sys/fs/cgroup/memory.current']);
    log(`idle generic pool pod memory.current: ${mem?.code === 0 ? `${(Number(mem.stdout.trim()) / 1048576).toFixed(1)} MiB` : 'not read'}`);
    const m = await fetch(`${gateway}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } });
    const cold = (await m.text()).split('\n').filter((l) => l.startsWith('fnhost_cluster_cold_starts_total{') || l.startsWith('fnhost_cluster_pool_fallbacks_total{'));
    const p = (xs: number[], q: number) => percentile(xs, q).toFixed(0);
    log(`\n## P5b from the pool (pool.size 2) beside the Deployment path, ${ROUNDS} rounds of ${K} each`);
    log(`pool       samples ms: ${fromPool.map((x) => x.toFixed(0)).join(', ')}; p50 ${p(fromPool, 50)} ms, p99 ${p(fromPool, 99)} ms`);
    log(`deployment samples ms: ${fromDeployment.map((x) => x.toFixed(0)).join(', ')}; p50 ${p(fromDeployment, 50)} ms, p99 ${p(fromDeployment, 99)} ms`);
    log(`${(bytes.length / 1024).toFixed(0)} KiB bundle from the pool, ms: ${bigFromPool.map((x) => x.toFixed(0)).join(', ')}`);
    log(`gateway counters: ${cold.join('; ')}`);
    if (phases.length > 0 && Object.keys(phases[0]!).length > 0) {
      const med = (k: string) => percentile(phases.map((x) => x[k] ?? 0), 50).toFixed(0);
      const rest = fromPool.map((total, i) => total - Object.values(phases[i]!).reduce((a, b) => a + b, 0));
      log(`pool phases, median ms over ${phases.length} calls: ${Object.keys(phases[0]!).map((k) => `${k} ${med(k)}`).join(', ')}, the rest (the wait for the hold, the call proxied to the pod) ${percentile(rest, 50).toFixed(0)}`);
      log(`pool phases per call (list/claim/specialize/load/rest ms): ${phases.map((x, i) => `${Object.values(x).map((v) => v.toFixed(0)).join('/')}/${rest[i]!.toFixed(0)}`).join(', ')}`);
    }
    reportFigure({ target: 'P5b pool', what: `first call to a function at zero from the pool, p50 (${fromPool.length} calls)`, measured: `${p(fromPool, 50)} ms`, bound: '≤ 250 ms', met: percentile(fromPool, 50) <= 250 });
    reportFigure({ target: 'P5b pool', what: `first call to a function at zero from the pool, p99 (${fromPool.length} calls)`, measured: `${p(fromPool, 99)} ms`, bound: '≤ 500 ms', met: percentile(fromPool, 99) <= 500 });
  }

  if (ONLY.has('p14')) {
    // P14: the same wake path as P5b for a bundle held by reference, beside hello, same rounds.
    const { code: big } = await makeBundle(join(tmp, 'big-bundle'), Number(values['big-kib']) * 1024);
    const bytes = Buffer.from(big);
    const digest = digestOf(bytes);
    const secret = await getJson(['get', 'secret', `${release}-fnhost-admin`, '-n', relNs]);
    const adminToken = Buffer.from(secret.data.token, 'base64').toString('utf8');
    const uploadStart = performance.now();
    const put = await fetch(`${gateway}/api/v1/code/${digest}`, { method: 'PUT', headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/octet-stream' }, body: bytes });
    if (put.status !== 200 && put.status !== 201) throw new Error(`upload ${digest}: ${put.status} ${await put.text()}`);
    const uploadMs = performance.now() - uploadStart;
    const fns = { hello: 'p14-hello', big: 'p14-big' } as const;
    await apply(fns.hello, { code: HELLO, timeoutSeconds: 30, scaleToZero: { idleSeconds: 30 } });
    await apply(fns.big, { codeRef: { digest, size: bytes.length }, timeoutSeconds: 30, scaleToZero: { idleSeconds: 30 } });
    const urls = { hello: `${gateway}/invoke/${derivedFunctionId(fnNs, fns.hello)}`, big: `${gateway}/invoke/${derivedFunctionId(fnNs, fns.big)}` };
    for (const which of ['hello', 'big'] as const) {
      await ready(fns[which]);
      await waitFor(`${fns[which]} served`, async () => (await fetch(urls[which])).status === 200, 120_000, 500);
    }
    const idle = (name: string) => async () => {
      const [fn, pods] = await Promise.all([getJson(['get', 'fn', name, '-n', fnNs]), getJson(['get', 'pods', '-n', fnNs, '-l', `fnhost.dev/function=${name},fnhost.dev/role=runtime`])]);
      return (fn.status?.conditions ?? []).find((c: any) => c.type === 'Ready')?.reason === 'Idle' && pods.items.length === 0;
    };
    const samples = { hello: [] as number[], big: [] as number[] };
    const load0 = loadavg();
    for (let i = 0; i < COLD; i++) {
      await waitFor('both idle at zero pods', async () => (await idle(fns.hello)()) && (await idle(fns.big)()), 300_000, 250);
      // Alternate which goes first, so neither always wakes on a node the other just loaded.
      for (const which of i % 2 === 0 ? (['hello', 'big'] as const) : (['big', 'hello'] as const)) {
        const started = performance.now();
        const answer = await fetch(urls[which]);
        await answer.arrayBuffer();
        if (answer.status !== 200) throw new Error(`${fns[which]} answered ${answer.status}`);
        samples[which].push(performance.now() - started);
      }
    }
    const ratio = percentile(samples.big, 50) / percentile(samples.hello, 50);
    log(`\n## P14 on the cluster: first call to a function scaled to zero, a ${(bytes.length / 1024).toFixed(0)} KiB bundle by reference vs hello (${COLD} rounds; load ${load0.map((l) => l.toFixed(1)).join(' ')} → ${loadavg().map((l) => l.toFixed(1)).join(' ')})`);
    log(`upload of the bundle through the gateway: ${uploadMs.toFixed(0)} ms`);
    log(`hello ms: ${samples.hello.map((x) => x.toFixed(0)).join(', ')}; p50 ${percentile(samples.hello, 50).toFixed(0)} ms`);
    log(`bundle ms: ${samples.big.map((x) => x.toFixed(0)).join(', ')}; p50 ${percentile(samples.big, 50).toFixed(0)} ms`);
    log(`bundle / hello p50: ${ratio.toFixed(2)}× (target ≤ 1.5×)`);
    reportFigure({ target: 'P14', what: `cluster: P5b of a ${(bytes.length / 1024).toFixed(0)} KiB bundle by reference vs hello, p50`, measured: `${ratio.toFixed(2)}×`, bound: '≤ 1.5×', met: ratio <= 1.5 });
  }

  if (ONLY.has('autoscale')) {
    // A 10× load step on an autoscaled function (spec.scaling, target 2 calls in flight per pod,
    // a handler that takes 200 ms): 1 call in flight for 30 s, then 10 for up to 120 s. Measured:
    // from the step to the Deployment asking for the new replica count (the operator's decision,
    // from the gateway's panic-window report), to that many pods ready, and the latency of every
    // call during the step (p50/p99), against the same handler's latency before it.
    await apply('scaled', {
      code: 'export default async (req, res) => { await new Promise((r) => setTimeout(r, 200)); res.json({ ok: true }); }',
      timeoutSeconds: 30,
      scaling: { minReplicas: 1, maxReplicas: 5, targetConcurrency: 2 },
    });
    await ready('scaled');
    const url = `${gateway}/invoke/${derivedFunctionId(fnNs, 'scaled')}`;
    await waitFor('scaled served', async () => (await fetch(url)).status === 200, 60_000, 500);
    let concurrency = 1;
    let stop = false;
    const before: number[] = [];
    const during: number[] = [];
    let errors = 0;
    let stepAt = 0;
    const worker = async (i: number) => {
      while (!stop) {
        if (i >= concurrency) {
          await new Promise((r) => setTimeout(r, 20));
          continue;
        }
        const t = performance.now();
        const r = await fetch(url).catch(() => null);
        await r?.arrayBuffer().catch(() => undefined);
        if (r?.status !== 200) errors++;
        (stepAt === 0 ? before : during).push(performance.now() - t);
      }
    };
    const workers = Array.from({ length: 10 }, (_, i) => worker(i));
    await new Promise((r) => setTimeout(r, 30_000));
    stepAt = performance.now();
    concurrency = 10;
    const deployment = () => getJson(['get', 'deploy', 'fn-scaled', '-n', fnNs]);
    // The count the step calls for: ceil(10 calls in flight / target 2), within maxReplicas 5.
    const wanted = 5;
    let firstAskMs = Number.NaN;
    let askedMs = Number.NaN;
    let readyMs = Number.NaN;
    const steps: number[] = [];
    const deadline = stepAt + 120_000;
    while (performance.now() < deadline && Number.isNaN(readyMs)) {
      const d = await deployment();
      const at = performance.now() - stepAt;
      if (steps[steps.length - 1] !== d.spec.replicas) steps.push(d.spec.replicas);
      if (Number.isNaN(firstAskMs) && d.spec.replicas > 1) firstAskMs = at;
      if (Number.isNaN(askedMs) && d.spec.replicas >= wanted) askedMs = at;
      if (!Number.isNaN(askedMs) && (d.status?.readyReplicas ?? 0) >= wanted) readyMs = at;
      await new Promise((r) => setTimeout(r, 250));
    }
    // A few more seconds at the new size, inside the step's latency figures.
    await new Promise((r) => setTimeout(r, 10_000));
    stop = true;
    await Promise.all(workers);
    log('\n## Autoscaling: a 10× load step (1 → 10 calls in flight, 200 ms handler, targetConcurrency 2, max 5 pods)');
    log(`replica counts asked for: ${steps.join(' → ')}; first scale-up asked ${(firstAskMs / 1000).toFixed(1)} s after the step, ${wanted} asked ${(askedMs / 1000).toFixed(1)} s, ${wanted} ready ${(readyMs / 1000).toFixed(1)} s; ` +
      `latency before the step p50 ${percentile(before, 50).toFixed(0)} ms p99 ${percentile(before, 99).toFixed(0)} ms (${before.length} calls); ` +
      `during the step p50 ${percentile(during, 50).toFixed(0)} ms p99 ${percentile(during, 99).toFixed(0)} ms (${during.length} calls); errors ${errors}`);
    reportFigure({ target: 'autoscale', what: '10× load step: time to the new replica count (all ready)', measured: `${(readyMs / 1000).toFixed(1)} s`, bound: 'report', met: !Number.isNaN(readyMs) });
    reportFigure({ target: 'autoscale', what: '10× load step: p99 during the step', measured: `${percentile(during, 99).toFixed(0)} ms`, bound: 'report', met: errors === 0 });
  }

  if (ONLY.has('egress')) {
    // P11 on the cluster: sequential fetches to an HTTP server outside the cluster (a
    // stand-in address on the node's loopback interface), from a function (through the gateway's
    // egress proxy, as every function's are) vs from a plain pod of the same image (direct:
    // no function NetworkPolicy selects it). Fresh connections and kept-alive ones.
    const outside = '192.0.2.30';
    await run('ip', ['addr', 'del', `${outside}/32`, 'dev', 'lo']);
    await run('ip', ['addr', 'add', `${outside}/32`, 'dev', 'lo']);
    const { createServer } = await import('node:http');
    const server = createServer((_req, res) => res.end('ok'));
    server.keepAliveTimeout = 65_000;
    await new Promise<void>((resolve) => server.listen(0, outside, () => resolve()));
    const target = `http://${outside}:${(server.address() as { port: number }).port}/`;
    const LOOP = `async function loop(n, fresh) {
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const r = await fetch(${JSON.stringify(target)}, fresh ? { headers: { connection: 'close' } } : {});
    await r.text();
    if (r.status !== 200) throw new Error('status ' + r.status);
  }
  return n / ((performance.now() - t0) / 1000);
}`;
    try {
      await apply('fetcher', { code: `${LOOP}\nexport default async (req, res) => { const n = Number(req.query.n); await loop(20, req.query.fresh === '1'); res.json({ rate: await loop(n, req.query.fresh === '1') }); }`, timeoutSeconds: 120, memoryMiB: 128 });
      await ready('fetcher');
      const viaProxy = async (n: number, fresh: boolean) => {
        const r = await fetch(`${gateway}/invoke/${derivedFunctionId(fnNs, 'fetcher')}?n=${n}&fresh=${fresh ? 1 : 0}`);
        if (r.status !== 200) throw new Error(`fetcher answered ${r.status}: ${await r.text()}`);
        return ((await r.json()) as { rate: number }).rate;
      };
      const plainPod = (n: number, fresh: boolean, name: string) => ({
        apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: fnNs },
        spec: {
          restartPolicy: 'Never', automountServiceAccountToken: false,
          securityContext: { runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: 'RuntimeDefault' } },
          containers: [{ name: 'direct', image: 'localhost/fnhost-runtime:bench', imagePullPolicy: 'Never',
            command: ['node', '-e', `${LOOP}\nloop(20, ${fresh}).then(() => loop(${n}, ${fresh})).then((rate) => console.log(JSON.stringify({ rate })))`],
            securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } } }],
        },
      });
      const direct = async (n: number, fresh: boolean, name: string) => {
        const applied = await kubectl(['apply', '-f', '-'], JSON.stringify(plainPod(n, fresh, name)));
        if (applied.code !== 0) throw new Error(applied.stderr);
        await waitFor(`pod ${name}`, async () => ['Succeeded', 'Failed'].includes((await getJson(['get', 'pod', name, '-n', fnNs])).status.phase), 180_000, 500);
        const out = await kubectl(['logs', name, '-n', fnNs]);
        await kubectl(['delete', 'pod', name, '-n', fnNs, '--wait=false']);
        return (JSON.parse(out.stdout.trim().split('\n').pop()!) as { rate: number }).rate;
      };
      log('\n## P11 on the cluster: fetch from a function (egress proxy) vs from a plain pod (direct), requests/s');
      for (const fresh of [false, true]) {
        const n = fresh ? 300 : 1000;
        for (let round = 1; round <= ROUNDS; round++) {
          const d = await direct(n, fresh, `direct-${fresh ? 'fresh' : 'keep'}-${round}`);
          const p = await viaProxy(n, fresh);
          log(`${fresh ? 'new connection each' : 'kept alive'} round ${round}: direct ${d.toFixed(0)}/s, through the proxy ${p.toFixed(0)}/s, ratio ${(p / d).toFixed(2)}`);
        }
      }
    } finally {
      server.close();
      await run('ip', ['addr', 'del', `${outside}/32`, 'dev', 'lo']);
    }
  }

  if (ONLY.has('p6')) {
    const fnList = { apiVersion: 'v1', kind: 'List', items: Array.from({ length: N }, (_, i) => ({ apiVersion: 'fnhost.dev/v1alpha1', kind: 'Function', metadata: { name: `f${i}`, namespace: fnNs }, spec: { code: HELLO, replicas: 0 } })) };
    const depNs = extraNamespace;
    await kubectl(['create', 'namespace', depNs]);
    const depList = {
      apiVersion: 'v1', kind: 'List',
      items: Array.from({ length: N }, (_, i) => ({
        apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: `d${i}`, namespace: depNs },
        spec: { replicas: 0, selector: { matchLabels: { app: `d${i}` } }, template: { metadata: { labels: { app: `d${i}` } }, spec: { containers: [{ name: 'c', image: 'localhost/fnhost-runtime:bench', imagePullPolicy: 'Never' }] } } },
      })),
    };
    const count = async (cmd: string[], pred: (o: any) => boolean) => (await getJson(cmd)).items.filter(pred).length;
    const t0 = performance.now();
    // One kubectl for all N objects, the same way for both kinds (its own long timeout).
    const applyAll = (list: object) => run(cluster.kubectl, ['apply', '--server-side', '-f', '-'], { env: { KUBECONFIG: cluster.kubeconfig }, input: JSON.stringify(list), timeoutMs: 1_800_000 });
    const ad = await applyAll(depList);
    if (ad.code !== 0) throw new Error(ad.stderr);
    await waitFor('all Deployments observed', async () => (await count(['get', 'deploy', '-n', depNs], (d) => d.status?.observedGeneration === d.metadata.generation)) === N, 900_000, 1000);
    const deployMs = performance.now() - t0;
    const t1 = performance.now();
    const af = await applyAll(fnList);
    if (af.code !== 0) throw new Error(af.stderr);
    await waitFor('all Functions Ready', async () => (await count(['get', 'fn', '-n', fnNs], (f) => f.metadata.name.match(/^f\d+$/) && (f.status?.conditions ?? []).some((c: any) => c.type === 'Ready' && c.status === 'True') && f.status.observedGeneration === f.metadata.generation)) === N, 1_800_000, 2000);
    const fnMs = performance.now() - t1;
    log(`\n## P6: ${N} Functions (replicas 0) applied → all Ready, vs ${N} Deployments (replicas 0) applied → all observed`);
    log(`Deployments: ${(deployMs / 1000).toFixed(1)} s; Functions: ${(fnMs / 1000).toFixed(1)} s; ratio ${(fnMs / deployMs).toFixed(2)}×`);
    // Steady state: API writes of the operator and the gateway over 30 s (their own counters).
    const opSvc = await getJson(['get', 'svc', `${release}-fnhost-operator-metrics`, '-n', relNs]);
    const metric = async (url: string, pattern: RegExp) => {
      const text = await (await fetch(url)).text();
      return text.split('\n').filter((l) => pattern.test(l)).reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
    };
    const opUrl = `http://${opSvc.spec.clusterIP}:8081/metrics`;
    const opWrites = () => metric(opUrl, /^fnhost_operator_api_requests_total\{method="(POST|PUT|PATCH|DELETE)"/);
    const gwWrites = () => metric(`${gateway}/metrics`, /^fnhost_cluster_status_writes_total /);
    const o0 = await opWrites();
    const g0 = await gwWrites();
    await new Promise((r) => setTimeout(r, 30_000));
    const opSteady = (await opWrites()) - o0;
    const gwSteady = (await gwWrites()) - g0;
    const steadyWrites = opSteady + gwSteady;
    log(`steady state, 30 s after all Ready: operator API writes ${opSteady}, gateway status writes ${gwSteady}`);
    reportFigure({ target: 'P6', what: `${N} Functions → Ready vs ${N} Deployments; writes at steady state`, measured: `${(fnMs / deployMs).toFixed(2)}×, ${steadyWrites} writes in 30 s`, bound: '≤ 1.5×, no writes', met: fnMs / deployMs <= 1.5 && steadyWrites === 0 });
  }
} finally {
  await cleanup();
}
