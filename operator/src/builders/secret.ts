import { ownedNames } from '../names.ts';
import { deriveToken } from '../tokens.ts';
import type { FunctionResource } from '@fnhost/core/function-resource.ts';
import type { KubeObject, Settings } from '../types.ts';
import { effectiveSpec, ownedMeta } from './common.ts';

export const RUNTIME_TOKEN_KEY = 'runtime-token';
export const SCHEDULE_TOKEN_KEY = 'schedule-token';

/** The function's credentials: the runtime's (KV, policy) and the scheduled trigger's. */
export function secretFor(fn: FunctionResource, settings: Settings): KubeObject {
  const { functionId } = effectiveSpec(fn);
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: ownedMeta(fn, ownedNames(fn.metadata.name).secret),
    type: 'Opaque',
    data: {
      [RUNTIME_TOKEN_KEY]: b64(deriveToken(settings.tokenKey, 'runtime', functionId)),
      [SCHEDULE_TOKEN_KEY]: b64(deriveToken(settings.tokenKey, 'schedule', functionId)),
    },
  };
}
