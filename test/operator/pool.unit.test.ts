import { expect } from 'chai';
import { poolKeyOf } from '@fnhost/core/cluster-pool.ts';
import { runtimeEnv } from '../../operator/src/builders/deployment.ts';
import { CLAIM_GRACE_MS, loadPoolSettings, poolDeploymentFor, poolReplicas, poolSecretFor, specializedPodVerdict } from '../../operator/src/pool.ts';
import { specializationBody } from '../../gateway/src/cluster/pool/claim.ts';
import { deriveToken } from '../../operator/src/tokens.ts';
import { TOKEN_KEY, fnResource, testSettings } from './fixtures.ts';

// The operator's side of the pool (issue 32): settings, the budget, the objects it keeps per
// namespace, and when a specialized pod goes.

describe('operator pool', () => {
  it('settings: off by default; bad values named', () => {
    expect(loadPoolSettings({})).to.deep.equal({ size: 0, maxPods: 20, memoryMiB: 128, maxCodeBytes: 50 * 1024 * 1024 });
    expect(loadPoolSettings({ FNHOST_POOL_SIZE: '2', FNHOST_POOL_MAX_PODS: '5', FNHOST_POOL_MEMORY_MIB: '256' })).to.include({ size: 2, maxPods: 5, memoryMiB: 256 });
    expect(() => loadPoolSettings({ FNHOST_POOL_SIZE: 'two' })).to.throw(/FNHOST_POOL_SIZE must be an integer from 0 to 50, got "two"/);
    expect(() => testSettings({ FNHOST_POOL_MEMORY_MIB: '8' })).to.throw(/FNHOST_POOL_MEMORY_MIB/);
  });

  it('the budget: namespaces in the order first seen get `size` pods while the total stays within maxPods', () => {
    const pool = { size: 2, maxPods: 5, memoryMiB: 128, maxCodeBytes: 1 };
    expect(poolReplicas(pool, 'a', [])).to.equal(2);
    expect(poolReplicas(pool, 'b', ['a'])).to.equal(2);
    expect(poolReplicas(pool, 'c', ['a', 'b'])).to.equal(0);
    expect(poolReplicas(pool, 'a', ['a', 'b'])).to.equal(2);
    expect(poolReplicas({ ...pool, size: 0 }, 'a', [])).to.equal(0);
  });

  it('the pool key Secret holds the HMAC of the platform key and the namespace', () => {
    const secret = poolSecretFor('team-a', TOKEN_KEY) as unknown as { data: Record<string, string> };
    expect(Buffer.from(secret.data['specialize-token']!, 'base64').toString()).to.equal(poolKeyOf(TOKEN_KEY, 'team-a')).and.not.equal(poolKeyOf(TOKEN_KEY, 'team-b'));
  });

  it('the pool Deployment: generic runtime pods, non-root, read-only, the key from the Secret, ready when listening, never selected by a function', () => {
    const settings = testSettings();
    const d = poolDeploymentFor('team-a', settings, loadPoolSettings({ FNHOST_POOL_SIZE: '2' }), 2) as any;
    expect(d.spec.replicas).to.equal(2);
    expect(d.spec.selector.matchLabels).to.deep.equal({ 'app.kubernetes.io/name': 'fnhost-pool', 'fnhost.dev/role': 'pool' });
    const tpl = d.spec.template;
    expect(tpl.metadata.labels).to.include({ 'app.kubernetes.io/managed-by': 'fnhost-operator' });
    expect(tpl.metadata.labels).to.not.have.property('fnhost.dev/function');
    const c = tpl.spec.containers[0];
    expect(c.securityContext).to.deep.include({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false });
    expect(tpl.spec.securityContext.runAsNonRoot).to.equal(true);
    expect(tpl.spec.automountServiceAccountToken).to.equal(false);
    expect(c.env).to.deep.include({ name: 'FNHOST_SPECIALIZE_TOKEN', valueFrom: { secretKeyRef: { name: 'fnhost-pool-key', key: 'specialize-token' } } });
    expect(c.env).to.deep.include({ name: 'FNHOST_SPECIALIZE_REMOTE', value: '1' });
    expect(c.readinessProbe.tcpSocket).to.deep.equal({ port: 'http' });
    expect(c.resources.limits.memory).to.equal(`${128 + settings.runtimeOverheadMiB}Mi`);
    expect(tpl.metadata.annotations).to.include({ 'fnhost.dev/pool-memory-mib': '128', 'fnhost.dev/pool-cpu': `${settings.cpuRequest}/${settings.cpuLimit}` });
  });

  it('the gateway sends a pool pod the environment the operator gives the function\'s own pods (less what the pod has of its own)', () => {
    const settings = testSettings();
    const fn = fnResource({ env: [{ name: 'GREETING', value: 'hi' }], routes: ['/u/:id'], memoryMiB: 128, timeoutSeconds: 7 });
    const own = new Set(['PORT', 'HOST', 'FNHOST_FUNCTION_FILE', 'FNHOST_GATEWAY_URL', 'FNHOST_EGRESS_PROXY']);
    const token = deriveToken(TOKEN_KEY, 'runtime', runtimeEnv(fn, settings).find((v) => v.name === 'FNHOST_FUNCTION_ID')!.value!);
    const expected: Record<string, string> = {};
    for (const v of runtimeEnv(fn, settings)) if (!own.has(v.name)) expected[v.name] = 'valueFrom' in v && v.valueFrom ? token : (v as { value: string }).value;
    expect(specializationBody(fn, token).env).to.deep.equal(expected);
  });

  it('a specialized pod goes once its function has a ready pod, is inactive, changed, or idle past the claim grace', () => {
    const now = 1_000_000;
    const pod = (annotations: Record<string, string> = { 'fnhost.dev/claimed-at': String(now - 1000), 'fnhost.dev/specialized-generation': '1' }) => ({ metadata: { name: 'p', annotations } });
    const fn = { generation: 1, active: true, wantedReplicas: 1, readyReplicas: 0 };
    expect(specializedPodVerdict(pod(), fn, now)).to.equal(undefined);
    expect(specializedPodVerdict(pod(), { ...fn, readyReplicas: 1 }, now)).to.match(/ready pod/);
    expect(specializedPodVerdict(pod(), { ...fn, active: false }, now)).to.match(/inactive/);
    expect(specializedPodVerdict(pod(), { ...fn, generation: 2 }, now)).to.match(/generation 1, the Function is at 2/);
    // Idle: kept within the grace (the wake may not have scaled the Deployment up yet), then ended.
    expect(specializedPodVerdict(pod(), { ...fn, wantedReplicas: 0 }, now)).to.equal(undefined);
    expect(specializedPodVerdict(pod(), { ...fn, wantedReplicas: 0 }, now + CLAIM_GRACE_MS)).to.match(/idle/);
    expect(specializedPodVerdict({ metadata: { name: 'p', deletionTimestamp: 'x' } }, { ...fn, active: false }, now)).to.equal(undefined);
  });
});
