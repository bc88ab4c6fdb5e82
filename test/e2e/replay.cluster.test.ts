import { expect } from 'chai';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { derivedFunctionId } from '../../gateway/src/cluster/resource.ts';
import { startMongoServer, type MongoTestServer } from '../helpers/mongo-server.ts';
import { getCluster, makeKubectl, uniqueName, type ClusterAccess } from '../operator/harness.ts';
import { NODE, ROOT, PLATFORM_IMAGE, RUNTIME_IMAGE, E2E_TAG, buildPlatformImage, buildRuntimeImage, run, startRelay, testClusterPlatformNetworkPolicy, waitFor } from './helpers.ts';

// Issue 21.3 (replay) in cluster mode on the test cluster: the chart installed with helm, a
// Function applied with kubectl with spec.recordRequests, a call recorded by the gateway
// replica into MongoDB (log_exchanges, masked), function:replay through the CLI against the
// pods' current code (trigger replay), and with --code once against a throwaway Function of its
// own (gateway/src/cluster/throwaway.ts): answered by the new code, recorded under the original,
// never listed, deleted after the call; invalid code refused (400), and a leftover throwaway past
// its expiry deleted by the gateway's sweep.

const V1 = `export default (req, res) => res.json({ v: 1, got: req.body ?? null })`;
const V2 = `export default async (req, res) => { await kv.set('deployed', 'v2'); res.json({ v: 2, got: req.body ?? null }); }`;
// The throwaway reads the KV the deployed code wrote: it runs as the function (same functionId, same token).
const V3 = `export default async (req, res) => res.json({ v: 3, got: req.body ?? null, kv: await kv.get('deployed') })`;

describe('fnhost on Kubernetes: request recording and replay (issue 21.3)', function () {
  this.timeout(600_000);
  let cluster: ClusterAccess;
  let kubectl: ReturnType<typeof makeKubectl>;
  let helm: string;
  let mongo: MongoTestServer;
  let relay: { port: number; close(): Promise<void> };
  let relNs: string;
  let ns: string;
  let tmp: string;
  let gatewayUrl: string;
  let token: string;
  let logId: string;
  const release = 'e2e-replay';
  const dbName = `fnhost_e2e_replay_${Date.now()}`;

  const helmRun = (args: string[], timeoutMs = 600_000) => run(helm, args, { env: { KUBECONFIG: cluster.kubeconfig }, timeoutMs });
  const cli = (args: string[]) =>
    run(NODE, [`${ROOT}cli/bin/fnhost.js`, ...args, '--url', gatewayUrl, '--token', token, '--namespace', ns], {
      env: { HOME: tmp, XDG_CONFIG_HOME: join(tmp, 'config'), FNHOST_URL: undefined, FNHOST_TOKEN: undefined, FNHOST_NAMESPACE: undefined, NO_COLOR: '1' },
      timeoutMs: 120_000,
      cwd: tmp,
    });
  const functionFrom = (code: string) => JSON.stringify({
    apiVersion: 'fnhost.dev/v1alpha1', kind: 'Function', metadata: { name: 'pay', namespace: ns },
    spec: { code, timeoutSeconds: 10, recordRequests: { enabled: true, redact: { headers: ['x-card-token'], jsonPaths: ['$..card.number'] } } },
  });
  const invoke = () => fetch(`${gatewayUrl}/invoke/${derivedFunctionId(ns, 'pay')}/pay?q=1`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer caller-secret', 'x-card-token': 'tok_1' },
    body: JSON.stringify({ card: { number: '4111111111111111' }, qty: 2 }),
    signal: AbortSignal.timeout(10_000),
  });

  before(async function () {
    this.timeout(1_800_000);
    cluster = await getCluster();
    kubectl = makeKubectl(cluster);
    helm = (JSON.parse((await run(`${ROOT}test/cluster/env.sh`, ['--json'])).stdout) as { helm: string }).helm;
    tmp = await mkdtemp(join(tmpdir(), 'fnhost-e2e-replay-'));
    const suffix = uniqueName('x').slice(2);
    relNs = `fnhost-e2e-replay-${suffix}`;
    ns = `e2e-replay-${suffix}`;
    await Promise.all([buildPlatformImage(PLATFORM_IMAGE), buildRuntimeImage(RUNTIME_IMAGE)]);
    mongo = await startMongoServer({ useEnv: false });
    relay = await startRelay(cluster.hostIp ?? '10.244.0.1', mongo.port!);
    expect((await kubectl(['create', 'namespace', ns])).code).to.equal(0);
    const valuesFile = join(tmp, 'values.json');
    await writeFile(valuesFile, JSON.stringify({
      image: { repository: 'localhost/fnhost-platform', tag: E2E_TAG, pullPolicy: 'Never' },
      runtimeImage: { repository: 'localhost/fnhost-runtime', tag: E2E_TAG, pullPolicy: 'Never' },
      mongodb: { url: `mongodb://${cluster.hostIp ?? '10.244.0.1'}:${relay.port}/${dbName}` },
      gateway: { replicas: 1, defaultNamespace: ns, resources: { requests: { cpu: '50m', memory: '128Mi' }, limits: { memory: '512Mi' } } },
      operator: { resources: { requests: { cpu: '20m', memory: '96Mi' }, limits: { memory: '512Mi' } }, functionCpuRequest: '10m' },
      networkPolicy: { platformCIDRs: ['10.244.0.0/24', '10.96.0.0/16'] },
      platformNetworkPolicy: testClusterPlatformNetworkPolicy(cluster.hostIp ?? '10.244.0.1', relay.port),
    }));
    const installed = await helmRun(['install', release, `${ROOT}charts/fnhost`, '-n', relNs, '--create-namespace', '-f', valuesFile, '--wait', '--timeout', '8m']);
    expect(installed.code, installed.stderr + installed.stdout).to.equal(0);
    const svc = JSON.parse((await kubectl(['get', 'svc', `${release}-fnhost-gateway`, '-n', relNs, '-o', 'json'])).stdout);
    gatewayUrl = `http://${svc.spec.clusterIP}:8080`;
    const secret = JSON.parse((await kubectl(['get', 'secret', `${release}-fnhost-admin`, '-n', relNs, '-o', 'json'])).stdout);
    token = Buffer.from(secret.data.token, 'base64').toString('utf8');
  });

  after(async function () {
    this.timeout(300_000);
    if (kubectl !== undefined) {
      if (helm !== undefined && relNs) await helmRun(['uninstall', release, '-n', relNs, '--wait', '--timeout', '2m']);
      if (ns) {
        const list = await kubectl(['get', 'fn', '-n', ns, '-o', 'name']);
        for (const name of list.stdout.split('\n').filter(Boolean)) await kubectl(['patch', name, '-n', ns, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
      }
      for (const name of [ns, relNs]) if (name) await kubectl(['delete', 'namespace', name, '--wait=false']);
    }
    await relay?.close();
    await mongo?.stop();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  it('a Function applied with spec.recordRequests records its calls into MongoDB, masked, apart from the logs', async () => {
    const applied = await kubectl(['apply', '--server-side', '-f', '-'], functionFrom(V1));
    expect(applied.code, applied.stderr).to.equal(0);
    await waitFor('pay answering 200', async () => ((await invoke().catch(() => null))?.status === 200 ? true : null), 240_000, 1000);
    const get = await cli(['function:get', 'pay']);
    expect(get.stdout).to.match(/^Record Requests:\s+on \(bodies up to 65536 bytes; masked: x-card-token, \$\.\.card\.number\)$/m);
    const logs = JSON.parse((await cli(['function:logs', 'pay', '--output', 'json'])).stdout);
    logId = logs.logs[0].id;
    expect(JSON.stringify(logs)).to.not.include('card');
    const client = new MongoClient(mongo.url);
    try {
      const doc = await client.db(dbName).collection('log_exchanges').findOne({ _id: logId as never });
      expect(doc, 'the exchange document').to.not.equal(null);
      const stored = JSON.stringify(doc);
      expect(stored).to.include('[redacted]').and.not.include('4111111111111111').and.not.include('caller-secret').and.not.include('tok_1');
    } finally {
      await client.close();
    }
  });

  it('function:replay sends the recorded request to the pods\' current code (trigger replay)', async () => {
    expect((await kubectl(['apply', '--server-side', '-f', '-'], functionFrom(V2))).code).to.equal(0);
    await waitFor('the new code serving', async () => {
      const r = await invoke().catch(() => null);
      return r?.status === 200 && ((await r.json()) as { v: number }).v === 2 ? true : null;
    }, 240_000, 1000);
    const replay = await cli(['function:replay', 'pay', logId, '--yes', '--output', 'json']);
    expect(replay.code, replay.stderr).to.equal(0);
    const result = JSON.parse(replay.stdout);
    expect(result.changes).to.deep.equal([{ kind: 'json', path: '$.v', recorded: 1, replayed: 2 }]);
    const newest = await waitFor('the replay record', async () => {
      const logs = JSON.parse((await cli(['function:logs', 'pay', '--limit', '5', '--output', 'json'])).stdout);
      return logs.logs.find((l: { id: string }) => l.id === result.log_id) ?? null;
    }, 60_000, 1000);
    expect(newest.trigger).to.equal('replay');
  });

  const throwawayNames = async (kind: 'fn' | 'deployment') => {
    const list = await kubectl(['get', kind, '-n', ns, '-o', 'name']);
    expect(list.code, list.stderr).to.equal(0);
    return list.stdout.split('\n').filter((line) => /pay-rp-/.test(line));
  };
  /** A Function labelled as a throwaway of pay, applied by hand (what a gateway that died leaves, or an attempt to borrow an identity). */
  const throwawayManifest = (name: string, functionId: string, expiresAtMs: number) => JSON.stringify({
    apiVersion: 'fnhost.dev/v1alpha1', kind: 'Function',
    metadata: {
      name, namespace: ns,
      labels: { 'fnhost.dev/throwaway': 'replay', 'fnhost.dev/replay-of': 'pay' },
      annotations: { 'fnhost.dev/expires-at': new Date(expiresAtMs).toISOString() },
    },
    spec: { code: V3, functionId, replicas: 1 },
  });
  const replayApi = (body: unknown) => fetch(`${gatewayUrl}/api/v1/functions/pay/logs/${logId}/replay?namespace=${ns}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(120_000),
  });

  it('function:replay --code runs the recorded request once on a throwaway Function: new code answers, deployed code unchanged, never listed, deleted after', async () => {
    await writeFile(join(tmp, 'fix.js'), V3);
    const replaying = cli(['function:replay', 'pay', logId, '--code', 'fix.js', '--yes', '--output', 'json']);
    let done = false;
    void replaying.finally(() => (done = true));
    // While it runs: the throwaway exists as a Function, and the management API does not list it.
    let seen: string[] = [];
    let listed: string[] = [];
    while (!done && seen.length === 0) {
      seen = await throwawayNames('fn');
      if (seen.length > 0) {
        const all = (await (await fetch(`${gatewayUrl}/api/v1/functions?namespace=${ns}`, { headers: { authorization: `Bearer ${token}` } })).json()) as { functions: Array<{ name: string }> };
        listed = all.functions.map((f) => f.name);
      }
    }
    const replay = await replaying;
    expect(replay.code, replay.stderr + replay.stdout).to.equal(0);
    expect(seen, 'the throwaway Function seen while the replay ran').to.have.length(1);
    expect(listed).to.deep.equal(['pay']);
    const result = JSON.parse(replay.stdout);
    expect(result.code).to.equal('throwaway');
    expect(result.changes).to.deep.include({ kind: 'json', path: '$.v', recorded: 1, replayed: 3 });
    expect(JSON.parse(result.replayed.body.data)).to.deep.include({ v: 3, kv: 'v2' });
    // Recorded under the original, trigger replay.
    const record = await waitFor('the replay record under pay', async () => {
      const logs = JSON.parse((await cli(['function:logs', 'pay', '--limit', '5', '--output', 'json'])).stdout);
      return logs.logs.find((l: { id: string }) => l.id === result.log_id) ?? null;
    }, 60_000, 1000);
    expect(record.trigger).to.equal('replay');
    // The deployed code is unchanged.
    const normal = await invoke();
    expect(((await normal.json()) as { v: number }).v).to.equal(2);
    // The throwaway Function and its Deployment are gone.
    await waitFor('the throwaway Function and its Deployment deleted', async () =>
      (await throwawayNames('fn')).length === 0 && (await throwawayNames('deployment')).length === 0 ? true : null, 120_000, 1000);
  });

  it('replay with invalid code: 400, nothing left', async () => {
    const empty = await replayApi({ code: '   ' });
    expect(empty.status).to.equal(400);
    expect(await throwawayNames('fn'), 'nothing created for empty code').to.deep.equal([]);
    const broken = await replayApi({ code: 'export default (req, res) => {' });
    const body = (await broken.json()) as { error: string; message: string };
    expect(broken.status, JSON.stringify(body)).to.equal(400);
    expect(body.error).to.equal('invalid_code');
    await waitFor('no throwaway left after the refusal', async () => ((await throwawayNames('fn')).length === 0 ? true : null), 120_000, 1000);
    expect(await throwawayNames('deployment')).to.deep.equal([]);
  });

  it('a throwaway left past its expiry (its gateway died mid-replay) is deleted by the gateway\'s sweep', async () => {
    const leftover = throwawayManifest('pay-rp-left0', derivedFunctionId(ns, 'pay'), Date.now() - 1000);
    expect((await kubectl(['apply', '--server-side', '-f', '-'], leftover)).code).to.equal(0);
    // The sweep runs every minute.
    await waitFor('the leftover throwaway deleted', async () => ((await throwawayNames('fn')).length === 0 ? true : null), 180_000, 2000);
    // Its original's logs were not cleaned with it (same functionId).
    const logs = JSON.parse((await cli(['function:logs', 'pay', '--output', 'json'])).stdout);
    expect(logs.logs.some((l: { id: string }) => l.id === logId)).to.equal(true);
  });

  it('a Function labelled as a throwaway cannot borrow another namespace\'s function identity (InvalidThrowaway, no pod)', async () => {
    const borrowed = throwawayManifest('pay-rp-evil0', derivedFunctionId(relNs, 'victim'), Date.now() + 600_000);
    expect((await kubectl(['apply', '--server-side', '-f', '-'], borrowed)).code).to.equal(0);
    const ready = await waitFor('the operator refusing the borrowed identity', async () => {
      const got = await kubectl(['get', 'fn', 'pay-rp-evil0', '-n', ns, '-o', 'json']);
      const c = (JSON.parse(got.stdout).status?.conditions ?? []).find((x: { type: string }) => x.type === 'Ready');
      return c?.reason === 'InvalidThrowaway' ? c : null;
    }, 120_000, 1000);
    expect(ready.status).to.equal('False');
    expect(await throwawayNames('deployment')).to.deep.equal([]);
    expect((await kubectl(['delete', 'fn', 'pay-rp-evil0', '-n', ns, '--wait=true', '--timeout=60s'])).code).to.equal(0);
  });

  it('a Function of another namespace naming pay\'s functionId gets none of it (FunctionIdTaken: no pod, no finalizer, not served); pay keeps serving, and its logs outlive the other\'s deletion', async () => {
    const other = `${ns}-b`;
    expect((await kubectl(['create', 'namespace', other])).code).to.equal(0);
    try {
      const payId = derivedFunctionId(ns, 'pay');
      const logsOfPay = async () => (JSON.parse((await cli(['function:logs', 'pay', '--output', 'json'])).stdout) as { pagination: { totalCount: number } }).pagination.totalCount;
      const before = await logsOfPay();
      const taker = JSON.stringify({ apiVersion: 'fnhost.dev/v1alpha1', kind: 'Function', metadata: { name: 'taker', namespace: other }, spec: { code: 'export default (req, res) => res.json({ taken: true })', functionId: payId } });
      expect((await kubectl(['apply', '--server-side', '-f', '-'], taker)).code).to.equal(0);
      const ready = await waitFor('the operator refusing the taken id', async () => {
        const got = JSON.parse((await kubectl(['get', 'fn', 'taker', '-n', other, '-o', 'json'])).stdout);
        const c = (got.status?.conditions ?? []).find((x: { type: string }) => x.type === 'Ready');
        return c?.reason === 'FunctionIdTaken' ? { c, finalizers: got.metadata.finalizers ?? [] } : null;
      }, 120_000, 1000);
      expect(ready.c.status).to.equal('False');
      expect(ready.c.message).to.include(`${ns}/pay`);
      expect(ready.finalizers).to.deep.equal([]);
      expect((await kubectl(['get', 'deployments', '-n', other, '-o', 'name'])).stdout.trim()).to.equal('');
      // The gateway serves pay under the id, and nothing under the other name.
      const auth = { authorization: `Bearer ${token}` };
      const listed = (await (await fetch(`${gatewayUrl}/api/v1/functions?namespace=${other}`, { headers: auth })).json()) as { functions: unknown[] };
      expect(listed.functions).to.deep.equal([]);
      // Called by name it says why (issue 28), without naming the owner: none of pay's logs.
      const takerLogs = await fetch(`${gatewayUrl}/api/v1/functions/taker/logs?namespace=${other}`, { headers: auth });
      expect(takerLogs.status).to.equal(409);
      const refusal = (await takerLogs.json()) as { error: string; message: string };
      expect(refusal.error).to.equal('function_refused');
      expect(refusal.message).to.contain('FunctionIdTaken').and.not.to.contain(`${ns}/pay`);
      const call = await invoke();
      expect(call.status).to.equal(200);
      expect(((await call.json()) as { taken?: boolean }).taken).to.equal(undefined);
      await waitFor('pay\'s new record', async () => ((await logsOfPay()) > before ? true : null), 60_000, 500);
      const withCall = await logsOfPay();
      expect((await kubectl(['delete', 'fn', 'taker', '-n', other, '--wait=true', '--timeout=60s'])).code).to.equal(0);
      expect(await logsOfPay()).to.equal(withCall);
    } finally {
      await kubectl(['delete', 'namespace', other, '--wait=false']);
    }
  });
});
