import type { IncomingHttpHeaders } from 'node:http';
import { decodeURIComponentSafe } from './headers.ts';

// The stack of an error the handler threw, as the runtime sends it in x-fnhost-error-stack
// (docs/internal-protocol.md "An invocation"): the frames in the function's own files, mapped to
// the user's sources. It goes into the record's error_stack, never to the caller (every
// x-fnhost-* header is dropped from the caller's response).

/** The decoded stack of a runtime's answer, or undefined when it sent none. */
export function errorStackOf(headers: IncomingHttpHeaders): string | undefined {
  const raw = headers['x-fnhost-error-stack'];
  if (typeof raw !== 'string' || raw === '') return undefined;
  return decodeURIComponentSafe(raw);
}
