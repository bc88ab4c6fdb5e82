import { MANAGED_BY } from '../names.ts';
import type { KubeObject, NetworkPolicySettings } from '../types.ts';
import { RUNTIME_PORT } from './deployment.ts';

// The NetworkPolicy of every function pod in one namespace (runtime and schedule
// pods alike: both carry app.kubernetes.io/managed-by=fnhost-operator). A function
// reaches the network only through the gateway's egress proxy, which applies the
// network policies (docs/egress.md); so its pods may open connections only to the
// gateway's pods (the egress proxy, the internal API for KV, /invoke for schedule
// pods), and only the gateway's pods may open connections to them. No DNS: the
// runtime resolves names through the proxy, and reaches the gateway by the
// addresses the operator writes into the pod's /etc/hosts (hostAliases).
//
// One object per namespace, owned by every Function there (ownerReferences
// without `controller`): the garbage collector removes it with the last of them.

export const FUNCTIONS_NETWORK_POLICY_NAME = 'fnhost-functions';

export function functionsNetworkPolicyFor(namespace: string, settings: NetworkPolicySettings): KubeObject {
  const gatewayPods = {
    namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': settings.gatewayNamespace } },
    podSelector: { matchLabels: { ...settings.gatewayPodLabels } },
  };
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: {
      name: FUNCTIONS_NETWORK_POLICY_NAME,
      namespace,
      labels: { 'app.kubernetes.io/name': 'fnhost-functions', 'app.kubernetes.io/managed-by': MANAGED_BY },
    },
    spec: {
      podSelector: { matchLabels: { 'app.kubernetes.io/managed-by': MANAGED_BY } },
      policyTypes: ['Ingress', 'Egress'],
      ingress: [{ from: [gatewayPods], ports: [{ port: RUNTIME_PORT, protocol: 'TCP' }] }],
      egress: [{ to: [gatewayPods], ports: settings.gatewayPorts.map((port) => ({ port, protocol: 'TCP' })) }],
    },
  };
}
