import { FnhostError } from '@fnhost/core';

// Defence in depth behind the runtime's own framing rules (runtime-image/src/framing.ts): what the
// gateway does with an answer from a runtime that no res.* method can produce, a runtime whose
// code was changed or a handler that wrote raw bytes. The call is refused at once with a 502; the
// runtime is not recycled for it (its other calls are fine: only this connection is dropped).

/** The runtime's answer cannot be passed on; the message names what it sent, for the execution log. */
export class InvalidResponseError extends FnhostError {
  constructor(reason: string, options?: { cause?: unknown }) {
    // Not exposed: the caller gets a generic body, the record the reason.
    super('invalid_response', 502, `the function's response was refused: ${reason}`, options);
  }
}

/**
 * A framing the gateway cannot read to its end: a Transfer-Encoding other than chunked makes
 * the body run to the connection's close, which a kept-alive runtime never does (a 504 after
 * the time limit, before this check). Undefined when the answer can be passed on.
 */
export function unreadableFraming(headers: Record<string, string | string[] | undefined>): string | undefined {
  const te = headers['transfer-encoding'];
  if (te === undefined) return undefined;
  const value = Array.isArray(te) ? te.join(', ') : te;
  return value.trim().toLowerCase() === 'chunked' ? undefined : `it was sent with Transfer-Encoding: ${value.slice(0, 100)}`;
}

const UNASKED_UPGRADE = 'it answered with status 101 (Switching Protocols) to a call that asked for no upgrade';

/**
 * undici failed on an answer it received rather than on the connection: a 101 to a request that
 * asked for no upgrade (undici 8.12: an internal assertion without an Upgrade header, a SocketError
 * "bad upgrade" with one), an interim status undici cannot take ("bad response"), or a response
 * llhttp cannot parse. The runtime answered; it did not crash.
 */
export function malformedAnswer(err: unknown): string | undefined {
  const e = err as { code?: unknown; message?: unknown; name?: unknown } | null;
  if (e === null || typeof e !== 'object') return undefined;
  if (e.code === 'ERR_ASSERTION' && typeof e.message === 'string' && e.message.includes('upgrade')) return UNASKED_UPGRADE;
  if (e.code === 'UND_ERR_SOCKET' && e.message === 'bad upgrade') return UNASKED_UPGRADE;
  if (e.code === 'UND_ERR_SOCKET' && e.message === 'bad response') return 'it answered with an interim status (1xx) undici cannot take';
  if (e.name === 'HTTPParserError' || (typeof e.code === 'string' && e.code.startsWith('HPE_'))) return `its HTTP answer could not be parsed (${String(e.message).slice(0, 200)})`;
  return undefined;
}
