import { expect } from 'chai';
import {
  configHash, configMapFor, cronJobFor, deploymentFor, INVOKE_SCRIPT, RUNTIME_TOKEN_KEY, SCHEDULE_TOKEN_KEY, secretFor, serviceFor,
} from '../../operator/src/builders/index.ts';
import { ANNOTATION_CONFIG_HASH, derivedFunctionId, ownedNames } from '../../operator/src/names.ts';
import { deriveToken } from '../../operator/src/tokens.ts';
import { fnResource, testSettings, TOKEN_KEY } from './fixtures.ts';

const settings = testSettings();

function envOf(dep: any): Array<{ name: string; value?: string; valueFrom?: any }> {
  return dep.spec.template.spec.containers[0].env;
}
function envValue(dep: any, name: string): string | undefined {
  return envOf(dep).find((e) => e.name === name)?.value;
}

describe('operator builders', () => {
  it('owned objects carry the controller owner reference and the function labels', () => {
    const fn = fnResource({ schedule: { cron: '*/5 * * * *' } });
    const objects = [configMapFor(fn), deploymentFor(fn, settings), serviceFor(fn), cronJobFor(fn, settings)!, secretFor(fn, settings)];
    for (const obj of objects) {
      expect(obj.metadata.namespace, obj.kind).to.equal('team-a');
      expect(obj.metadata.ownerReferences, obj.kind).to.deep.equal([
        { apiVersion: 'fnhost.dev/v1alpha1', kind: 'Function', name: 'hello', uid: fn.metadata.uid, controller: true, blockOwnerDeletion: true },
      ]);
      expect(obj.metadata.labels!['fnhost.dev/function'], obj.kind).to.equal('hello');
      expect(obj.metadata.labels!['app.kubernetes.io/managed-by'], obj.kind).to.equal('fnhost-operator');
      expect(obj.metadata.labels!['fnhost.dev/function-id'], obj.kind).to.equal(derivedFunctionId('team-a', 'hello'));
    }
    expect(objects.map((o) => o.metadata.name)).to.deep.equal(['fn-hello-code', 'fn-hello', 'fn-hello', 'fn-hello-cron', 'fn-hello-tokens']);
  });

  it('builders are pure: the same Function gives the same objects', () => {
    const fn = fnResource({ schedule: { cron: '0 * * * *' }, env: [{ name: 'A', value: '1' }] });
    expect(deploymentFor(fn, settings)).to.deep.equal(deploymentFor(structuredClone(fn), settings));
    expect(cronJobFor(fn, settings)).to.deep.equal(cronJobFor(structuredClone(fn), settings));
    expect(secretFor(fn, settings)).to.deep.equal(secretFor(structuredClone(fn), settings));
  });

  it('the ConfigMap holds the code as index.js', () => {
    const fn = fnResource({ code: 'module.exports = (req, res) => res.send("hi")' });
    expect(configMapFor(fn).data).to.deep.equal({ 'index.js': 'module.exports = (req, res) => res.send("hi")' });
  });

  it('the Deployment runs the runtime hardened: non-root, read-only root, no token, no privilege escalation', () => {
    const dep: any = deploymentFor(fnResource(), settings);
    const pod = dep.spec.template.spec;
    const c = pod.containers[0];
    expect(c.image).to.equal('localhost/fnhost-runtime:dev');
    expect(pod.automountServiceAccountToken).to.equal(false);
    expect(pod.securityContext).to.include({ runAsNonRoot: true, runAsUser: 10001, runAsGroup: 10001 });
    expect(c.securityContext).to.deep.equal({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });
    expect(c.readinessProbe.httpGet).to.deep.equal({ path: '/healthz', port: 'http' });
    expect(c.livenessProbe.tcpSocket).to.deep.equal({ port: 'http' });
    expect(pod.volumes).to.deep.include({ name: 'code', configMap: { name: 'fn-hello-code' } });
    expect(c.volumeMounts).to.deep.include({ name: 'code', mountPath: '/fnhost/function', readOnly: true });
    expect(c.volumeMounts).to.deep.include({ name: 'tmp', mountPath: '/tmp' });
    expect(dep.spec.selector.matchLabels).to.deep.equal({ 'app.kubernetes.io/managed-by': 'fnhost-operator', 'fnhost.dev/function': 'hello' });
  });

  it('stopping: a preStop sleep keeps the runtime listening while the gateway learns the pod is terminating (0 turns it off)', () => {
    const dep: any = deploymentFor(fnResource({ timeoutSeconds: 30 }), settings);
    expect(dep.spec.template.spec.containers[0].lifecycle).to.deep.equal({ preStop: { sleep: { seconds: 2 } } });
    expect(dep.spec.template.spec.terminationGracePeriodSeconds, 'the timeout, 5 s and the pause').to.equal(37);
    const off: any = deploymentFor(fnResource({ timeoutSeconds: 30 }), testSettings({ FNHOST_RUNTIME_STOP_DELAY_SECONDS: '0' }));
    expect(off.spec.template.spec.containers[0]).not.to.have.property('lifecycle');
    expect(off.spec.template.spec.terminationGracePeriodSeconds).to.equal(35);
    expect(() => testSettings({ FNHOST_RUNTIME_STOP_DELAY_SECONDS: '31' })).to.throw(/FNHOST_RUNTIME_STOP_DELAY_SECONDS/);
  });

  it('memory: the container limit is memoryMiB plus the runtime overhead; the V8 heap gets memoryMiB', () => {
    const dep: any = deploymentFor(fnResource({ memoryMiB: 256 }), testSettings({ FNHOST_RUNTIME_OVERHEAD_MIB: '64' }));
    const c = dep.spec.template.spec.containers[0];
    expect(c.resources.limits.memory).to.equal('320Mi');
    expect(c.resources.requests.memory).to.equal('320Mi');
    expect(envValue(dep, 'FNHOST_MEMORY_MIB')).to.equal('256');
    expect(Number(envValue(dep, 'FNHOST_MEMORY_MIB'))).to.be.below(320);
  });

  it('CPU: request FNHOST_CPU_REQUEST, limit FNHOST_CPU_LIMIT (1 by default); a request above the limit is refused at start', () => {
    const c = (deploymentFor(fnResource(), settings) as any).spec.template.spec.containers[0];
    expect(c.resources.requests.cpu).to.equal('50m');
    expect(c.resources.limits.cpu).to.equal('1');
    const custom = (deploymentFor(fnResource(), testSettings({ FNHOST_CPU_REQUEST: '100m', FNHOST_CPU_LIMIT: '500m' })) as any).spec.template.spec.containers[0];
    expect(custom.resources).to.deep.include({ requests: { cpu: '100m', memory: '224Mi' }, limits: { cpu: '500m', memory: '224Mi' } });
    expect(() => testSettings({ FNHOST_CPU_REQUEST: '2', FNHOST_CPU_LIMIT: '1500m' })).to.throw('FNHOST_CPU_REQUEST (2) is above FNHOST_CPU_LIMIT (1500m)');
    expect(() => testSettings({ FNHOST_CPU_LIMIT: 'lots' })).to.throw('FNHOST_CPU_LIMIT must be a CPU quantity such as 50m or 0.5, got "lots"');
  });

  it('CPU per function: spec.cpu request and limit replace the settings; a limit below the default request lowers the request', () => {
    const cpu = (spec: object) => (deploymentFor(fnResource({ cpu: spec }), settings) as any).spec.template.spec.containers[0].resources;
    expect(cpu({ request: '250m', limit: '500m' })).to.deep.include({ requests: { cpu: '250m', memory: '224Mi' }, limits: { cpu: '500m', memory: '224Mi' } });
    expect(cpu({ request: '300m' }).limits.cpu).to.equal('1');
    expect(cpu({ limit: '20m' }).requests.cpu).to.equal('20m');
  });

  it('the Deployment and the CronJob name the scanner checks they decide against, with reasons, on their own metadata (no pod rolls)', () => {
    const fn = fnResource({ schedule: { cron: '0 * * * *' } });
    const dep: any = deploymentFor(fn, settings);
    const cj: any = cronJobFor(fn, settings);
    const skipped = (o: any) => Object.entries(o.metadata.annotations as Record<string, string>).filter(([k]) => k.startsWith('checkov.io/skip')).map(([, v]) => v.split('=')[0]);
    expect(skipped(dep)).to.have.members(['CKV_K8S_43', 'CKV_K8S_15', 'CKV_K8S_35']);
    expect(skipped(cj)).to.have.members(['CKV_K8S_43', 'CKV_K8S_15']);
    for (const v of Object.values(dep.metadata.annotations as Record<string, string>)) expect(v).to.match(/^CKV_K8S_\d+=\S.{20,}/);
    expect(dep.spec.template.metadata.annotations).to.not.have.any.keys('checkov.io/skip1', 'checkov.io/skip2', 'checkov.io/skip3');
  });

  it('gives runtimes the egress proxy when FNHOST_EGRESS_PROXY_URL is set, and nothing otherwise', () => {
    expect(envValue(deploymentFor(fnResource({}), settings), 'FNHOST_EGRESS_PROXY')).to.equal(undefined);
    const withProxy = deploymentFor(fnResource({}), testSettings({ FNHOST_EGRESS_PROXY_URL: 'http://fnhost-gateway.fnhost-system.svc:3128/' }));
    expect(envValue(withProxy, 'FNHOST_EGRESS_PROXY')).to.equal('http://fnhost-gateway.fnhost-system.svc:3128');
  });

  it('passes the runtime contract down by env, the token from the owned Secret, then the user env', () => {
    const fn = fnResource({
      timeoutSeconds: 7,
      routes: ['/users/:userId'],
      env: [
        { name: 'PLAIN', value: 'x' },
        { name: 'FROM_SECRET', valueFrom: { secretKeyRef: { name: 'db', key: 'password' } } },
        { name: 'FROM_CM', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'mode', optional: true } } },
      ],
    });
    const dep = deploymentFor(fn, settings);
    expect(envValue(dep, 'FNHOST_TIMEOUT_MS')).to.equal('7000');
    expect(envValue(dep, 'FNHOST_FUNCTION_FILE')).to.equal('/fnhost/function/index.js');
    expect(envValue(dep, 'FNHOST_FUNCTION_ID')).to.equal(derivedFunctionId('team-a', 'hello'));
    expect(envValue(dep, 'FNHOST_FUNCTION_NAME')).to.equal('hello');
    expect(envValue(dep, 'FNHOST_ROUTES')).to.equal('["/users/:userId"]');
    expect(envValue(dep, 'FNHOST_GATEWAY_URL')).to.equal('http://gateway.fnhost.svc:8080');
    expect(envValue(dep, 'PORT')).to.equal('8080');
    const env = envOf(dep);
    expect(env.find((e) => e.name === 'FNHOST_RUNTIME_TOKEN')).to.deep.equal({ name: 'FNHOST_RUNTIME_TOKEN', valueFrom: { secretKeyRef: { name: 'fn-hello-tokens', key: RUNTIME_TOKEN_KEY } } });
    expect(env.slice(-3)).to.deep.equal([
      { name: 'PLAIN', value: 'x' },
      { name: 'FROM_SECRET', valueFrom: { secretKeyRef: { name: 'db', key: 'password' } } },
      { name: 'FROM_CM', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'mode', optional: true } } },
    ]);
  });

  it('a throwaway version (replay --code) runs as its original: the original name and functionId in its env, the original tokens in its Secret', () => {
    const id = derivedFunctionId('team-a', 'hello');
    const fn = fnResource({ functionId: id, replicas: 1 }, { name: 'hello-rp-ab12c', labels: { 'fnhost.dev/throwaway': 'replay', 'fnhost.dev/replay-of': 'hello' } });
    const dep = deploymentFor(fn, settings);
    expect(envValue(dep, 'FNHOST_FUNCTION_NAME')).to.equal('hello');
    expect(envValue(dep, 'FNHOST_FUNCTION_ID')).to.equal(id);
    const secret: any = secretFor(fn, settings);
    expect(Buffer.from(secret.data[RUNTIME_TOKEN_KEY], 'base64').toString()).to.equal(deriveToken(TOKEN_KEY, 'runtime', id));
    expect(cronJobFor(fn, settings)).to.equal(null);
  });

  it('a change of code or env changes the pod template hash; a change of replicas does not', () => {
    const base = fnResource();
    const hash = (fn: ReturnType<typeof fnResource>) => (deploymentFor(fn, settings) as any).spec.template.metadata.annotations[ANNOTATION_CONFIG_HASH];
    expect(hash(base)).to.equal(configHash(base, settings));
    expect(hash(fnResource({ code: base.spec.code + '\n// v2' }))).to.not.equal(hash(base));
    expect(hash(fnResource({ env: [{ name: 'A', value: '1' }] }))).to.not.equal(hash(base));
    expect(hash(fnResource({ env: [{ name: 'A', value: '1' }] }))).to.not.equal(hash(fnResource({ env: [{ name: 'A', value: '2' }] })));
    expect(hash(fnResource({ replicas: 3 }))).to.equal(hash(base));
  });

  it('inactive functions scale to zero and their CronJob is suspended', () => {
    const fn = fnResource({ active: false, replicas: 3, schedule: { cron: '0 * * * *' } });
    expect((deploymentFor(fn, settings) as any).spec.replicas).to.equal(0);
    expect((cronJobFor(fn, settings) as any).spec.suspend).to.equal(true);
    expect((deploymentFor(fnResource({ replicas: 3 }), settings) as any).spec.replicas).to.equal(3);
    // Idle (spec.scaleToZero, decided by idle.ts): zero pods, the same template otherwise.
    const idle = deploymentFor(fnResource({ replicas: 3, scaleToZero: { idleSeconds: 60 } }), settings, { idle: true }) as any;
    const awake = deploymentFor(fnResource({ replicas: 3, scaleToZero: { idleSeconds: 60 } }), settings, { idle: false }) as any;
    expect(idle.spec.replicas).to.equal(0);
    expect(awake.spec.replicas).to.equal(3);
    expect(idle.spec.template).to.deep.equal(awake.spec.template);
  });

  it('the Service selects the runtime pods on port 80 → the named port http', () => {
    const svc: any = serviceFor(fnResource());
    expect(svc.spec.selector).to.deep.equal({ 'app.kubernetes.io/managed-by': 'fnhost-operator', 'fnhost.dev/function': 'hello', 'fnhost.dev/role': 'runtime' });
    expect(svc.spec.ports).to.deep.equal([{ name: 'http', port: 80, targetPort: 'http', protocol: 'TCP' }]);
  });

  it('the Service selects the runtime pods and never the CronJob job pods', () => {
    const fn = fnResource({ schedule: { cron: '* * * * *' } });
    const selector: Record<string, string> = (serviceFor(fn) as any).spec.selector;
    const matches = (labels: Record<string, string>) => Object.entries(selector).every(([k, v]) => labels[k] === v);
    const runtimeLabels = (deploymentFor(fn, settings) as any).spec.template.metadata.labels;
    const jobLabels = (cronJobFor(fn, settings) as any).spec.jobTemplate.spec.template.metadata.labels;
    expect(matches(runtimeLabels)).to.equal(true);
    expect(matches(jobLabels)).to.equal(false);
    // The Deployment's selector (immutable) still matches its own pods.
    const depSelector: Record<string, string> = (deploymentFor(fn, settings) as any).spec.selector.matchLabels;
    expect(Object.entries(depSelector).every(([k, v]) => runtimeLabels[k] === v)).to.equal(true);
  });

  it('no schedule: no CronJob', () => {
    expect(cronJobFor(fnResource(), settings)).to.equal(null);
  });

  it('the CronJob calls the gateway with the schedule token, in the function timezone, without piling runs', () => {
    const fn = fnResource({ schedule: { cron: '30 6 * * MON-FRI', timezone: 'Europe/Paris' }, timeoutSeconds: 20 });
    const cj: any = cronJobFor(fn, settings);
    expect(cj.spec).to.include({ schedule: '30 6 * * MON-FRI', timeZone: 'Europe/Paris', concurrencyPolicy: 'Forbid', suspend: false, successfulJobsHistoryLimit: 1, failedJobsHistoryLimit: 3, startingDeadlineSeconds: 300 });
    const job = cj.spec.jobTemplate.spec;
    expect(job.backoffLimit).to.equal(0);
    expect(job.activeDeadlineSeconds).to.equal(80);
    const pod = job.template.spec;
    expect(pod.restartPolicy).to.equal('Never');
    expect(pod.automountServiceAccountToken).to.equal(false);
    const c = pod.containers[0];
    expect(c.image).to.equal(settings.runtimeImage);
    expect(c.command).to.deep.equal(['node', '-e', INVOKE_SCRIPT]);
    expect(c.env).to.deep.include({ name: 'FNHOST_INVOKE_URL', value: `http://gateway.fnhost.svc:8080/invoke/${derivedFunctionId('team-a', 'hello')}` });
    // The schedule token as a file holding only that key of the Secret, readable through the pod's group.
    expect(c.env.map((v: any) => v.name)).to.not.include('FNHOST_SCHEDULE_TOKEN');
    expect(c.env.some((v: any) => v.valueFrom?.secretKeyRef)).to.equal(false);
    expect(c.env).to.deep.include({ name: 'FNHOST_SCHEDULE_TOKEN_FILE', value: `/fnhost/schedule/${SCHEDULE_TOKEN_KEY}` });
    expect(c.volumeMounts).to.deep.equal([{ name: 'schedule-token', mountPath: '/fnhost/schedule', readOnly: true }]);
    // The Job's name (after its scheduled minute), for the planned time the gateway's ledger enters.
    expect(c.env).to.deep.include({ name: 'FNHOST_JOB_NAME', valueFrom: { fieldRef: { fieldPath: "metadata.labels['batch.kubernetes.io/job-name']" } } });
    expect(pod.volumes).to.deep.equal([{ name: 'schedule-token', secret: { secretName: 'fn-hello-tokens', items: [{ key: SCHEDULE_TOKEN_KEY, path: SCHEDULE_TOKEN_KEY }], defaultMode: 0o440 } }]);
    expect(pod.securityContext).to.include({ runAsUser: 10001, fsGroup: 10001 });
    expect(c.resources.limits).to.deep.equal({ cpu: '1', memory: '96Mi' });
    expect(INVOKE_SCRIPT).to.contain("'x-fnhost-schedule-token'");
    expect(() => new Function(INVOKE_SCRIPT)).to.not.throw();
    expect(cronJobFor(fnResource({ schedule: { cron: '0 * * * *', suspend: true } }), settings)!.spec).to.include({ suspend: true });
  });

  it('the Secret holds tokens derived from the key and the functionId; different functions get different tokens', () => {
    const s: any = secretFor(fnResource(), settings);
    const id = derivedFunctionId('team-a', 'hello');
    const decode = (b64: string) => Buffer.from(b64, 'base64').toString();
    expect(decode(s.data[RUNTIME_TOKEN_KEY])).to.equal(deriveToken(TOKEN_KEY, 'runtime', id));
    expect(decode(s.data[SCHEDULE_TOKEN_KEY])).to.equal(deriveToken(TOKEN_KEY, 'schedule', id));
    expect(decode(s.data[RUNTIME_TOKEN_KEY])).to.not.equal(decode(s.data[SCHEDULE_TOKEN_KEY]));
    const other: any = secretFor(fnResource({}, { name: 'other' }), settings);
    expect(other.data[RUNTIME_TOKEN_KEY]).to.not.equal(s.data[RUNTIME_TOKEN_KEY]);
  });

  it('owned names of a 40-character Function fit the 52-character CronJob limit', () => {
    const names = ownedNames('a'.repeat(40));
    expect(names.cronJob.length).to.be.at.most(52);
    expect(names.deployment).to.match(/^[a-z]/);
  });
});
