import { expect } from 'chai';
import { ROOT, run } from '../e2e/helpers.ts';
import { getCluster, makeKubectl, uniqueName, type ClusterAccess } from '../operator/harness.ts';

// The chart with helm and the test cluster's API server: helm lint; helm
// template for the defaults and for each documented option; every rendered
// manifest accepted by the API server (server-side dry run); values of the
// wrong type refused by the schema; and the RBAC of both service accounts
// checked with `kubectl auth can-i` (allowed and denied cases), with the
// chart's ServiceAccounts, roles and bindings really applied.

const CHART = `${ROOT}charts/fnhost`;

describe('chart: charts/fnhost with helm and the API server', function () {
  this.timeout(300_000);
  let cluster: ClusterAccess;
  let kubectl: ReturnType<typeof makeKubectl>;
  let helm: string;
  let relNs: string;
  let fnNs: string;
  let otherNs: string;
  const release = uniqueName('ct');
  const clusterScoped: string[] = [];

  const template = (args: string[]) => run(helm, ['template', release, CHART, '--namespace', relNs, ...args], { env: { KUBECONFIG: cluster.kubeconfig } });
  const base = () => ['--set', 'mongodb.url=mongodb://db.example:27017/fnhost', '--set', `gateway.defaultNamespace=${fnNs}`];

  before(async () => {
    cluster = await getCluster();
    kubectl = makeKubectl(cluster);
    helm = (JSON.parse((await run(`${ROOT}test/cluster/env.sh`, ['--json'])).stdout) as { helm: string }).helm;
    // The CRD, as helm install would put it (can-i resolves functions.fnhost.dev through discovery).
    const crd = await kubectl(['apply', '--server-side', '--force-conflicts', '-f', `${CHART}/crds/fnhost.dev_functions.yaml`]);
    expect(crd.code, crd.stderr).to.equal(0);
    expect((await kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd/functions.fnhost.dev'])).code).to.equal(0);
    relNs = `${release}-sys`;
    fnNs = `${release}-fn`;
    otherNs = `${release}-other`;
    for (const ns of [relNs, fnNs, otherNs]) expect((await kubectl(['create', 'namespace', ns])).code).to.equal(0);
  });

  after(async () => {
    for (const name of clusterScoped) await kubectl(['delete', name, '--ignore-not-found']);
    for (const ns of [relNs, fnNs, otherNs]) if (ns) await kubectl(['delete', 'namespace', ns, '--wait=false']);
  });

  it('passes helm lint --strict', async () => {
    const r = await run(helm, ['lint', '--strict', CHART, ...base()]);
    expect(r.code, r.stdout + r.stderr).to.equal(0);
    expect(r.stdout).to.contain('0 chart(s) failed');
  });

  const options: Array<[string, string[]]> = [
    ['the defaults', []],
    ['an existing MongoDB Secret', ['--set', 'mongodb.url=', '--set', 'mongodb.existingSecret=my-mongo']],
    ['the evaluation MongoDB StatefulSet', ['--set', 'mongodb.url=', '--set', 'mongodb.internal.enabled=true', '--set', 'mongodb.internal.storageClassName=standard']],
    ['the evaluation MongoDB without persistence (emptyDir)', ['--set', 'mongodb.url=', '--set', 'mongodb.internal.enabled=true', '--set', 'mongodb.internal.persistence.enabled=false']],
    ['/metrics behind a token, no uninstall hook', ['--set', 'metrics.auth.enabled=true', '--set', 'metrics.scrapeAnnotations=false', '--set', 'uninstall.removeFunctions=false']],
    ['an Ingress with TLS and an admin host', ['--set', 'ingress.enabled=true', '--set', 'ingress.host=fn.example.com', '--set', 'ingress.adminHost=admin.fn.example.com', '--set', 'ingress.className=nginx', '--set', 'ingress.tlsSecretName=fn-tls', '--set', 'gateway.trustProxy=true']],
    ['an Ingress whose admin host has a certificate of its own', ['--set', 'ingress.enabled=true', '--set', 'ingress.host=fn.example.com', '--set', 'ingress.adminHost=admin.example.org', '--set', 'ingress.tlsSecretName=fn-tls', '--set', 'ingress.adminTlsSecretName=admin-tls']],
    ['one watched namespace (Roles, not ClusterRoles)', ['--set', `functions.watchNamespace=${'FNNS'}`]],
    ['a NodePort Service and one replica each (no PDB)', ['--set', 'gateway.service.type=NodePort', '--set', 'gateway.service.nodePort=30999', '--set', 'gateway.replicas=1']],
    ['two operator replicas (PDB), given tokens and existing Secrets', ['--set', 'operator.replicas=2', '--set', 'adminToken.value=0123456789abcdef0123', '--set', 'platform.existingTokenKeySecret=my-key']],
    ['platform CIDRs the egress proxy refuses', ['--set', 'networkPolicy.platformCIDRs={10.96.0.0/16,10.244.0.1,fd00::/8}']],
    ['NetworkPolicies off, pull secrets, labels, no preStop pause', ['--set', 'networkPolicy.enabled=false', '--set', 'imagePullSecrets={regcred}', '--set', 'commonLabels.team=platform', '--set', 'gateway.preStopSleepSeconds=0']],
    ['the platform NetworkPolicies with the addresses of the API server, DNS and MongoDB, extra rules, and image digests', ['--set-json', 'platformNetworkPolicy={"apiServer":{"cidrs":["10.244.0.1/32"],"ports":[6443]},"dns":{"cidrs":["10.244.0.1/32"]},"mongodb":{"cidrs":["10.244.0.1/32","fd00::/64"],"ports":[27017,27018]},"gatewayExtraEgress":[{"to":[{"ipBlock":{"cidr":"0.0.0.0/0"}}],"ports":[{"port":443,"protocol":"TCP"}]}],"gatewayExtraIngress":[{"ports":[{"port":3128,"protocol":"TCP"}]}]}', '--set', `image.digest=sha256:${'a'.repeat(64)}`, '--set', `runtimeImage.digest=sha256:${'b'.repeat(64)}`]],
    ['the platform NetworkPolicies off', ['--set', 'platformNetworkPolicy.enabled=false']],
    ['namespaces where functions may live, by name and by label', ['--set', 'functions.namespaces={team-a,team-b}', '--set', 'functions.namespaceSelector=fnhost.dev/functions=allowed']],
    ['image overrides and a public URL', ['--set', 'image.repository=registry.example.com/fnhost/platform', '--set', 'image.tag=1.2.3', '--set', 'runtimeImage.repository=registry.example.com/fnhost/runtime', '--set', 'gateway.publicUrl=https://fn.example.org']],
  ];

  for (const [what, args] of options) {
    it(`renders ${what}, and the API server accepts every object (server-side dry run)`, async () => {
      const resolved = args.map((a) => a.replace('FNNS', fnNs).replace('OTHERNS', otherNs));
      const rendered = await template([...base(), ...resolved]);
      expect(rendered.code, rendered.stderr).to.equal(0);
      expect(rendered.stdout).to.contain('kind: Deployment');
      const dry = await kubectl(['apply', '--dry-run=server', '-f', '-'], rendered.stdout);
      expect(dry.code, dry.stderr).to.equal(0);
      const count = (rendered.stdout.match(/^kind: /gm) ?? []).length;
      expect(dry.stdout.trim().split('\n').length).to.equal(count);
      expect(dry.stdout).to.contain('(server dry run)');
    });
  }

  it('the options change what they say', async () => {
    const ingress = await template([...base(), '--set', 'ingress.enabled=true', '--set', 'ingress.host=fn.example.com', '--set', 'ingress.tlsSecretName=fn-tls']);
    expect(ingress.stdout).to.contain('kind: Ingress').and.to.contain('value: "https://fn.example.com"');
    // The main host: /invoke and /api on the main port; no panel rule without an admin host.
    expect(ingress.stdout).to.match(/- path: \/invoke[\s\S]*port: \{ name: http \}[\s\S]*- path: \/api\n/);
    expect(ingress.stdout).not.to.contain('port: { name: admin }');
    const withAdmin = await template([...base(), '--set', 'ingress.enabled=true', '--set', 'ingress.host=fn.example.com', '--set', 'ingress.adminHost=admin.fn.example.com', '--set', 'ingress.tlsSecretName=fn-tls']);
    expect(withAdmin.stdout).to.contain('- host: "admin.fn.example.com"').and.to.contain('port: { name: admin }');
    expect(withAdmin.stdout).to.contain('hosts: ["fn.example.com", "admin.fn.example.com"]');
    const watched = await template([...base(), '--set', `functions.watchNamespace=${fnNs}`]);
    // Only the cluster-scope rights every install needs stay ClusterRoles: the gateway's reviews and the aggregated roles.
    expect(watched.stdout).to.not.match(/kind: ClusterRole\nmetadata:\n  name: \S+-fnhost-(gateway|operator)\n/);
    expect(watched.stdout).to.contain('name: fnhost-view');
    const namespaces = await template([...base(), '--set', 'functions.namespaces={team-a,team-b}', '--set', 'functions.namespaceSelector=fnhost.dev/functions=allowed']);
    expect(namespaces.stdout).to.contain('{ name: FNHOST_FUNCTION_NAMESPACES, value: "team-a,team-b" }').and.to.contain('{ name: FNHOST_FUNCTION_NAMESPACE_SELECTOR, value: "fnhost.dev/functions=allowed" }');
    expect(namespaces.stdout).to.match(/name: \S+-fnhost-operator-namespaces/);
    const noKube = await template([...base(), '--set', 'rbac.kubernetesTokens=false', '--set', 'rbac.aggregatedRoles=false']);
    expect(noKube.stdout).not.to.contain('tokenreviews');
    expect(noKube.stdout).not.to.contain('fnhost-view');
    expect(noKube.stdout).to.contain('{ name: FNHOST_KUBE_TOKENS, value: "false" }');
    expect(watched.stdout).to.contain(`namespace: ${fnNs}`);
    const internal = await template(['--set', 'mongodb.internal.enabled=true']);
    expect(internal.stdout).to.contain('kind: StatefulSet').and.to.contain('volumeClaimTemplates');
    const single = await template([...base(), '--set', 'gateway.replicas=1']);
    expect(single.stdout).to.not.contain('kind: PodDisruptionBudget');
    const defaults = await template(base());
    expect(defaults.stdout).to.contain('readOnlyRootFilesystem: true').and.to.contain('runAsNonRoot: true');
    expect(defaults.stdout).to.contain('app.kubernetes.io/managed-by: Helm').and.to.contain('app.kubernetes.io/component: gateway');
    // Function pods' NetworkPolicy is the operator's (one per namespace with Functions): the chart
    // tells it where the gateway's pods are, and the egress proxy listens only behind a ClusterIP Service.
    expect(defaults.stdout).to.contain('{ name: FNHOST_NETWORK_POLICY, value: "true" }');
    expect(defaults.stdout).to.match(/FNHOST_GATEWAY_POD_LABELS, value: "[^"]*app\.kubernetes\.io\/component=gateway/);
    expect(defaults.stdout).to.contain('{ name: FNHOST_GATEWAY_POD_PORTS, value: "8080,8090" }');
    expect(defaults.stdout).to.contain('{ name: FNHOST_EGRESS_LISTEN, value: "0.0.0.0:8090" }');
    expect(defaults.stdout).to.match(/FNHOST_EGRESS_PROXY_URL, value: "http:\/\/[^"]*-gateway-internal\.[^"]*:8090"/);
    const platformCidrs = await template([...base(), '--set', 'networkPolicy.platformCIDRs={10.96.0.0/16,10.244.0.1}']);
    expect(platformCidrs.stdout).to.contain('{ name: FNHOST_EGRESS_PLATFORM_CIDRS, value: "10.96.0.0/16,10.244.0.1" }');
    const nodePort = await template([...base(), '--set', 'gateway.service.type=NodePort']);
    const internalService = nodePort.stdout.split('\n---').find((doc) => doc.includes('-gateway-internal') && doc.includes('kind: Service'))!;
    expect(internalService).to.contain('type: ClusterIP').and.to.contain('name: egress');
  });

  it('refuses values of the wrong type, naming them', async () => {
    for (const [args, message] of [
      [['--set', 'gateway.replicas=two'], '/gateway/replicas'],
      [['--set', 'mongodb.url=postgres://x'], '/mongodb/url'],
      [['--set', 'gateway.service.type=Ingress'], '/gateway/service/type'],
      [['--set', 'adminToken.value=short'], '/adminToken/value'],
      [['--set', 'networkPolicy.platformCIDRs={cluster.local}'], '/networkPolicy/platformCIDRs/0'],
      [['--set', 'gateway.egressPort=8081'], '/gateway/egressPort'],
      [['--set', 'unknownSetting=1'], 'unknownSetting'],
      [['--set', 'mongodb.internal.enabled=true'], 'conflicts with mongodb.url'],
      [['--set', 'ingress.enabled=true'], 'ingress.enabled=true needs ingress.host'],
      [['--set', 'ingress.enabled=true', '--set', 'ingress.host=fn.example.com', '--set', 'ingress.adminHost=fn.example.com'], 'ingress.adminHost must differ from ingress.host'],
      [['--set', 'ingress.enabled=true', '--set', 'ingress.host=fn.example.com', '--set', 'ingress.paths={/invoke,/admin}'], 'ingress.paths must not hold /admin'],
      [['--set', 'gateway.service.adminPort=8080'], 'gateway.service.adminPort must differ'],
    ] as Array<[string[], string]>) {
      const r = await template([...base(), ...args]);
      expect(r.code, args.join(' ')).to.not.equal(0);
      expect(r.stderr, args.join(' ')).to.contain(message);
    }
  });

  it('least-privilege RBAC: kubectl auth can-i as each ServiceAccount (allowed and denied)', async () => {
    const rendered = await template(base());
    const rbacKinds = new Set(['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding']);
    const docs = rendered.stdout.split(/^---$/m).filter((d) => rbacKinds.has(/^kind: (\w+)/m.exec(d)?.[1] ?? ''));
    const applied = await kubectl(['apply', '-f', '-'], docs.join('\n---\n'));
    expect(applied.code, applied.stderr).to.equal(0);
    for (const line of applied.stdout.split('\n')) if (/^clusterrole/.test(line)) clusterScoped.push(line.split(' ')[0]!);
    const sa = (component: string) => `system:serviceaccount:${relNs}:${release}-fnhost-${component}`;
    const can = async (component: string, args: string[]) => {
      const r = await kubectl(['auth', 'can-i', ...args, '--as', sa(component)]);
      return r.stdout.trim();
    };
    const cases: Array<[string, string[], 'yes' | 'no']> = [
      // gateway: reads Functions and EndpointSlices, writes Functions and their status; nothing else.
      ['gateway', ['create', 'functions.fnhost.dev', '-n', fnNs], 'yes'],
      ['gateway', ['patch', 'functions.fnhost.dev', '-n', otherNs], 'yes'],
      ['gateway', ['delete', 'functions.fnhost.dev', '-n', fnNs], 'yes'],
      ['gateway', ['watch', 'functions.fnhost.dev', '--all-namespaces'], 'yes'],
      ['gateway', ['patch', 'functions.fnhost.dev', '--subresource=status', '-n', fnNs], 'yes'],
      ['gateway', ['list', 'endpointslices.discovery.k8s.io', '--all-namespaces'], 'yes'],
      ['gateway', ['update', 'functions.fnhost.dev', '-n', fnNs], 'no'],
      ['gateway', ['get', 'secrets', '-n', fnNs], 'no'],
      ['gateway', ['get', 'secrets', '-n', relNs], 'no'],
      ['gateway', ['list', 'pods', '-n', fnNs], 'yes'],
      ['gateway', ['get', 'pods', '-n', fnNs], 'no'],
      ['gateway', ['delete', 'pods', '-n', fnNs], 'no'],
      ['gateway', ['create', 'deployments.apps', '-n', fnNs], 'no'],
      ['gateway', ['create', 'configmaps', '-n', fnNs], 'no'],
      ['gateway', ['delete', 'endpointslices.discovery.k8s.io', '-n', fnNs], 'no'],
      ['gateway', ['update', 'functions.fnhost.dev', '--subresource=finalizers', '-n', fnNs], 'no'],
      // Kubernetes tokens on the management API: it asks the API server, and may do nothing else with them.
      ['gateway', ['create', 'tokenreviews.authentication.k8s.io'], 'yes'],
      ['gateway', ['create', 'subjectaccessreviews.authorization.k8s.io'], 'yes'],
      ['gateway', ['create', 'serviceaccounts/token', '-n', fnNs], 'no'],
      ['gateway', ['get', 'namespaces'], 'no'],
      // operator: only what it owns.
      ['operator', ['create', 'deployments.apps', '-n', fnNs], 'yes'],
      ['operator', ['patch', 'services', '-n', fnNs], 'yes'],
      ['operator', ['create', 'secrets', '-n', fnNs], 'yes'],
      ['operator', ['delete', 'cronjobs.batch', '-n', fnNs], 'yes'],
      ['operator', ['update', 'functions.fnhost.dev', '--subresource=finalizers', '-n', fnNs], 'yes'],
      ['operator', ['patch', 'functions.fnhost.dev', '--subresource=status', '-n', fnNs], 'yes'],
      ['operator', ['list', 'pods', '-n', fnNs], 'yes'],
      ['operator', ['create', 'networkpolicies.networking.k8s.io', '-n', fnNs], 'yes'],
      ['operator', ['patch', 'networkpolicies.networking.k8s.io', '-n', fnNs], 'yes'],
      ['operator', ['delete', 'networkpolicies.networking.k8s.io', '-n', fnNs], 'no'],
      ['operator', ['create', 'leases.coordination.k8s.io', '-n', relNs], 'yes'],
      ['operator', ['update', `leases.coordination.k8s.io/${release}-fnhost-operator`, '-n', relNs], 'yes'],
      ['operator', ['update', 'leases.coordination.k8s.io/another-lease', '-n', relNs], 'no'],
      ['operator', ['create', 'leases.coordination.k8s.io', '-n', fnNs], 'no'],
      ['operator', ['create', 'functions.fnhost.dev', '-n', fnNs], 'no'],
      ['operator', ['delete', 'functions.fnhost.dev', '-n', fnNs], 'no'],
      ['operator', ['delete', 'deployments.apps', '-n', fnNs], 'no'],
      ['operator', ['list', 'secrets', '-n', fnNs], 'no'],
      ['operator', ['delete', 'secrets', '-n', fnNs], 'no'],
      ['operator', ['create', 'pods', '-n', fnNs], 'no'],
      ['operator', ['delete', 'namespaces'], 'no'],
      ['operator', ['create', 'clusterrolebindings.rbac.authorization.k8s.io'], 'no'],
      // the uninstall hook (a pre-delete Job): Functions made inactive and deleted, their pods and schedule Jobs seen; nothing else.
      ['uninstall', ['patch', 'functions.fnhost.dev', '-n', fnNs], 'yes'],
      ['uninstall', ['delete', 'functions.fnhost.dev', '-n', otherNs], 'yes'],
      ['uninstall', ['list', 'pods', '-n', fnNs], 'yes'],
      ['uninstall', ['delete', 'jobs.batch', '-n', fnNs], 'yes'],
      ['uninstall', ['create', 'functions.fnhost.dev', '-n', fnNs], 'no'],
      ['uninstall', ['delete', 'pods', '-n', fnNs], 'no'],
      ['uninstall', ['get', 'secrets', '-n', fnNs], 'no'],
      ['uninstall', ['delete', 'deployments.apps', '-n', fnNs], 'no'],
      ['uninstall', ['delete', 'networkpolicies.networking.k8s.io', '-n', fnNs], 'no'],
    ];
    const wrong: string[] = [];
    for (const [component, args, expected] of cases) {
      const got = await can(component, args);
      if (got !== expected) wrong.push(`${component} ${args.join(' ')}: ${got}, expected ${expected}`);
    }
    expect(wrong).to.deep.equal([]);
  });

  it('one watched namespace: the roles allow that namespace only', async () => {
    const rel = `${release}w`;
    const rendered = await run(helm, ['template', rel, CHART, '--namespace', relNs, ...base(), '--set', `functions.watchNamespace=${fnNs}`], { env: { KUBECONFIG: cluster.kubeconfig } });
    expect(rendered.code, rendered.stderr).to.equal(0);
    const rbacKinds = new Set(['ServiceAccount', 'Role', 'RoleBinding']);
    const docs = rendered.stdout.split(/^---$/m).filter((d) => rbacKinds.has(/^kind: (\w+)/m.exec(d)?.[1] ?? ''));
    const applied = await kubectl(['apply', '-f', '-'], docs.join('\n---\n'));
    expect(applied.code, applied.stderr).to.equal(0);
    const as = (c: string) => ['--as', `system:serviceaccount:${relNs}:${rel}-fnhost-${c}`];
    const can = async (args: string[]) => (await kubectl(['auth', 'can-i', ...args])).stdout.trim();
    expect(await can(['create', 'functions.fnhost.dev', '-n', fnNs, ...as('gateway')])).to.equal('yes');
    expect(await can(['create', 'functions.fnhost.dev', '-n', otherNs, ...as('gateway')])).to.equal('no');
    expect(await can(['create', 'deployments.apps', '-n', fnNs, ...as('operator')])).to.equal('yes');
    expect(await can(['create', 'deployments.apps', '-n', otherNs, ...as('operator')])).to.equal('no');
    expect(await can(['list', 'functions.fnhost.dev', '--all-namespaces', ...as('gateway')])).to.equal('no');
  });
});
