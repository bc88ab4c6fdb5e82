import { expect } from 'chai';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { derivedFunctionId } from '../../operator/src/names.ts';
import { getCluster, makeKubectl, waitForNoReleaseOperator, metric, ROOT, startOperator, uniqueName, waitFor } from './harness.ts';
import type { ClusterAccess, OperatorProcess } from './harness.ts';

// The CRD and the operator against a real API server. Each run works in a
// namespace of its own, with its own Lease, and watches only that namespace.
// The operators run with exactly the permissions of operator/deploy/rbac.yaml
// (its rules bound to a ServiceAccount of the test's namespace), so a change
// that needs a new permission fails here, not in a user's cluster;
// FNHOST_TEST_OPERATOR_KUBECONFIG runs them with other credentials instead.

const TOKEN_KEY = 'cluster-test-token-key-0123456789abcdef';
const CODE_V1 = 'export default async function (req, res) { res.json({ v: 1, greeting: process.env.GREETING }) }\n';
const CODE_V2 = 'export default async function (req, res) { res.json({ v: 2, greeting: process.env.GREETING }) }\n';

describe('Function CRD and operator (real API server)', function () {
  this.timeout(180_000);
  let cluster: ClusterAccess;
  let kubectl: ReturnType<typeof makeKubectl>;
  let ns: string;
  let leaseName: string;
  let leaseNs: string;
  const operators: OperatorProcess[] = [];
  let hasControllers = false;
  let operatorKubeconfig = '';
  let rbacDir = '';
  const clusterScoped: string[] = [];

  const getJson = async (args: string[]) => {
    const r = await kubectl([...args, '-n', ns, '-o', 'json']);
    if (r.code !== 0) throw new Error(r.stderr);
    return JSON.parse(r.stdout);
  };
  const tryGet = async (kind: string, name: string) => {
    const r = await kubectl(['get', kind, name, '-n', ns, '-o', 'json']);
    const obj = r.code === 0 ? JSON.parse(r.stdout) : null;
    // Another fnhost operator watching every namespace (a Helm release of another
    // test on a shared cluster) would fight this test's operators; its settings show in status.url.
    const url: string | undefined = kind === 'fn' ? obj?.status?.url : undefined;
    if (url && !url.startsWith('https://fn.test.example/')) {
      throw new Error(`another fnhost operator reconciles this test's Functions (status.url ${url}): stop cluster-wide operators of other runs`);
    }
    return obj;
  };
  const applyFn = (manifest: object) => kubectl(['apply', '--server-side', '--field-manager=test', '-n', ns, '-f', '-'], JSON.stringify(manifest));
  const fnManifest = (name: string, spec: Record<string, unknown>) => ({ apiVersion: 'fnhost.dev/v1alpha1', kind: 'Function', metadata: { name, namespace: ns }, spec });
  const operatorEnv = (extra: Record<string, string> = {}) => ({
    FNHOST_TOKEN_KEY: TOKEN_KEY,
    FNHOST_WATCH_NAMESPACE: ns,
    FNHOST_LEASE_NAMESPACE: leaseNs,
    FNHOST_LEASE_NAME: leaseName,
    FNHOST_LEASE_DURATION_SECONDS: '4',
    FNHOST_RENEW_DEADLINE_SECONDS: '3',
    FNHOST_RETRY_PERIOD_SECONDS: '1',
    FNHOST_GATEWAY_URL: 'http://gateway.test.svc:8080',
    FNHOST_PUBLIC_URL: 'https://fn.test.example',
    FNHOST_MAX_TIMEOUT_SECONDS: '120',
    FNHOST_IMAGE_PULL_POLICY: 'IfNotPresent',
    KUBECONFIG: operatorKubeconfig,
    ...extra,
  });
  const launch = (extra: Record<string, string> = {}) => {
    const op = startOperator(cluster, operatorEnv(extra));
    operators.push(op);
    return op;
  };
  const readyOf = (fn: any) => (fn?.status?.conditions ?? []).find((c: any) => c.type === 'Ready');

  before(async () => {
    cluster = await getCluster();
    kubectl = makeKubectl(cluster);
    const crd = await kubectl(['apply', '--server-side', '--force-conflicts', '-f', `${ROOT}crds/fnhost.dev_functions.yaml`]);
    expect(crd.code, crd.stderr).to.equal(0);
    await waitFor('the CRD to be established', async () => (await kubectl(['wait', '--for=condition=Established', '--timeout=30s', 'crd/functions.fnhost.dev'])).code === 0, 60_000);
    await waitForNoReleaseOperator(kubectl);
    ns = uniqueName('fnop');
    // The Lease operator/deploy/rbac.yaml allows (by name), in the test's namespace
    // or in FNHOST_TEST_LEASE_NAMESPACE for the credentials given from outside.
    leaseNs = process.env.FNHOST_TEST_LEASE_NAMESPACE || ns;
    leaseName = 'fnhost-operator';
    const created = await kubectl(['create', 'namespace', ns]);
    expect(created.code, created.stderr).to.equal(0);
    operatorKubeconfig = process.env.FNHOST_TEST_OPERATOR_KUBECONFIG || (await leastPrivilegeKubeconfig());
    // The namespace's default ServiceAccount appears only with kube-controller-manager.
    hasControllers = (await waitFor('the default service account', async () => (await kubectl(['get', 'sa', 'default', '-n', ns])).code === 0, 8_000).catch(() => false)) === true;
  });

  /** A kubeconfig with the token of a ServiceAccount bound to the rules of operator/deploy/rbac.yaml, moved to the test's namespace. */
  async function leastPrivilegeKubeconfig(): Promise<string> {
    const parsed = await kubectl(['create', '--dry-run=client', '-o', 'json', '-f', `${ROOT}operator/deploy/rbac.yaml`]);
    expect(parsed.code, parsed.stderr).to.equal(0);
    // One pretty-printed object per document: each starts with "{" and ends with "}" on a line of its own.
    const items: any[] = parsed.stdout.split(/^}$/m).filter((t) => t.trim()).map((t) => JSON.parse(`${t}}`));
    const clusterName = `fnhost-operator-${ns}`;
    for (const o of items) {
      if (o.kind === 'ClusterRole' || o.kind === 'ClusterRoleBinding') {
        o.metadata.name = clusterName;
        clusterScoped.push(`${o.kind.toLowerCase()}/${clusterName}`);
      } else {
        o.metadata.namespace = ns;
      }
      if (o.roleRef?.kind === 'ClusterRole') o.roleRef.name = clusterName;
      for (const subject of o.subjects ?? []) subject.namespace = ns;
    }
    expect(items.map((o) => o.kind).sort()).to.deep.equal(['ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding', 'ServiceAccount']);
    const applied = await kubectl(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));
    expect(applied.code, applied.stderr).to.equal(0);
    const sa = items.find((o) => o.kind === 'ServiceAccount').metadata.name;
    const token = await kubectl(['create', 'token', sa, '-n', ns, '--duration=2h']);
    expect(token.code, token.stderr).to.equal(0);
    const view = JSON.parse((await kubectl(['config', 'view', '--raw', '--minify', '-o', 'json'])).stdout);
    const config = {
      apiVersion: 'v1',
      kind: 'Config',
      clusters: view.clusters,
      users: [{ name: sa, user: { token: token.stdout.trim() } }],
      contexts: [{ name: sa, context: { cluster: view.clusters[0].name, user: sa, namespace: ns } }],
      'current-context': sa,
    };
    rbacDir = mkdtempSync(join(tmpdir(), 'fnhost-rbac-'));
    const path = join(rbacDir, 'kubeconfig');
    writeFileSync(path, JSON.stringify(config), { mode: 0o600 });
    // The token works and is what rbac.yaml allows: it may not list Secrets, for example.
    const canI = await kubectl(['--kubeconfig', path, 'auth', 'can-i', 'list', 'secrets', '-n', ns]);
    expect(canI.stdout.trim()).to.equal('no');
    return path;
  }

  after(async () => {
    await Promise.all(operators.map((op) => op.stop()));
    if (kubectl && ns) {
      // Finalizers would hold the namespace without an operator: drop them first.
      const list = await kubectl(['get', 'fn', '-n', ns, '-o', 'name']);
      for (const name of list.stdout.split('\n').filter(Boolean)) {
        await kubectl(['patch', name, '-n', ns, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
      }
      await kubectl(['delete', 'namespace', ns, '--wait=false']);
    }
    for (const obj of clusterScoped) await kubectl(['delete', obj, '--ignore-not-found']);
    if (rbacDir) rmSync(rbacDir, { recursive: true, force: true });
  });

  describe('schema validation (no operator involved)', () => {
    const rejected = async (spec: Record<string, unknown>, name = uniqueName('bad')) => {
      const r = await applyFn(fnManifest(name, spec));
      expect(r.code, `expected a rejection, got: ${r.stdout}`).to.not.equal(0);
      return r.stderr;
    };

    it('rejects a cron expression with the wrong number of fields, and names the bad field', async () => {
      expect(await rejected({ code: CODE_V1, schedule: { cron: '* * * *' } })).to.contain('must have exactly five fields');
      expect(await rejected({ code: CODE_V1, schedule: { cron: '61 * * * *' } })).to.contain('the minute field (field 1) is invalid');
      expect(await rejected({ code: CODE_V1, schedule: { cron: '0 25 * * *' } })).to.contain('the hour field (field 2) is invalid');
      expect(await rejected({ code: CODE_V1, schedule: { cron: '0 0 * 13 *' } })).to.contain('the month field (field 4) is invalid');
    });

    it('rejects days with type count, count with type time, and type time without days', async () => {
      expect(await rejected({ code: CODE_V1, retention: { type: 'count', days: 7 } })).to.contain('retention.days is only allowed with type time');
      expect(await rejected({ code: CODE_V1, retention: { type: 'time', count: 7, days: 1 } })).to.contain('retention.count is only allowed with type count');
      expect(await rejected({ code: CODE_V1, retention: { type: 'time' } })).to.contain('retention type time needs days');
      expect(await rejected({ code: CODE_V1, retention: { type: 'forever' } })).to.match(/Unsupported value: "forever".*"time", "count", "none"/s);
    });

    it('rejects negative or tiny memory and a zero timeout with the bound', async () => {
      expect(await rejected({ code: CODE_V1, memoryMiB: -5 })).to.match(/spec\.memoryMiB.*greater than or equal to 32/s);
      expect(await rejected({ code: CODE_V1, timeoutSeconds: 0 })).to.match(/spec\.timeoutSeconds.*greater than or equal to 1/s);
      expect(await rejected({ code: CODE_V1, timeoutSeconds: 901 })).to.match(/less than or equal to 900/);
    });

    it('rejects names too long for the owned CronJob, reserved env names and missing code', async () => {
      expect(await rejected({ code: CODE_V1 }, 'n'.repeat(41))).to.contain('at most 40 characters');
      expect(await rejected({ code: CODE_V1, env: [{ name: 'FNHOST_X', value: '1' }] })).to.contain('reserved for the platform');
      expect(await rejected({ code: CODE_V1, env: [{ name: 'A', value: '1', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } }] })).to.contain('value or valueFrom, not both');
      expect(await rejected({ routes: ['/x'] })).to.contain('exactly one of spec.code (the module inline) and spec.codeRef');
    });

    it('applies defaults and keeps spec.functionId immutable once set', async () => {
      const name = uniqueName('imm');
      const id = '11111111-2222-4333-8444-555555555555';
      const ok = await applyFn(fnManifest(name, { code: CODE_V1, functionId: id }));
      expect(ok.code, ok.stderr).to.equal(0);
      const fn = await getJson(['get', 'fn', name]);
      expect(fn.spec).to.include({ timeoutSeconds: 30, memoryMiB: 128, active: true, replicas: 1 });
      expect(fn.spec.retention).to.deep.equal({ type: 'none' });
      const changed = await applyFn(fnManifest(name, { code: CODE_V1, functionId: '99999999-2222-4333-8444-555555555555' }));
      expect(changed.code).to.not.equal(0);
      expect(changed.stderr).to.contain('spec.functionId is fixed when the Function is created');
      await kubectl(['delete', 'fn', name, '-n', ns, '--wait=false']);
    });
  });

  describe('reconciling', () => {
    let op: OperatorProcess;
    const example = () => {
      const text = readFileSync(`${ROOT}examples/function.yaml`, 'utf8');
      return text.replace(/namespace: default/, `namespace: ${ns}`);
    };

    before(async () => {
      op = launch();
      await op.port;
    });

    it('applies examples/function.yaml and kubectl get fn shows the printer columns', async () => {
      const r = await kubectl(['apply', '-f', '-'], example());
      expect(r.code, r.stderr).to.equal(0);
      const fn = await waitFor('status from the operator', async () => {
        const f = await tryGet('fn', 'hello');
        return f?.status?.observedGeneration === f?.metadata.generation && readyOf(f) ? f : null;
      });
      expect(fn.status.functionId).to.equal(derivedFunctionId(ns, 'hello'));
      expect(fn.status.url).to.equal(`https://fn.test.example/invoke/${fn.status.functionId}`);
      const table = await kubectl(['get', 'fn', '-n', ns]);
      const header = table.stdout.split('\n')[0]!.trim().split(/\s+/);
      expect(header).to.deep.equal(['NAME', 'READY', 'ACTIVE', 'SCHEDULE', 'RETENTION', 'URL', 'CODE', 'AGE']);
      const row = table.stdout.split('\n').find((l) => l.startsWith('hello '))!;
      expect(row).to.contain('*/5 * * * *').and.to.contain('count').and.to.contain(fn.status.url).and.to.contain('true');
      expect(fn.metadata.finalizers).to.deep.equal(['fnhost.dev/execution-logs']);
    });

    it('creates Secret, ConfigMap, Deployment, Service and CronJob with owner references and the expected specs', async () => {
      const fn = await getJson(['get', 'fn', 'hello']);
      const owner = { apiVersion: 'fnhost.dev/v1alpha1', kind: 'Function', name: 'hello', uid: fn.metadata.uid, controller: true, blockOwnerDeletion: true };
      const objects = await waitFor('every owned object', async () => {
        const all = await Promise.all([
          tryGet('configmap', 'fn-hello-code'), tryGet('secret', 'fn-hello-tokens'), tryGet('deployment', 'fn-hello'), tryGet('service', 'fn-hello'), tryGet('cronjob', 'fn-hello-cron'),
        ]);
        return all.every(Boolean) ? all : null;
      });
      for (const obj of objects) expect(obj.metadata.ownerReferences, obj.kind).to.deep.equal([owner]);
      const [cm, secret, dep, svc, cj] = objects;
      expect(cm.data['index.js']).to.equal(fn.spec.code);
      expect(Object.keys(secret.data).sort()).to.deep.equal(['runtime-token', 'schedule-token']);
      const pod = dep.spec.template.spec;
      const c = pod.containers[0];
      expect(c.image).to.equal('localhost/fnhost-runtime:dev');
      expect(pod.automountServiceAccountToken).to.equal(false);
      expect(c.securityContext.readOnlyRootFilesystem).to.equal(true);
      expect(pod.securityContext.runAsNonRoot).to.equal(true);
      expect(c.resources.limits.memory).to.equal('160Mi');
      expect(c.env.find((e: any) => e.name === 'FNHOST_MEMORY_MIB').value).to.equal('64');
      expect(c.env.find((e: any) => e.name === 'FNHOST_TIMEOUT_MS').value).to.equal('10000');
      expect(c.env.find((e: any) => e.name === 'GREETING').value).to.equal('Hello');
      expect(svc.spec.ports[0]).to.include({ port: 80, targetPort: 'http' });
      expect(cj.spec).to.include({ schedule: '*/5 * * * *', timeZone: 'UTC', concurrencyPolicy: 'Forbid', suspend: false });
      const withFields = await getJson(['get', 'deployment', 'fn-hello', '--show-managed-fields']);
      const managers = (withFields.metadata.managedFields ?? []).map((m: any) => m.manager);
      expect(managers).to.include('fnhost-operator');
    });

    it('follows edits of code, env, schedule, active and retention with kubectl', async () => {
      const before = await getJson(['get', 'deployment', 'fn-hello']);
      const hashBefore = before.spec.template.metadata.annotations['fnhost.dev/config-hash'];
      const edit = async (patch: object) => {
        const r = await kubectl(['patch', 'fn', 'hello', '-n', ns, '--type=merge', '-p', JSON.stringify(patch)]);
        expect(r.code, r.stderr).to.equal(0);
        const fn = await getJson(['get', 'fn', 'hello']);
        await waitFor(`observedGeneration ${fn.metadata.generation}`, async () => (await tryGet('fn', 'hello'))?.status?.observedGeneration === fn.metadata.generation);
      };
      await edit({ spec: { code: CODE_V2 } });
      expect((await getJson(['get', 'configmap', 'fn-hello-code'])).data['index.js']).to.equal(CODE_V2);
      const dep2 = await getJson(['get', 'deployment', 'fn-hello']);
      expect(dep2.spec.template.metadata.annotations['fnhost.dev/config-hash']).to.not.equal(hashBefore);

      await edit({ spec: { env: [{ name: 'GREETING', value: 'Bonjour' }, { name: 'EXTRA', value: 'x' }] } });
      const dep3 = await getJson(['get', 'deployment', 'fn-hello']);
      const env = dep3.spec.template.spec.containers[0].env;
      expect(env.find((e: any) => e.name === 'GREETING').value).to.equal('Bonjour');
      expect(env.find((e: any) => e.name === 'EXTRA').value).to.equal('x');
      expect(dep3.spec.template.metadata.annotations['fnhost.dev/config-hash']).to.not.equal(dep2.spec.template.metadata.annotations['fnhost.dev/config-hash']);

      await edit({ spec: { schedule: { cron: '0 6 * * MON', timezone: 'Europe/Paris' } } });
      const cj = await getJson(['get', 'cronjob', 'fn-hello-cron']);
      expect(cj.spec).to.include({ schedule: '0 6 * * MON', timeZone: 'Europe/Paris' });

      await edit({ spec: { active: false } });
      expect((await getJson(['get', 'deployment', 'fn-hello'])).spec.replicas).to.equal(0);
      expect((await getJson(['get', 'cronjob', 'fn-hello-cron'])).spec.suspend).to.equal(true);
      const inactive = await getJson(['get', 'fn', 'hello']);
      expect(readyOf(inactive)).to.include({ status: 'True', reason: 'Inactive' });

      await edit({ spec: { active: true, retention: { type: 'time', days: 7, count: null } } });
      expect((await getJson(['get', 'deployment', 'fn-hello'])).spec.replicas).to.equal(1);
      const fn = await getJson(['get', 'fn', 'hello']);
      expect(fn.status.observedGeneration).to.equal(fn.metadata.generation);
      expect(readyOf(fn).observedGeneration).to.equal(fn.metadata.generation);

      await edit({ spec: { schedule: null } });
      await waitFor('the CronJob to be removed', async () => (await tryGet('cronjob', 'fn-hello-cron')) === null);
    });

    it('a Deployment deleted by hand comes back (level-triggered)', async () => {
      const r = await kubectl(['delete', 'deployment', 'fn-hello', '-n', ns, '--wait=false']);
      expect(r.code, r.stderr).to.equal(0);
      await waitFor('the Deployment to be recreated', async () => {
        const d = await tryGet('deployment', 'fn-hello');
        return d && !d.metadata.deletionTimestamp;
      });
    });

    it('code that does not parse gives Ready=False with the reason, without a hot loop, and keeps the last good objects', async () => {
      const name = uniqueName('broken');
      const r = await applyFn(fnManifest(name, { code: CODE_V1 }));
      expect(r.code, r.stderr).to.equal(0);
      await waitFor('the first objects', async () => (await tryGet('configmap', `fn-${name}-code`)) !== null);
      await kubectl(['patch', 'fn', name, '-n', ns, '--type=merge', '-p', JSON.stringify({ spec: { code: 'export default function (req, res) {\n  res.json({\n}\n' } })]);
      const fn = await waitFor('Ready=False CodeDoesNotParse', async () => {
        const f = await tryGet('fn', name);
        return readyOf(f)?.reason === 'CodeDoesNotParse' && f.status.observedGeneration === f.metadata.generation ? f : null;
      });
      expect(readyOf(fn).status).to.equal('False');
      expect(readyOf(fn).message).to.contain('SyntaxError');
      expect((await getJson(['get', 'configmap', `fn-${name}-code`])).data['index.js']).to.equal(CODE_V1);
      // Not retried: over a few seconds (an absence, so a fixed wait) the Function is not written
      // again and is reconciled at most once more (a late event). Counted for this key only: the
      // other Functions of the namespace are still rolling out and reconcile meanwhile.
      const key = `${ns}/${name}`;
      const reconcilesOf = () => op.logs.filter((l) => l.msg === 'reconciled' && l.key === key).length;
      const reconcilesBefore = reconcilesOf();
      await new Promise((res) => setTimeout(res, 3000));
      const after = await getJson(['get', 'fn', name]);
      expect(after.metadata.resourceVersion).to.equal(fn.metadata.resourceVersion);
      expect(reconcilesOf()).to.be.at.most(reconcilesBefore + 1);
    });

    it('a Function whose recorded functionId differs is not silently given a new identity', async () => {
      const name = uniqueName('ident');
      expect((await applyFn(fnManifest(name, { code: CODE_V1 }))).code).to.equal(0);
      await waitFor('the first status', async () => (await tryGet('fn', name))?.status?.functionId);
      // As after a restore into another namespace with its status: the recorded id is not the derived one.
      const recorded = '0a0a0a0a-1111-4222-8333-444444444444';
      const patched = await kubectl(['patch', 'fn', name, '-n', ns, '--subresource=status', '--type=merge', '-p', JSON.stringify({ status: { functionId: recorded } })]);
      expect(patched.code, patched.stderr).to.equal(0);
      const flagged = await waitFor('Ready=False FunctionIdChanged', async () => {
        const f = await tryGet('fn', name);
        return readyOf(f)?.reason === 'FunctionIdChanged' ? f : null;
      });
      expect(flagged.status.functionId).to.equal(recorded);
      expect(readyOf(flagged).message).to.contain(recorded).and.to.contain(derivedFunctionId(ns, name));
      // Another reconcile (an annotation is an event without a spec change) keeps it so.
      await kubectl(['annotate', 'fn', name, '-n', ns, 'test/poke=1']);
      await waitFor('the annotation to be seen', async () => (await tryGet('fn', name))?.metadata.annotations?.['test/poke'] === '1');
      await new Promise((r) => setTimeout(r, 1000));
      const still = await getJson(['get', 'fn', name]);
      expect(still.status.functionId).to.equal(recorded);
      expect(readyOf(still).reason).to.equal('FunctionIdChanged');
      // Clearing the recorded id adopts the derived one.
      await kubectl(['patch', 'fn', name, '-n', ns, '--subresource=status', '--type=merge', '-p', '{"status":{"functionId":null}}']);
      await waitFor('the derived id adopted', async () => {
        const f = await tryGet('fn', name);
        return f?.status?.functionId === derivedFunctionId(ns, name) && readyOf(f)?.reason !== 'FunctionIdChanged';
      });
    });

    it('scales an idle function (spec.scaleToZero) to zero, and back up when the gateway reports an invocation', async function () {
      this.timeout(180_000);
      const name = uniqueName('idle');
      const r = await applyFn(fnManifest(name, { code: CODE_V1, scaleToZero: { idleSeconds: 30 } }));
      expect(r.code, r.stderr).to.equal(0);
      expect((await waitFor('the Deployment at spec.replicas', async () => tryGet('deployment', `fn-${name}`))).spec.replicas).to.equal(1);
      // Nothing invokes it: 30 s after its creation the reconcile that was queued for that instant scales it down.
      const idle = await waitFor('Ready reason Idle', async () => {
        const f = await tryGet('fn', name);
        return readyOf(f)?.reason === 'Idle' ? f : null;
      }, 120_000, 500);
      expect(readyOf(idle)).to.include({ status: 'True' });
      expect(readyOf(idle).message).to.contain('spec.scaleToZero.idleSeconds 30');
      expect((await tryGet('deployment', `fn-${name}`)).spec.replicas).to.equal(0);

      // What the gateway writes when a call is held for it (its wake): a fresh lastInvocationTime.
      const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
      const patched = await kubectl(['patch', 'fn', name, '-n', ns, '--subresource=status', '--type=merge', '-p', JSON.stringify({ status: { lastInvocationTime: now } })]);
      expect(patched.code, patched.stderr).to.equal(0);
      await waitFor('the Deployment back at one replica', async () => (await tryGet('deployment', `fn-${name}`))?.spec.replicas === 1, 60_000, 250);
      const woken = await waitFor('Ready no longer Idle', async () => {
        const f = await tryGet('fn', name);
        return readyOf(f) && readyOf(f).reason !== 'Idle' ? f : null;
      }, 60_000, 250);
      expect(woken.status.lastInvocationTime, 'the operator keeps the gateway\'s field').to.equal(now);
    });

    it('a timeout above the platform maximum gives Ready=False TimeoutAboveMaximum', async () => {
      const name = uniqueName('slow');
      const r = await applyFn(fnManifest(name, { code: CODE_V1, timeoutSeconds: 600 }));
      expect(r.code, r.stderr).to.equal(0);
      const fn = await waitFor('Ready=False', async () => {
        const f = await tryGet('fn', name);
        return readyOf(f)?.reason === 'TimeoutAboveMaximum' ? f : null;
      });
      expect(readyOf(fn).message).to.contain('600').and.to.contain('120');
      expect(await tryGet('deployment', `fn-${name}`)).to.equal(null);
    });

    it('deleting a Function runs the finalizer and its owned objects are garbage collected', async () => {
      const name = uniqueName('gone');
      expect((await applyFn(fnManifest(name, { code: CODE_V1, schedule: { cron: '0 0 * * *' } }))).code).to.equal(0);
      await waitFor('owned objects', async () => (await tryGet('cronjob', `fn-${name}-cron`)) !== null);
      const r = await kubectl(['delete', 'fn', name, '-n', ns, '--wait=false']);
      expect(r.code, r.stderr).to.equal(0);
      await waitFor('the Function to be gone (finalizer removed)', async () => (await tryGet('fn', name)) === null);
      expect(op.logs.some((l) => l.msg === 'execution logs cleaned' && l.function === `${ns}/${name}`)).to.equal(true);
      if (hasControllers) {
        await waitFor('owned objects to be garbage collected', async () => {
          const left = await Promise.all([
            tryGet('configmap', `fn-${name}-code`), tryGet('secret', `fn-${name}-tokens`), tryGet('deployment', `fn-${name}`), tryGet('cronjob', `fn-${name}-cron`), tryGet('service', `fn-${name}`),
          ]);
          return left.every((o) => o === null);
        }, 60_000);
      }
    });
  });

  describe('operator replicas and crashes', () => {
    it('a second replica waits while the first holds the Lease, and takes over when the first is killed', async () => {
      const first = operators[0]!;
      const second = launch();
      await second.port;
      const leaseOf = async () => JSON.parse((await kubectl(['get', 'lease', leaseName, '-n', leaseNs, '-o', 'json'])).stdout);
      const lease = await leaseOf();
      expect(lease.spec.holderIdentity).to.equal(first.identity);
      expect(await metric(second, 'fnhost_operator_leader')).to.equal(0);
      expect(await metric(first, 'fnhost_operator_leader')).to.equal(1);
      // Both are healthy and ready: a standby waiting for the Lease is working as intended.
      for (const o of [first, second]) {
        expect((await fetch(`http://127.0.0.1:${await o.port}/healthz`)).status).to.equal(200);
        expect((await fetch(`http://127.0.0.1:${await o.port}/readyz`)).status).to.equal(200);
      }
      const name = uniqueName('takeover');
      first.child.kill('SIGKILL');
      await first.exited;
      expect((await applyFn(fnManifest(name, { code: CODE_V1 }))).code).to.equal(0);
      await waitFor('the second replica to lead', async () => (await leaseOf()).spec.holderIdentity === second.identity, 30_000);
      await waitFor('the new Function to be reconciled by the second replica', async () => (await tryGet('fn', name))?.status?.observedGeneration === 1, 30_000);
      expect(await metric(second, 'fnhost_operator_leader')).to.equal(1);
    });

    it('recovers after being killed mid-reconcile: a fresh process converges', async () => {
      const current = operators[operators.length - 1]!;
      const names = [uniqueName('crash'), uniqueName('crash'), uniqueName('crash')];
      await Promise.all(names.map((n) => applyFn(fnManifest(n, { code: CODE_V1, schedule: { cron: '*/10 * * * *' } }))));
      // Killed while it is applying the first of these objects.
      await waitFor('reconciling to start', async () => (await tryGet('secret', `fn-${names[0]}-tokens`)) !== null, 30_000, 20);
      current.child.kill('SIGKILL');
      await current.exited;
      const fresh = launch();
      await fresh.port;
      for (const n of names) {
        await waitFor(`${n} to converge`, async () => {
          const f = await tryGet('fn', n);
          const cj = await tryGet('cronjob', `fn-${n}-cron`);
          return f?.status?.observedGeneration === f?.metadata.generation && cj !== null;
        }, 60_000);
      }
    });

    it('quota refusals show on the Function: ReplicaFailure for pods, Forbidden for an owned object', async () => {
      if (!hasControllers) throw new Error('this test needs kube-controller-manager (its ReplicaSet and quota controllers)');
      const quota = { apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: 'tight', namespace: ns }, spec: { hard: { pods: '0', 'count/cronjobs.batch': '0' } } };
      expect((await kubectl(['apply', '-f', '-'], JSON.stringify(quota))).code).to.equal(0);
      await waitFor('the quota to be counted', async () => (await tryGet('resourcequota', 'tight'))?.status?.hard?.pods === '0');
      const podless = uniqueName('quota');
      const scheduled = uniqueName('quota');
      expect((await applyFn(fnManifest(podless, { code: CODE_V1 }))).code).to.equal(0);
      expect((await applyFn(fnManifest(scheduled, { code: CODE_V1, schedule: { cron: '0 * * * *' } }))).code).to.equal(0);
      const replicaFailure = await waitFor('Ready=False ReplicaFailure', async () => {
        const f = await tryGet('fn', podless);
        return readyOf(f)?.reason === 'ReplicaFailure' ? readyOf(f) : null;
      }, 60_000);
      expect(replicaFailure.status).to.equal('False');
      expect(replicaFailure.message).to.contain('exceeded quota');
      const forbidden = await waitFor('Ready=False Forbidden', async () => {
        const f = await tryGet('fn', scheduled);
        return readyOf(f)?.reason === 'Forbidden' ? readyOf(f) : null;
      }, 60_000);
      expect(forbidden.message).to.contain('exceeded quota').and.to.contain('cronjobs');
      await kubectl(['delete', 'resourcequota', 'tight', '-n', ns]);
    });

    it('refuses env references that are not valid Secret or ConfigMap names in the schema', async () => {
      const r = await applyFn(fnManifest(uniqueName('ref'), { code: CODE_V1, env: [{ name: 'A', valueFrom: { secretKeyRef: { name: 'Not_A_Name', key: 'k' } } }] }));
      expect(r.code).to.not.equal(0);
      expect(r.stderr).to.contain('secretKeyRef.name');
    });
  });
});
