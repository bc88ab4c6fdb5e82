import { ownedNames, runtimePodSelector } from '../names.ts';
import type { FunctionResource } from '@fnhost/core/function-resource.ts';
import type { KubeObject } from '../types.ts';
import { ownedMeta } from './common.ts';

export const SERVICE_PORT = 80;

export function serviceFor(fn: FunctionResource): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: ownedMeta(fn, ownedNames(fn.metadata.name).service),
    spec: {
      type: 'ClusterIP',
      selector: runtimePodSelector(fn),
      ports: [{ name: 'http', port: SERVICE_PORT, targetPort: 'http', protocol: 'TCP' }],
    },
  };
}

/** How the gateway reaches the function's pods inside the cluster. */
export function serviceUrl(fn: FunctionResource): string {
  return `http://${ownedNames(fn.metadata.name).service}.${fn.metadata.namespace}.svc:${SERVICE_PORT}`;
}
