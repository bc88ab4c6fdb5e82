import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { derivedFunctionId } from '../../gateway/src/cluster/resource.ts';
import { getCluster, makeKubectl, uniqueName, type ClusterAccess } from '../operator/harness.ts';
import { ROOT, PLATFORM_IMAGE, RUNTIME_IMAGE, E2E_TAG, buildPlatformImage, buildRuntimeImage, installPlatform, waitFor, type InstalledPlatform } from './helpers.ts';

// Issue 30, large code in cluster mode (docs/cluster-mode.md "Large code"), on the test cluster
// with the chart: code over the inline limit uploaded to the code store (PUT /api/v1/code) and
// referenced by spec.codeRef; its pods fetch it from the gateway and answer; kubectl get fn shows
// the reference; a manifest applied before its upload is Ready=False CodeMissing and its calls
// fail fast, then Ready once uploaded; a container restart loads from the pod's cache (no
// refetch); another namespace naming the digest gets CodeMissing; code GC deletes an unreferenced
// blob and keeps a referenced one.

const FAST_MS = 5_000;

/** A handler of about `mib` MiB: a string literal of that size, answered with its length. */
function bigHandler(mib: number, tag: string): Buffer {
  return Buffer.from(`const PAD = ${JSON.stringify('x'.repeat(Math.round(mib * 1024 * 1024)))};\nexport default (req, res) => res.json({ tag: ${JSON.stringify(tag)}, pad: PAD.length });\n`);
}
const digestOf = (b: Buffer) => `sha256:${createHash('sha256').update(b).digest('hex')}`;

interface Condition { type: string; status: string; reason: string; message: string }

describe('fnhost on Kubernetes: large code by reference (issue 30)', function () {
  this.timeout(900_000);
  let cluster: ClusterAccess;
  let kubectl: ReturnType<typeof makeKubectl>;
  let platform: InstalledPlatform | undefined;
  let ns: string;
  let other: string;
  let relNs: string;
  let tmp: string;
  let gatewayUrl: string;
  let token: string;

  const api = (method: string, path: string, body?: unknown, namespace = ns) =>
    fetch(`${gatewayUrl}/api/v1${path}${path.includes('?') ? '&' : '?'}namespace=${namespace}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : Buffer.isBuffer(body) ? { 'content-type': 'application/octet-stream' } : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : Buffer.isBuffer(body) ? new Uint8Array(body) : JSON.stringify(body),
      signal: AbortSignal.timeout(120_000),
    });
  const upload = async (code: Buffer, namespace = ns) => {
    const res = await api('PUT', `/code/${digestOf(code)}`, code, namespace);
    expect(res.status, await res.text()).to.be.oneOf([200, 201]);
  };
  const invoke = async (name: string, namespace = ns) => {
    const started = Date.now();
    const res = await fetch(`${gatewayUrl}/invoke/${derivedFunctionId(namespace, name)}/`, { signal: AbortSignal.timeout(60_000) });
    return { status: res.status, body: await res.text(), ms: Date.now() - started };
  };
  const answering = (name: string) => waitFor(`${name} answering 200`, async () => {
    const r = await invoke(name);
    return r.status === 200 ? (JSON.parse(r.body) as { tag: string; pad: number }) : null;
  }, 240_000, 1000);
  const ready = async (name: string, namespace = ns): Promise<Condition | undefined> => {
    const got = await kubectl(['get', 'fn', name, '-n', namespace, '-o', 'json']);
    if (got.code !== 0) return undefined;
    return ((JSON.parse(got.stdout) as { status?: { conditions?: Condition[] } }).status?.conditions ?? []).find((c) => c.type === 'Ready');
  };
  const manifest = (name: string, code: Buffer, namespace = ns) =>
    JSON.stringify({ apiVersion: 'fnhost.dev/v1alpha1', kind: 'Function', metadata: { name, namespace }, spec: { codeRef: { digest: digestOf(code), size: code.length }, timeoutSeconds: 10 } });

  before(async function () {
    this.timeout(1_800_000);
    cluster = await getCluster();
    kubectl = makeKubectl(cluster);
    tmp = await mkdtemp(join(tmpdir(), 'fnhost-e2e-large-'));
    const suffix = uniqueName('x').slice(2);
    ns = `e2e-large-${suffix}`;
    other = `e2e-large-other-${suffix}`;
    relNs = `fnhost-e2e-large-${suffix}`;
    await Promise.all([buildPlatformImage(PLATFORM_IMAGE), buildRuntimeImage(RUNTIME_IMAGE)]);
    platform = await installPlatform({ cluster, kubectl, release: 'e2e-large', relNs, ns, tag: E2E_TAG, dbName: `fnhost_e2e_large_${Date.now()}`, tmp });
    ({ gatewayUrl, token } = platform);
    // Code GC often and with a short grace, so that the test sees a pass.
    const upgraded = await platform.helm(['upgrade', 'e2e-large', `${ROOT}charts/fnhost`, '-n', relNs, '--reuse-values', '--set', 'operator.codeGc.intervalSeconds=10', '--set', 'operator.codeGc.graceSeconds=30', '--wait', '--timeout', '5m']);
    expect(upgraded.code, upgraded.stderr).to.equal(0);
    expect((await kubectl(['create', 'namespace', other])).code).to.equal(0);
  });

  after(async function () {
    this.timeout(300_000);
    await kubectl(['delete', 'namespace', other, '--wait=false']);
    await platform?.remove();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  const big = bigHandler(1.5, 'big');
  const huge = bigHandler(5, 'huge');

  it('a 1.5 MiB and a 5 MiB handler, uploaded and created by reference, answer; kubectl get fn and the API show the reference', async () => {
    for (const [name, code] of [['big', big], ['huge', huge]] as const) {
      await upload(code);
      const created = await api('POST', '/functions', { name, code_ref: { digest: digestOf(code), size: code.length }, timeout_seconds: 10 });
      expect(created.status, await created.clone().text()).to.equal(201);
      const body = await answering(name);
      expect(body).to.deep.equal({ tag: name, pad: Math.round((name === 'big' ? 1.5 : 5) * 1024 * 1024) });
    }
    const table = await kubectl(['get', 'fn', 'big', '-n', ns]);
    expect(table.stdout).to.match(/CODE/);
    expect(table.stdout).to.include(digestOf(big).slice(0, 19));
    const got = (await (await api('GET', '/functions/big')).json()) as { code_ref?: { digest: string; size: number } };
    expect(got.code_ref).to.deep.equal({ digest: digestOf(big), size: big.length });
    // No copy of the code in etcd: the ConfigMap is empty.
    const cm = JSON.parse((await kubectl(['get', 'configmap', 'fn-big-code', '-n', ns, '-o', 'json'])).stdout) as { data?: Record<string, string> };
    expect(Object.keys(cm.data ?? {})).to.deep.equal([]);
  });

  it('a container restart loads the code from the pod\'s cache: no second fetch', async () => {
    const podName = (await kubectl(['get', 'pods', '-n', ns, '-l', 'fnhost.dev/function=big,fnhost.dev/role=runtime', '-o', 'jsonpath={.items[0].metadata.name}'])).stdout.trim();
    expect((await kubectl(['logs', podName, '-n', ns])).stdout).to.include('"code fetched"');
    // SIGTERM: the runtime (PID 1, which gets only signals it handles) stops and its container is restarted in the same pod.
    await kubectl(['exec', podName, '-n', ns, '--', 'node', '-e', 'process.kill(1, "SIGTERM")']);
    await waitFor('the container restarted and serving', async () => {
      const pod = JSON.parse((await kubectl(['get', 'pod', podName, '-n', ns, '-o', 'json'])).stdout) as { status: { containerStatuses: Array<{ restartCount: number; ready: boolean }> } };
      return pod.status.containerStatuses[0]!.restartCount >= 1 && pod.status.containerStatuses[0]!.ready ? true : null;
    }, 120_000, 1000);
    const logs = (await kubectl(['logs', podName, '-n', ns])).stdout;
    expect(logs).to.include('"code cache hit"');
    expect(logs).not.to.include('"code fetched"');
    expect((await answering('big')).tag).to.equal('big');
  });

  it('a manifest applied before its upload is Ready=False CodeMissing naming the digest, its calls 503 at once; Ready once uploaded', async () => {
    const later = bigHandler(1.2, 'later');
    const applied = await kubectl(['apply', '--server-side', '-f', '-'], manifest('later', later));
    expect(applied.code, applied.stderr).to.equal(0);
    const missing = await waitFor('CodeMissing', async () => {
      const c = await ready('later');
      return c?.reason === 'CodeMissing' ? c : null;
    }, 60_000, 1000);
    expect(missing.status).to.equal('False');
    expect(missing.message).to.include(digestOf(later));
    expect((await kubectl(['get', 'deployment', 'fn-later', '-n', ns])).code, 'no Deployment started').not.to.equal(0);
    const call = await invoke('later');
    expect(call.status, call.body).to.equal(503);
    expect(call.ms).to.be.below(FAST_MS);
    expect(call.body).to.include('CodeMissing');
    await upload(later);
    expect((await answering('later')).tag).to.equal('later');
    // The call may be served before the kubelet marks the pod ready (the gateway probes it); the operator's Ready follows.
    await waitFor('later Ready=True', async () => ((await ready('later'))?.status === 'True' ? true : null), 120_000, 1000);
  });

  it('another namespace naming an uploaded digest gets CodeMissing (tenancy by namespace)', async () => {
    const applied = await kubectl(['apply', '--server-side', '-f', '-'], manifest('thief', big, other));
    expect(applied.code, applied.stderr).to.equal(0);
    const c = await waitFor('CodeMissing in the other namespace', async () => {
      const got = await ready('thief', other);
      return got?.reason === 'CodeMissing' ? got : null;
    }, 60_000, 1000);
    expect(c.message).to.include(`namespace ${other} has not uploaded`);
    expect((await invoke('thief', other)).status).to.equal(503);
  });

  it('code GC deletes an unreferenced blob and keeps a referenced one', async () => {
    const orphan = bigHandler(0.3, 'orphan');
    await upload(orphan);
    const head = async (code: Buffer) => (await api('HEAD', `/code/${digestOf(code)}`)).status;
    expect(await head(orphan)).to.equal(200);
    // Past the grace (30 s) a pass (every 10 s) deletes it; the referenced blob stays.
    await waitFor('the unreferenced blob collected', async () => ((await head(orphan)) === 404 ? true : null), 180_000, 2000);
    expect(await head(big)).to.equal(200);
    expect(await head(huge)).to.equal(200);
  });
});
