import { expect } from 'chai';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { derivedFunctionId } from '../../gateway/src/cluster/resource.ts';
import { startMongoServer, type MongoTestServer } from '../helpers/mongo-server.ts';
import { getCluster, makeKubectl, uniqueName, type ClusterAccess } from '../operator/harness.ts';
import { ROOT, PLATFORM_IMAGE, RUNTIME_IMAGE, buildPlatformImage, buildRuntimeImage, installTestRelease, run, startRelay, waitFor, type Run } from './helpers.ts';

// Issue 28.1, a function's identity belongs to its namespace, on the test cluster: the chart
// installed with helm, two teams in two namespaces, each with an editor ServiceAccount bound to the
// cluster's `edit` in its own namespace (docs/install.md "Access"), and a mover bound to `edit` in
// both. Every kubectl write is made as one of them (impersonation: the API server authorizes, and the
// chart's ValidatingAdmissionPolicy sees, that user). It replays the attack of the issue: team-b
// names team-a's functionId, team-a's Function is deleted and re-applied (a GitOps replace), team-b's
// claimant is deleted; team-a keeps its URL, its KV and its logs throughout, checked with real calls.
// Then a move without a grant (refused by the operator), a grant by a user who may not claim in
// team-a (refused at admission, kubectl shows the policy's message), and a granted move that works.

const ANNOTATION = 'fnhost.dev/function-id-home';
/** team-b's namespace totals (chart quotas.namespaces.overrides): KV bytes and recorded-request bytes. */
const NS_KV_BYTES = 16_384;
const NS_RECORDED_BYTES = 16_384;
/** Writes 1 KiB values until refused; answers how many were stored and the refusal's message. */
const KV_FILL = `export default async (req, res) => { let stored = 0, error = null; for (let i = 0; i < 40 && error === null; i++) { try { await kv.set('k' + i, 'x'.repeat(1000)); stored++; } catch (e) { error = String(e.message); } } res.json({ stored, error }); }`;
const ECHO = `export default (req, res) => res.json({ size: JSON.stringify(req.body ?? null).length })`;
/** Answers which team's code runs, and the KV key `owner` (set with ?put=). */
const code = (team: string) =>
  `export default async (req, res) => { if (req.query.put) await kv.set('owner', req.query.put); res.json({ team: ${JSON.stringify(team)}, owner: (await kv.get('owner')) ?? null }) }`;

describe('fnhost on Kubernetes: a function\'s identity belongs to its namespace (issue 28.1)', function () {
  this.timeout(600_000);
  let cluster: ClusterAccess;
  let kubectl: ReturnType<typeof makeKubectl>;
  let helm: string;
  let mongo: MongoTestServer;
  let relay: { port: number; close(): Promise<void> };
  let relNs: string;
  let teamA: string;
  let teamB: string;
  let tmp: string;
  let gatewayUrl: string;
  let adminToken: string;
  let uninstalled = false;
  const release = 'e2e-tenancy';
  const dbName = `fnhost_e2e_tenancy_${Date.now()}`;

  const helmRun = (args: string[], timeoutMs = 600_000) => run(helm, args, { env: { KUBECONFIG: cluster.kubeconfig }, timeoutMs });
  const user = (ns: string, sa: string) => `system:serviceaccount:${ns}:${sa}`;
  /** kubectl as a user (impersonated by the test's admin kubeconfig). */
  const as = (who: string, args: string[], input?: string): Promise<Run> => kubectl([...args, '--as', who], input);
  const manifest = (ns: string, name: string, team: string, extra: { functionId?: string; home?: string } = {}) =>
    JSON.stringify({
      apiVersion: 'fnhost.dev/v1alpha1',
      kind: 'Function',
      metadata: { name, namespace: ns, ...(extra.home ? { annotations: { [ANNOTATION]: extra.home } } : {}) },
      spec: { code: code(team), ...(extra.functionId ? { functionId: extra.functionId } : {}) },
    });
  const ready = async (ns: string, name: string) => {
    const got = await kubectl(['get', 'fn', name, '-n', ns, '-o', 'json']);
    if (got.code !== 0) return undefined;
    const fn = JSON.parse(got.stdout);
    return { fn, c: (fn.status?.conditions ?? []).find((x: { type: string }) => x.type === 'Ready') as { status: string; reason: string; message: string } | undefined };
  };
  const waitReason = (ns: string, name: string, reason: string) =>
    waitFor(`${ns}/${name} Ready ${reason}`, async () => {
      const r = await ready(ns, name);
      return r?.c?.reason === reason ? r : null;
    }, 180_000, 1000);
  const invoke = async (id: string, query = '') => {
    const r = await fetch(`${gatewayUrl}/invoke/${id}/${query}`, { signal: AbortSignal.timeout(60_000) });
    return { status: r.status, body: r.headers.get('content-type')?.includes('json') ? ((await r.json()) as { team?: string; owner?: string | null; error?: { code?: string } }) : undefined };
  };
  const logCount = async (ns: string, name: string) => {
    const r = await fetch(`${gatewayUrl}/api/v1/functions/${name}/logs?namespace=${ns}`, { headers: { authorization: `Bearer ${adminToken}` }, signal: AbortSignal.timeout(30_000) });
    if (r.status === 404) return null;
    expect(r.status).to.equal(200);
    return ((await r.json()) as { pagination: { totalCount: number } }).pagination.totalCount;
  };
  const gone = (ns: string, name: string) => waitFor(`${ns}/${name} gone`, async () => ((await kubectl(['get', 'fn', name, '-n', ns])).code !== 0 ? true : null), 120_000, 1000);

  before(async function () {
    this.timeout(1_800_000);
    cluster = await getCluster();
    kubectl = makeKubectl(cluster);
    helm = (JSON.parse((await run(`${ROOT}test/cluster/env.sh`, ['--json'])).stdout) as { helm: string }).helm;
    tmp = await mkdtemp(join(tmpdir(), 'fnhost-e2e-tenancy-'));
    const suffix = uniqueName('x').slice(2);
    relNs = `fnhost-e2e-ten-${suffix}`;
    teamA = `e2e-team-a-${suffix}`;
    teamB = `e2e-team-b-${suffix}`;
    await Promise.all([buildPlatformImage(PLATFORM_IMAGE), buildRuntimeImage(RUNTIME_IMAGE)]);
    mongo = await startMongoServer({ useEnv: false });
    relay = await startRelay(cluster.hostIp ?? '10.244.0.1', mongo.port!);
    for (const name of [teamA, teamB]) expect((await kubectl(['create', 'namespace', name])).code).to.equal(0);
    const hostIp = cluster.hostIp ?? '10.244.0.1';
    ({ gatewayUrl, adminToken } = await installTestRelease({
      helm: helmRun,
      kubectl,
      release,
      namespace: relNs,
      hostIp,
      mongoUrl: `mongodb://${hostIp}:${relay.port}/${dbName}`,
      mongoPort: relay.port,
      valuesFile: join(tmp, 'values.json'),
      values: {
        gateway: { replicas: 1, defaultNamespace: teamA, resources: { requests: { cpu: '50m', memory: '128Mi' }, limits: { memory: '512Mi' } } },
        functions: { namespaces: [teamA, teamB] },
        // Issue 28.2: team-b's namespace totals set small by the platform team (overrides per namespace).
        quotas: { namespaces: { overrides: { [teamB]: { kvBytes: NS_KV_BYTES, recordedBytes: NS_RECORDED_BYTES } } } },
      },
    }));
    // docs/install.md "Access": a team's people get the cluster's edit role in their namespace (RoleBindings only: nothing cluster-wide).
    for (const [ns, sa] of [[teamA, 'editor'], [teamB, 'editor'], [teamB, 'mover']] as const) {
      expect((await kubectl(['create', 'serviceaccount', sa, '-n', ns])).code).to.equal(0);
      expect((await kubectl(['create', 'rolebinding', `${sa}-edit`, '-n', ns, '--clusterrole=edit', `--serviceaccount=${ns}:${sa}`])).code).to.equal(0);
    }
    // The mover edits in team-a too (one who may give team-a's ids away).
    expect((await kubectl(['create', 'rolebinding', 'mover-edit', '-n', teamA, '--clusterrole=edit', `--serviceaccount=${teamB}:mover`])).code).to.equal(0);
  });

  after(async function () {
    this.timeout(300_000);
    if (kubectl !== undefined) {
      for (const ns of [teamA, teamB]) if (ns) await kubectl(['delete', 'fn', '--all', '-n', ns, '--wait=true', '--timeout=120s']);
      if (helm !== undefined && relNs && !uninstalled) await helmRun(['uninstall', release, '-n', relNs, '--wait', '--timeout', '2m']);
      for (const ns of [teamA, teamB]) {
        if (!ns) continue;
        const list = await kubectl(['get', 'fn', '-n', ns, '-o', 'name']);
        for (const fn of list.stdout.split('\n').filter(Boolean)) await kubectl(['patch', fn, '-n', ns, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
      }
      for (const name of [teamA, teamB, relNs]) if (name) await kubectl(['delete', 'namespace', name, '--wait=false']);
    }
    await relay?.close();
    await mongo?.stop();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  it('the API server serves ValidatingAdmissionPolicy v1 and the chart installed its policy and binding; edit may claim in its own namespace only', async () => {
    const versions = await kubectl(['api-versions']);
    expect(versions.stdout.split('\n')).to.include('admissionregistration.k8s.io/v1');
    expect((await kubectl(['get', 'validatingadmissionpolicy', 'fnhost-function-id-grants'])).code).to.equal(0);
    expect((await kubectl(['get', 'validatingadmissionpolicybinding', 'fnhost-function-id-grants'])).code).to.equal(0);
    const can = async (who: string, ns: string) => (await kubectl(['auth', 'can-i', 'claim', 'functions.fnhost.dev', '-n', ns, '--as', who])).stdout.trim();
    expect(await can(user(teamA, 'editor'), teamA)).to.equal('yes');
    expect(await can(user(teamB, 'editor'), teamA)).to.equal('no');
    expect(await can(user(teamB, 'mover'), teamA)).to.equal('yes');
  });

  it('issue 28: team-b names team-a\'s id, team-a deletes and re-applies its Function, team-b deletes its claimant: team-a keeps its URL, KV and logs throughout; team-b never gets a call, a pod or the KV', async () => {
    const aEditor = user(teamA, 'editor');
    const bEditor = user(teamB, 'editor');
    const id = derivedFunctionId(teamA, 'hello-a');
    const applied = await as(aEditor, ['apply', '-f', '-'], manifest(teamA, 'hello-a', 'a'));
    expect(applied.code, applied.stderr).to.equal(0);
    await waitReason(teamA, 'hello-a', 'Available');
    const first = await invoke(id, '?put=team-a-data');
    expect(first).to.deep.equal({ status: 200, body: { team: 'a', owner: 'team-a-data' } });

    // team-b claims the id (as in the issue): refused, nothing made in team-b.
    const claim = await as(bEditor, ['apply', '-f', '-'], manifest(teamB, 'steal', 'b', { functionId: id }));
    expect(claim.code, claim.stderr).to.equal(0);
    const taken = await waitReason(teamB, 'steal', 'FunctionIdTaken');
    expect(taken.c!.status).to.equal('False');
    expect(taken.c!.message).to.include(teamA);
    expect((await invoke(id)).body).to.deep.equal({ team: 'a', owner: 'team-a-data' });

    // team-a's GitOps replace: deleted (its finalizer cleans its logs), then applied again.
    expect((await as(aEditor, ['delete', 'fn', 'hello-a', '-n', teamA, '--wait=true', '--timeout=120s'])).code).to.equal(0);
    await gone(teamA, 'hello-a');
    // While team-a's Function is absent, the id is nobody's: team-b's claimant stays refused and is not served.
    const absent = await invoke(id);
    expect(absent.status).to.equal(404);
    expect(absent.body?.team).to.equal(undefined);
    // Given the operator time to look at the claimant again (the owner's deletion requeues it).
    await waitFor('the claimant looked at again', async () => {
      const r = await ready(teamB, 'steal');
      return r?.c?.reason === 'FunctionIdTaken' && r.fn.metadata.generation === r.fn.status?.observedGeneration ? r : null;
    }, 60_000, 1000);
    expect((await kubectl(['get', 'deployments,secrets', '-n', teamB, '-l', 'app.kubernetes.io/managed-by=fnhost-operator', '-o', 'name'])).stdout.trim()).to.equal('');
    expect((await ready(teamB, 'steal'))!.fn.metadata.finalizers ?? []).to.deep.equal([]);
    // Called by name, the claimant is refused with its reason (issue 28.3), never served the id's logs.
    const byName = await fetch(`${gatewayUrl}/api/v1/functions/steal/logs?namespace=${teamB}`, { headers: { authorization: `Bearer ${adminToken}` }, signal: AbortSignal.timeout(30_000) });
    expect(byName.status).to.equal(409);
    expect(((await byName.json()) as { error: string }).error).to.equal('function_refused');

    const again = await as(aEditor, ['apply', '-f', '-'], manifest(teamA, 'hello-a', 'a'));
    expect(again.code, again.stderr).to.equal(0);
    await waitReason(teamA, 'hello-a', 'Available');
    // The same URL, team-a's code, team-a's KV; team-b's claimant still refused.
    const back = await waitFor('team-a served again', async () => {
      const r = await invoke(id);
      return r.status === 200 ? r : null;
    }, 120_000, 1000);
    expect(back.body).to.deep.equal({ team: 'a', owner: 'team-a-data' });
    expect((await ready(teamB, 'steal'))!.c!.reason).to.equal('FunctionIdTaken');
    expect((await ready(teamA, 'hello-a'))!.fn.status.url).to.match(new RegExp(`/invoke/${id}$`));
    await waitFor('team-a\'s records', async () => ((await logCount(teamA, 'hello-a')) ?? 0) >= 1 ? true : null, 60_000, 500);
    const logs = (await logCount(teamA, 'hello-a'))!;

    // team-b deletes its claimant: nothing of team-a's goes with it.
    expect((await as(bEditor, ['delete', 'fn', 'steal', '-n', teamB, '--wait=true', '--timeout=120s'])).code).to.equal(0);
    await gone(teamB, 'steal');
    expect(await logCount(teamA, 'hello-a')).to.equal(logs);
    expect((await invoke(id)).body).to.deep.equal({ team: 'a', owner: 'team-a-data' });
    await waitFor('the last call\'s record', async () => ((await logCount(teamA, 'hello-a')) ?? 0) > logs ? true : null, 60_000, 500);
  });

  it('a move without a grant is refused by the operator, and a grant from a user who may not claim in the home is refused at admission with the policy\'s message', async () => {
    const bEditor = user(teamB, 'editor');
    const id = derivedFunctionId(teamA, 'hello-a');
    const ungranted = await as(bEditor, ['apply', '-f', '-'], manifest(teamB, 'move-me', 'b', { functionId: id }));
    expect(ungranted.code, ungranted.stderr).to.equal(0);
    const refused = await waitReason(teamB, 'move-me', 'FunctionIdTaken');
    expect(refused.c!.message).to.include(ANNOTATION);
    expect((await as(bEditor, ['delete', 'fn', 'move-me', '-n', teamB, '--wait=true', '--timeout=60s'])).code).to.equal(0);

    const forged = await as(bEditor, ['apply', '-f', '-'], manifest(teamB, 'move-me', 'b', { functionId: id, home: teamA }));
    expect(forged.code).to.not.equal(0);
    expect(forged.stderr).to.include('fnhost-function-id-grants');
    expect(forged.stderr).to.include(`needs permission to claim functions.fnhost.dev there; ${bEditor} may not`);
    expect((await kubectl(['get', 'fn', 'move-me', '-n', teamB])).code).to.not.equal(0);
    // Nor by adding the annotation to an existing Function.
    expect((await as(bEditor, ['apply', '-f', '-'], manifest(teamB, 'later', 'b', { functionId: id }))).code).to.equal(0);
    const annotated = await as(bEditor, ['annotate', 'fn', 'later', '-n', teamB, `${ANNOTATION}=${teamA}`]);
    expect(annotated.code).to.not.equal(0);
    expect(annotated.stderr).to.include('may not');
    expect((await as(bEditor, ['delete', 'fn', 'later', '-n', teamB, '--wait=true', '--timeout=60s'])).code).to.equal(0);
    expect((await invoke(id)).body).to.deep.equal({ team: 'a', owner: 'team-a-data' });
  });

  it('a granted move: a user who may claim in team-a moves the id to team-b; the URL serves team-b\'s Function with the id\'s KV, team-a\'s old Function is refused, its pods go and its Secret is emptied', async () => {
    const mover = user(teamB, 'mover');
    const id = derivedFunctionId(teamA, 'hello-a');
    const moved = await as(mover, ['apply', '-f', '-'], manifest(teamB, 'hello-moved', 'b', { functionId: id, home: teamA }));
    expect(moved.code, moved.stderr).to.equal(0);
    await waitReason(teamB, 'hello-moved', 'Available');
    const old = await waitReason(teamA, 'hello-a', 'FunctionIdTaken');
    expect(old.c!.message).to.include(teamB).and.to.include('granted move');
    // Its pods go and its Secret holds no token any more.
    await waitFor('team-a\'s old pods gone', async () => {
      const pods = await kubectl(['get', 'pods', '-n', teamA, '-l', 'fnhost.dev/function=hello-a,fnhost.dev/role=runtime', '-o', 'name']);
      return pods.code === 0 && pods.stdout.trim() === '' ? true : null;
    }, 180_000, 1000);
    const secret = JSON.parse((await kubectl(['get', 'secret', 'fn-hello-a-tokens', '-n', teamA, '-o', 'json'])).stdout);
    expect(secret.data ?? {}).to.deep.equal({});
    const served = await waitFor('the id served by the moved Function', async () => {
      const r = await invoke(id);
      return r.status === 200 && r.body?.team === 'b' ? r : null;
    }, 120_000, 1000);
    expect(served.body).to.deep.equal({ team: 'b', owner: 'team-a-data' });
    const events = await kubectl(['get', 'events', '-n', teamB, '--field-selector', 'involvedObject.name=hello-moved', '-o', 'json']);
    expect(JSON.stringify(JSON.parse(events.stdout).items.map((e: { reason: string }) => e.reason))).to.include('FunctionIdMoved');
    // Deleting team-a's refused Function cleans none of the moved id's logs.
    await waitFor('the moved Function\'s record', async () => ((await logCount(teamB, 'hello-moved')) ?? 0) >= 1 ? true : null, 60_000, 500);
    const logs = await logCount(teamB, 'hello-moved');
    expect((await kubectl(['delete', 'fn', 'hello-a', '-n', teamA, '--wait=true', '--timeout=120s'])).code).to.equal(0);
    expect(await logCount(teamB, 'hello-moved')).to.equal(logs);
  });

  it('issue 28.2: a namespace\'s KV and recorded-request totals (set per namespace in the chart) refuse team-b past them, naming the namespace; team-a is unaffected', async () => {
    for (const ns of [teamA, teamB]) {
      const fill = JSON.stringify({ apiVersion: 'fnhost.dev/v1alpha1', kind: 'Function', metadata: { name: 'kvfill', namespace: ns }, spec: { code: KV_FILL } });
      expect((await as(user(ns, 'editor'), ['apply', '-f', '-'], fill)).code).to.equal(0);
      const rec = JSON.stringify({ apiVersion: 'fnhost.dev/v1alpha1', kind: 'Function', metadata: { name: 'rec', namespace: ns }, spec: { code: ECHO, recordRequests: { enabled: true } } });
      expect((await as(user(ns, 'editor'), ['apply', '-f', '-'], rec)).code).to.equal(0);
    }
    for (const ns of [teamA, teamB]) for (const name of ['kvfill', 'rec']) await waitReason(ns, name, 'Available');
    const fillIn = async (ns: string) => {
      const r = await fetch(`${gatewayUrl}/invoke/${derivedFunctionId(ns, 'kvfill')}/`, { signal: AbortSignal.timeout(60_000) });
      expect(r.status).to.equal(200);
      return (await r.json()) as { stored: number; error: string | null };
    };
    // team-b: refused once its namespace holds NS_KV_BYTES, the handler's error naming the namespace and the quota.
    const b = await fillIn(teamB);
    expect(b.stored, JSON.stringify(b)).to.be.within(1, Math.floor(NS_KV_BYTES / 1000));
    expect(b.error).to.include(`namespace ${teamB}`).and.to.include('namespace_kv_bytes');
    // team-a: the platform's default total (1 GiB) is far away.
    expect(await fillIn(teamA)).to.deep.equal({ stored: 40, error: null });

    // Recorded requests: 4 KiB bodies until team-b's total is reached; later exchanges keep no body, saying why.
    const body = JSON.stringify({ pad: 'y'.repeat(4000) });
    const recorded = async (ns: string) => {
      const id = derivedFunctionId(ns, 'rec');
      for (let i = 0; i < 12; i++) {
        const r = await fetch(`${gatewayUrl}/invoke/${id}/`, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal: AbortSignal.timeout(60_000) });
        expect(r.status).to.equal(200);
        await r.arrayBuffer();
      }
      const auth = { authorization: `Bearer ${adminToken}` };
      const logs = await waitFor(`12 records of ${ns}/rec`, async () => {
        const r = await fetch(`${gatewayUrl}/api/v1/functions/rec/logs?namespace=${ns}&limit=20`, { headers: auth });
        const page = (await r.json()) as { logs: Array<{ id: string }>; pagination: { totalCount: number } };
        return page.pagination.totalCount >= 12 ? page.logs : null;
      }, 60_000, 500);
      const omitted: string[] = [];
      for (const log of logs) {
        const r = await fetch(`${gatewayUrl}/api/v1/functions/rec/logs/${log.id}/request?namespace=${ns}`, { headers: auth });
        expect(r.status).to.equal(200);
        const ex = (await r.json()) as { request: { body: { omitted?: string } | null } };
        if (ex.request.body?.omitted !== undefined) omitted.push(ex.request.body.omitted);
      }
      return omitted;
    };
    const bOmitted = await recorded(teamB);
    expect(bOmitted.length, 'team-b: exchanges past the total keep no body').to.be.at.least(1);
    expect(bOmitted[0]).to.include(teamB);
    expect(await recorded(teamA), 'team-a: every body kept').to.deep.equal([]);
  });

  it('helm uninstall removes the policy and its binding: nothing cluster-wide is left', async () => {
    for (const ns of [teamA, teamB]) await kubectl(['delete', 'fn', '--all', '-n', ns, '--wait=true', '--timeout=120s']);
    const out = await helmRun(['uninstall', release, '-n', relNs, '--wait', '--timeout', '2m']);
    expect(out.code, out.stderr).to.equal(0);
    uninstalled = true;
    expect((await kubectl(['get', 'validatingadmissionpolicy', 'fnhost-function-id-grants'])).code).to.not.equal(0);
    expect((await kubectl(['get', 'validatingadmissionpolicybinding', 'fnhost-function-id-grants'])).code).to.not.equal(0);
  });
});
