import { ownedNames } from '../names.ts';
import type { FunctionResource } from '@fnhost/core/function-resource.ts';
import type { KubeObject } from '../types.ts';
import { ownedMeta } from './common.ts';

/**
 * `.js` with no package.json around it: Node 24 detects ESM syntax itself, so
 * both `export default` and `module.exports` modules load, as on one machine.
 */
export const CODE_FILE_NAME = 'index.js';

export function configMapFor(fn: FunctionResource): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: ownedMeta(fn, ownedNames(fn.metadata.name).configMap),
    data: { [CODE_FILE_NAME]: fn.spec.code },
  };
}
