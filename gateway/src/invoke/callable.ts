import type { IncomingMessage, ServerResponse } from 'node:http';
import { NotFoundError, type FunctionRecord } from '@fnhost/core';
import { drainRequest } from './bodies.ts';
import { FunctionInactiveError, writeError } from './errors.ts';

/**
 * The function a public call (/invoke, /async-invoke) names, when it may be called: an unknown
 * one is answered 404 and an inactive one 403, their bodies drained unread. undefined: answered.
 */
export function callableFunction(fn: FunctionRecord | undefined, functionId: string, req: IncomingMessage, res: ServerResponse): FunctionRecord | undefined {
  if (fn === undefined) {
    drainRequest(req);
    writeError(res, new NotFoundError(`function "${functionId.slice(0, 100)}" not found`));
    return undefined;
  }
  if (!fn.active) {
    drainRequest(req);
    writeError(res, new FunctionInactiveError(fn.name));
    return undefined;
  }
  return fn;
}
