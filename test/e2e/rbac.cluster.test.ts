import { expect } from 'chai';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { derivedFunctionId } from '../../gateway/src/cluster/resource.ts';
import { startMongoServer, type MongoTestServer } from '../helpers/mongo-server.ts';
import { getCluster, makeKubectl, uniqueName, type ClusterAccess } from '../operator/harness.ts';
import { NODE, ROOT, PLATFORM_IMAGE, RUNTIME_IMAGE, buildPlatformImage, buildRuntimeImage, installTestRelease, run, startRelay, waitFor, type Run } from './helpers.ts';

// Issue 22, access through Kubernetes' own RBAC, on the test cluster: the chart installed with
// helm (functions.namespaces naming the test's namespace), three ServiceAccounts whose tokens come
// from the TokenRequest API (kubectl create token), bound to the cluster's view (cluster-wide),
// edit (in the namespace) and nothing. Each logs in through the real CLI with `fnhost login --kube`
// from a kubeconfig of its own, and gets exactly what its role allows: list/get/logs for view;
// create/deploy/delete for edit; 403 for none. The admin token is refused kube-system and a
// namespace not listed; a Function applied there with kubectl gets Ready=False; -A lists across
// namespaces; function:deploy returns only once the new code serves; Updated follows kubectl edits.

const V1 = `export default (req, res) => res.json({ version: 1 })`;
const V2 = `export default (req, res) => res.json({ version: 2 })`;

describe('fnhost on Kubernetes: access through Kubernetes RBAC (issue 22)', function () {
  this.timeout(600_000);
  let cluster: ClusterAccess;
  let kubectl: ReturnType<typeof makeKubectl>;
  let helm: string;
  let mongo: MongoTestServer;
  let relay: { port: number; close(): Promise<void> };
  let relNs: string;
  let ns: string;
  let other: string;
  let tmp: string;
  let gatewayUrl: string;
  let adminToken: string;
  const release = 'e2e-rbac';
  const dbName = `fnhost_e2e_rbac_${Date.now()}`;
  const identities = ['viewer', 'editor', 'nobody'] as const;
  type Identity = (typeof identities)[number];

  const helmRun = (args: string[], timeoutMs = 600_000) => run(helm, args, { env: { KUBECONFIG: cluster.kubeconfig }, timeoutMs });
  const home = (who: string) => join(tmp, who);
  /** The CLI as one identity: its own HOME, config folder and kubeconfig; no token on the command line. */
  const as = (who: Identity, args: string[]): Promise<Run> =>
    run(NODE, [`${ROOT}cli/bin/fnhost.js`, ...args], {
      env: { HOME: home(who), XDG_CONFIG_HOME: join(home(who), 'config'), KUBECONFIG: join(home(who), 'kubeconfig'), FNHOST_URL: undefined, FNHOST_TOKEN: undefined, FNHOST_NAMESPACE: undefined, NO_COLOR: '1' },
      timeoutMs: 300_000,
    });
  const admin = (args: string[]): Promise<Run> =>
    run(NODE, [`${ROOT}cli/bin/fnhost.js`, ...args, '--url', gatewayUrl, '--token', adminToken], {
      env: { HOME: home('admin'), XDG_CONFIG_HOME: join(home('admin'), 'config'), KUBECONFIG: join(home('admin'), 'none'), FNHOST_URL: undefined, FNHOST_TOKEN: undefined, FNHOST_NAMESPACE: undefined, NO_COLOR: '1' },
      timeoutMs: 300_000,
    });
  const file = async (name: string, code: string) => {
    const path = join(tmp, name);
    await writeFile(path, code);
    return path;
  };
  const invoke = async (name: string) => {
    const r = await fetch(`${gatewayUrl}/invoke/${derivedFunctionId(ns, name)}/`, { signal: AbortSignal.timeout(30_000) });
    return { status: r.status, body: r.status === 200 ? ((await r.json()) as { version: number }) : undefined };
  };

  before(async function () {
    this.timeout(1_800_000);
    cluster = await getCluster();
    kubectl = makeKubectl(cluster);
    helm = (JSON.parse((await run(`${ROOT}test/cluster/env.sh`, ['--json'])).stdout) as { helm: string }).helm;
    tmp = await mkdtemp(join(tmpdir(), 'fnhost-e2e-rbac-'));
    const suffix = uniqueName('x').slice(2);
    relNs = `fnhost-e2e-rbac-${suffix}`;
    ns = `e2e-rbac-${suffix}`;
    other = `e2e-rbac-other-${suffix}`;
    await Promise.all([buildPlatformImage(PLATFORM_IMAGE), buildRuntimeImage(RUNTIME_IMAGE)]);
    mongo = await startMongoServer({ useEnv: false });
    relay = await startRelay(cluster.hostIp ?? '10.244.0.1', mongo.port!);
    for (const name of [ns, other]) expect((await kubectl(['create', 'namespace', name])).code).to.equal(0);
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
        gateway: { replicas: 1, defaultNamespace: ns, resources: { requests: { cpu: '50m', memory: '128Mi' }, limits: { memory: '512Mi' } } },
        functions: { namespaces: [ns] },
      },
    }));

    // Three identities: view across the cluster, edit in the namespace, nothing.
    for (const who of identities) expect((await kubectl(['create', 'serviceaccount', who, '-n', ns])).code).to.equal(0);
    expect((await kubectl(['create', 'clusterrolebinding', `${ns}-viewer`, '--clusterrole=view', `--serviceaccount=${ns}:viewer`])).code).to.equal(0);
    expect((await kubectl(['create', 'rolebinding', 'editor', '-n', ns, '--clusterrole=edit', `--serviceaccount=${ns}:editor`])).code).to.equal(0);
    const server = JSON.parse((await kubectl(['config', 'view', '--raw', '--minify', '-o', 'json'])).stdout).clusters[0].cluster;
    for (const who of identities) {
      const token = await kubectl(['create', 'token', who, '-n', ns, '--duration=2h']);
      expect(token.code, token.stderr).to.equal(0);
      await mkdir(home(who), { recursive: true });
      await writeFile(
        join(home(who), 'kubeconfig'),
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'Config',
          'current-context': who,
          clusters: [{ name: 'test', cluster: server }],
          users: [{ name: who, user: { token: token.stdout.trim() } }],
          contexts: [{ name: who, context: { cluster: 'test', user: who, namespace: ns } }],
        }),
      );
    }
    await mkdir(home('admin'), { recursive: true });
  });

  after(async function () {
    this.timeout(300_000);
    if (kubectl !== undefined) {
      if (ns) await kubectl(['delete', 'fn', '--all', '-n', ns, '--wait=true', '--timeout=120s']);
      if (other) await kubectl(['delete', 'fn', '--all', '-n', other, '--wait=true', '--timeout=60s']);
      if (helm !== undefined && relNs) await helmRun(['uninstall', release, '-n', relNs, '--wait', '--timeout', '2m']);
      for (const name of [ns, other]) {
        if (!name) continue;
        const list = await kubectl(['get', 'fn', '-n', name, '-o', 'name']);
        for (const fn of list.stdout.split('\n').filter(Boolean)) await kubectl(['patch', fn, '-n', name, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
      }
      if (ns) await kubectl(['delete', 'clusterrolebinding', `${ns}-viewer`, '--ignore-not-found']);
      for (const name of [ns, other, relNs]) if (name) await kubectl(['delete', 'namespace', name, '--wait=false']);
    }
    await relay?.close();
    await mongo?.stop();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  it("the chart's aggregated roles make kubectl auth can-i follow view, edit and none", async () => {
    const can = async (who: Identity, args: string[]) => (await kubectl(['auth', 'can-i', ...args, '-n', ns, '--as', `system:serviceaccount:${ns}:${who}`])).stdout.trim();
    const cases: Array<[Identity, string[], string]> = [
      ['viewer', ['list', 'functions.fnhost.dev'], 'yes'],
      ['viewer', ['get', 'functions.fnhost.dev', '--subresource=logs'], 'yes'],
      ['viewer', ['create', 'functions.fnhost.dev'], 'no'],
      ['viewer', ['create', 'functions.fnhost.dev', '--subresource=test'], 'no'],
      ['editor', ['create', 'functions.fnhost.dev'], 'yes'],
      ['editor', ['patch', 'functions.fnhost.dev'], 'yes'],
      ['editor', ['delete', 'functions.fnhost.dev'], 'yes'],
      ['editor', ['create', 'functions.fnhost.dev', '--subresource=test'], 'yes'],
      ['editor', ['get', 'functions.fnhost.dev', '--subresource=logs'], 'yes'],
      ['editor', ['update', 'functions.fnhost.dev', '--subresource=networkpolicy'], 'no'],
      ['nobody', ['get', 'functions.fnhost.dev'], 'no'],
    ];
    const wrong: string[] = [];
    // The aggregation controller fills view/edit/admin shortly after the install.
    await waitFor('the aggregated rules in view, edit and admin', async () => {
      wrong.length = 0;
      for (const [who, args, expected] of cases) {
        const got = await can(who, args);
        if (got !== expected) wrong.push(`${who} ${args.join(' ')}: ${got}, expected ${expected}`);
      }
      return wrong.length === 0 ? true : null;
    }, 60_000, 1000).catch(() => undefined);
    expect(wrong).to.deep.equal([]);
  });

  it('the admin token creates a function; the viewer lists, gets and reads its logs, and may change nothing', async () => {
    const created = await admin(['function:create', 'hello', '--file', await file('v1.mjs', V1), '--namespace', ns]);
    expect(created.code, created.stderr).to.equal(0);
    await waitFor('hello answering', async () => ((await invoke('hello')).status === 200 ? true : null), 240_000, 1000);

    const login = await as('viewer', ['login', '--url', gatewayUrl, '--kube']);
    expect(login.code, login.stderr).to.equal(0);
    expect(login.stdout).to.contain(`Logged in to ${gatewayUrl} with the kube context "viewer"`);
    const list = await as('viewer', ['function:list']);
    expect(list.code, list.stderr).to.equal(0);
    expect(list.stdout).to.match(/^hello\s/m);
    expect((await as('viewer', ['function:get', 'hello'])).code).to.equal(0);
    const logs = await as('viewer', ['function:logs', 'hello']);
    expect(logs.code, logs.stderr).to.equal(0);
    for (const [args, verb] of [
      [['function:create', 'nope', '--file', await file('v1b.mjs', V1)], 'create functions.fnhost.dev'],
      [['function:deploy', 'hello', '--file', await file('v2a.mjs', V2)], 'patch functions.fnhost.dev "hello"'],
      [['function:delete', 'hello', '--yes'], 'delete functions.fnhost.dev "hello"'],
      [['function:test', 'hello'], 'create functions/test.fnhost.dev "hello"'],
    ] as Array<[string[], string]>) {
      const refused = await as('viewer', args);
      expect(refused.code, `${args.join(' ')}: ${refused.stderr}`).to.equal(3);
      expect(refused.stderr).to.contain(`user "system:serviceaccount:${ns}:viewer" may not ${verb} in namespace "${ns}"`);
    }
    expect((await invoke('hello')).body).to.deep.equal({ version: 1 });
    // The network policies (issue 29): changing the global one needs fnhost-egress-admin, and so
    // does the dry run, whose answer names the policies' rules.
    for (const [args, verb] of [
      // An add reads the policy first: refused at the read.
      [['policy:add', 'allow', 'api.example.com'], 'get networkpolicies.fnhost.dev (cluster scope)'],
      [['policy:check', 'hello', 'api.example.com'], 'get networkpolicies.fnhost.dev (cluster scope)'],
    ] as Array<[string[], string]>) {
      const refused = await as('viewer', args);
      expect(refused.code, `${args.join(' ')}: ${refused.stderr}`).to.equal(3);
      expect(refused.stderr).to.contain(`user "system:serviceaccount:${ns}:viewer" may not ${verb}`);
    }
    const check = await admin(['policy:check', 'hello', 'api.example.com:443', '--namespace', ns, '--output', 'json']);
    expect(JSON.parse(check.stdout)).to.include({ target: 'api.example.com:443' });
  });

  it('the editor creates, deploys (returning once the new code serves) and deletes; -A needs a cluster-wide list', async () => {
    expect((await as('editor', ['login', '--url', gatewayUrl, '--kube'])).code).to.equal(0);
    const created = await as('editor', ['function:create', 'edited', '--file', await file('e1.mjs', V1)]);
    expect(created.code, created.stderr).to.equal(0);
    expect((await kubectl(['get', 'fn', 'edited', '-n', ns])).code).to.equal(0);
    await waitFor('edited answering v1', async () => ((await invoke('edited')).body?.version === 1 ? true : null), 240_000, 1000);
    const deployed = await as('editor', ['function:deploy', 'edited', '--file', await file('e2.mjs', V2)]);
    expect(deployed.code, deployed.stderr).to.equal(0);
    expect(deployed.stdout).to.contain('(serving: Available)');
    // Returned only once the new code serves: every call from now on answers v2.
    for (let i = 0; i < 20; i++) expect((await invoke('edited')).body).to.deep.equal({ version: 2 });
    const all = await as('editor', ['function:list', '-A']);
    expect(all.code).to.equal(3);
    expect(all.stderr).to.contain('may not list functions.fnhost.dev across all namespaces');
    const deleted = await as('editor', ['function:delete', 'edited', '--yes']);
    expect(deleted.code, deleted.stderr).to.equal(0);
    await waitFor('edited gone', async () => ((await kubectl(['get', 'fn', 'edited', '-n', ns])).code !== 0 ? true : null), 120_000, 1000);
  });

  it('an identity bound to nothing is authenticated and refused everything with 403', async () => {
    const login = await as('nobody', ['login', '--url', gatewayUrl, '--kube']);
    expect(login.code, login.stderr).to.equal(0);
    expect(login.stdout).to.contain('RBAC does not let you list functions');
    for (const args of [['function:list'], ['function:get', 'hello'], ['function:logs', 'hello'], ['function:create', 'x', '--file', await file('n.mjs', V1)]]) {
      const refused = await as('nobody', args);
      expect(refused.code, `${args.join(' ')}: ${refused.stderr}`).to.equal(3);
      expect(refused.stderr).to.contain(`user "system:serviceaccount:${ns}:nobody" may not`);
    }
    // A token the API server does not know is a 401, whose answer names --kube.
    const forged = await run(NODE, [`${ROOT}cli/bin/fnhost.js`, 'function:list', '--url', gatewayUrl, '--token', 'not-a-kube-token'], { env: { HOME: tmp, XDG_CONFIG_HOME: join(tmp, 'cfg'), NO_COLOR: '1' } });
    expect(forged.code).to.equal(3);
    expect(forged.stderr).to.contain('--kube');
  });

  it('namespaces where functions may not live are refused to everyone, the admin token included, and to kubectl', async () => {
    for (const [namespace, says] of [
      ['kube-system', 'namespace "kube-system" may never hold functions'],
      [relNs, `namespace "${relNs}" may never hold functions`],
      [other, `namespace "${other}" is not one where functions may live: functions.namespaces (FNHOST_FUNCTION_NAMESPACES) is [${ns}]`],
    ]) {
      const refused = await admin(['function:create', 'sys1', '--file', await file('s.mjs', V1), '--namespace', namespace!]);
      expect(refused.code, refused.stderr).to.equal(1);
      expect(refused.stderr).to.contain(says);
      expect((await kubectl(['get', 'fn', 'sys1', '-n', namespace!])).code).not.to.equal(0);
    }
    const manifest = JSON.stringify({ apiVersion: 'fnhost.dev/v1alpha1', kind: 'Function', metadata: { name: 'stray', namespace: other }, spec: { code: V1 } });
    expect((await kubectl(['apply', '-f', '-'], manifest)).code).to.equal(0);
    const condition = await waitFor('stray refused by the operator', async () => {
      const fn = JSON.parse((await kubectl(['get', 'fn', 'stray', '-n', other, '-o', 'json'])).stdout);
      return fn.status?.conditions?.find((c: { type: string }) => c.type === 'Ready') ?? null;
    }, 60_000, 1000);
    expect(condition).to.include({ status: 'False', reason: 'NamespaceNotAllowed' });
    expect(condition.message).to.contain(`namespace "${other}" is not one where functions may live`);
    expect((await kubectl(['get', 'deployment', 'fn-stray', '-n', other])).code).not.to.equal(0);
    // -A: every namespace the gateway allows, with their namespace; the stray Function is not among them.
    const all = await as('viewer', ['function:list', '-A']);
    expect(all.code, all.stderr).to.equal(0);
    expect(all.stdout).to.match(/^Namespace\s+Name\s/m);
    expect(all.stdout).to.match(new RegExp(`^${ns}\\s+hello\\s`, 'm'));
    expect(all.stdout).not.to.contain('stray');
  });

  it('Updated in function:get follows a kubectl edit', async () => {
    const before = JSON.parse((await admin(['function:get', 'hello', '--namespace', ns, '--output', 'json'])).stdout).updated_at as string;
    // managedFields times are in seconds: the edit must land in a later second than the last write.
    await waitFor('a new second', async () => (Math.floor(Date.now() / 1000) > Math.floor(Date.parse(before) / 1000) + 1 ? true : null), 5_000, 100);
    expect((await kubectl(['patch', 'fn', 'hello', '-n', ns, '--type=merge', '-p', '{"spec":{"timeoutSeconds":12}}'])).code).to.equal(0);
    const after = await waitFor('updated_at to move', async () => {
      const fn = JSON.parse((await admin(['function:get', 'hello', '--namespace', ns, '--output', 'json'])).stdout);
      return fn.timeout_seconds === 12 && fn.updated_at !== before ? (fn.updated_at as string) : null;
    }, 30_000, 500);
    expect(Date.parse(after)).to.be.greaterThan(Date.parse(before));
  });
});
