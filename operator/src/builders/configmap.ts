import { ownedNames } from '../names.ts';
import type { FunctionResource } from '@fnhost/core/function-resource.ts';
import type { KubeObject } from '../types.ts';
import { ownedMeta } from './common.ts';

/**
 * `.js` with no package.json around it: Node 24 detects ESM syntax itself, so
 * both `export default` and `module.exports` modules load, as on one machine.
 */
export const CODE_FILE_NAME = 'index.js';

/**
 * The code's ConfigMap, which the pods mount. Referenced code (spec.codeRef) is fetched by the pods
 * from the gateway instead: the ConfigMap is then empty (one apply path, and an earlier inline
 * version's copy is removed by the same server-side apply).
 */
export function configMapFor(fn: FunctionResource): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: ownedMeta(fn, ownedNames(fn.metadata.name).configMap),
    data: fn.spec.codeRef == null ? { [CODE_FILE_NAME]: fn.spec.code ?? '' } : {},
  };
}
