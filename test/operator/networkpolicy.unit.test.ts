import { expect } from 'chai';
import { cronJobFor, deploymentFor, functionsNetworkPolicyFor, FUNCTIONS_NETWORK_POLICY_NAME } from '../../operator/src/builders/index.ts';
import { gatewayHostNames, resolveGatewayHostAliases } from '../../operator/src/gateway-hosts.ts';
import { SettingsError } from '../../operator/src/settings.ts';
import { fnResource, testSettings } from './fixtures.ts';

const POLICY_ENV = {
  FNHOST_NETWORK_POLICY: 'true',
  FNHOST_GATEWAY_POD_LABELS: 'app.kubernetes.io/name=fnhost,app.kubernetes.io/component=gateway',
  FNHOST_GATEWAY_POD_PORTS: '8080,8090',
};

describe('operator: the function pods NetworkPolicy', () => {
  it('is off unless FNHOST_NETWORK_POLICY says so', () => {
    expect(testSettings().networkPolicy).to.equal(undefined);
  });

  it('lets function pods connect only to the gateway pods ports, and only the gateway pods connect to them', () => {
    const settings = testSettings(POLICY_ENV);
    const policy: any = functionsNetworkPolicyFor('team-a', settings.networkPolicy!);
    expect(policy.metadata).to.include({ name: FUNCTIONS_NETWORK_POLICY_NAME, namespace: 'team-a' });
    expect(policy.metadata.ownerReferences, 'owners are added one by one, by the reconcile').to.equal(undefined);
    const gatewayPods = {
      namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'fnhost-system' } },
      podSelector: { matchLabels: { 'app.kubernetes.io/name': 'fnhost', 'app.kubernetes.io/component': 'gateway' } },
    };
    expect(policy.spec).to.deep.equal({
      podSelector: { matchLabels: { 'app.kubernetes.io/managed-by': 'fnhost-operator' } },
      policyTypes: ['Ingress', 'Egress'],
      ingress: [{ from: [gatewayPods], ports: [{ port: 8080, protocol: 'TCP' }] }],
      // No DNS, no ipBlock: everything else goes through the egress proxy.
      egress: [{ to: [gatewayPods], ports: [{ port: 8080, protocol: 'TCP' }, { port: 8090, protocol: 'TCP' }] }],
    });
  });

  it('takes the gateway namespace from FNHOST_GATEWAY_NAMESPACE', () => {
    const settings = testSettings({ ...POLICY_ENV, FNHOST_GATEWAY_NAMESPACE: 'platform' });
    const policy: any = functionsNetworkPolicyFor('team-a', settings.networkPolicy!);
    expect(policy.spec.ingress[0].from[0].namespaceSelector.matchLabels['kubernetes.io/metadata.name']).to.equal('platform');
  });

  it('refuses settings that would select nothing or everything, naming the variable', () => {
    expect(() => testSettings({ ...POLICY_ENV, FNHOST_GATEWAY_POD_LABELS: '' })).to.throw(SettingsError, /FNHOST_GATEWAY_POD_LABELS must name at least one label/);
    expect(() => testSettings({ ...POLICY_ENV, FNHOST_GATEWAY_POD_LABELS: 'app' })).to.throw(SettingsError, /bad pair "app"/);
    expect(() => testSettings({ ...POLICY_ENV, FNHOST_GATEWAY_POD_LABELS: 'a=b c' })).to.throw(SettingsError, /FNHOST_GATEWAY_POD_LABELS/);
    expect(() => testSettings({ ...POLICY_ENV, FNHOST_GATEWAY_POD_PORTS: '8080,http' })).to.throw(SettingsError, /FNHOST_GATEWAY_POD_PORTS must be TCP ports/);
    expect(() => testSettings({ ...POLICY_ENV, FNHOST_GATEWAY_POD_PORTS: '70000' })).to.throw(SettingsError, /FNHOST_GATEWAY_POD_PORTS/);
    expect(() => testSettings({ ...POLICY_ENV, FNHOST_NETWORK_POLICY: 'yes' })).to.throw(SettingsError, /FNHOST_NETWORK_POLICY must be true or false/);
  });
});

describe('operator: the gateway addresses in function pods /etc/hosts', () => {
  it('names the host names of the gateway and egress URLs, not addresses', () => {
    expect(gatewayHostNames({ gatewayUrl: 'http://gw.fnhost.svc:8080', egressProxyUrl: 'http://gw.fnhost.svc:8090' })).to.deep.equal(['gw.fnhost.svc']);
    expect(gatewayHostNames({ gatewayUrl: 'http://10.96.0.20:8080', egressProxyUrl: 'http://[fd00::1]:8090' })).to.deep.equal([]);
    expect(gatewayHostNames({ gatewayUrl: 'http://gw:8080', egressProxyUrl: undefined })).to.deep.equal(['gw']);
  });

  it('groups names by address and reports those that did not resolve', async () => {
    const table: Record<string, string> = { 'gw.fnhost.svc': '10.96.0.20', 'egress.fnhost.svc': '10.96.0.20' };
    const lookup = async (host: string) => {
      if (!(host in table)) throw new Error(`getaddrinfo ENOTFOUND ${host}`);
      return table[host]!;
    };
    expect(await resolveGatewayHostAliases({ gatewayUrl: 'http://gw.fnhost.svc:8080', egressProxyUrl: 'http://egress.fnhost.svc:8090' }, lookup)).to.deep.equal({
      aliases: [{ ip: '10.96.0.20', hostnames: ['gw.fnhost.svc', 'egress.fnhost.svc'] }],
      failed: [],
    });
    const partial = await resolveGatewayHostAliases({ gatewayUrl: 'http://gw.fnhost.svc:8080', egressProxyUrl: 'http://nowhere.svc:8090' }, lookup);
    expect(partial.failed).to.deep.equal([{ host: 'nowhere.svc', error: 'getaddrinfo ENOTFOUND nowhere.svc' }]);
  });

  it('runtime and schedule pods carry them as hostAliases, and nothing when there are none', () => {
    const fn = fnResource({ schedule: { cron: '*/5 * * * *' } });
    const settings = { ...testSettings(), gatewayHostAliases: [{ ip: '10.96.0.20', hostnames: ['gateway.fnhost.svc'] }] };
    const runtimePod: any = (deploymentFor(fn, settings) as any).spec.template.spec;
    const schedulePod: any = (cronJobFor(fn, settings) as any).spec.jobTemplate.spec.template.spec;
    for (const pod of [runtimePod, schedulePod]) expect(pod.hostAliases).to.deep.equal([{ ip: '10.96.0.20', hostnames: ['gateway.fnhost.svc'] }]);
    expect((deploymentFor(fn, testSettings()) as any).spec.template.spec).to.not.have.property('hostAliases');
  });
});
