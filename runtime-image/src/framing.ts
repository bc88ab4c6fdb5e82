// What a handler may not choose about its response's framing, shared by the worker (res.* refuses
// at once, as Express throws for a bad status) and the main thread (which re-checks every message:
// a handler can reach the worker's port and post raw ones). The runtime frames every response
// itself: the gateway reuses its connection to the runtime for other calls, so a status or header
// that changes where a response ends would hang or corrupt them.

/**
 * Hop-by-hop headers (RFC 9110 §7.6.1) and Content-Length: dropped from what a handler sets, as a
 * proxy drops them. They describe one connection, and the runtime's connection is the platform's;
 * the runtime computes the length of a whole body itself and streams the rest chunked.
 */
const DROPPED = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer', 'content-length']);

/** A handler's response was refused; the message names what it set, for the execution log. */
export class ResponseFramingError extends TypeError {
  override name = 'ResponseFramingError';
}

/** Throws for a status that cannot end a call: an informational one (1xx) is an interim answer, 101 would switch the gateway's connection to another protocol. */
export function checkFinalStatus(code: number, what: string): void {
  if (code >= 100 && code <= 199) {
    throw new ResponseFramingError(`${what}: status ${code} is informational (1xx); a function's response needs a final status (200-999)`);
  }
}

/** Throws for a Transfer-Encoding the runtime cannot honour: dropping it would pass a coded body off as plain. */
export function checkTransferEncoding(value: string | string[], what: string): void {
  for (const one of Array.isArray(value) ? value : [value]) {
    for (const coding of String(one).split(',')) {
      const c = coding.trim().toLowerCase();
      if (c !== '' && c !== 'chunked' && c !== 'identity') {
        throw new ResponseFramingError(`${what}: Transfer-Encoding "${String(one).slice(0, 100)}" cannot be set; the runtime frames the response itself (use Content-Encoding for a compressed body)`);
      }
    }
  }
}

export function isDropped(lowerCaseName: string): boolean {
  return DROPPED.has(lowerCaseName);
}

/**
 * The headers of a flat [name, value, ...] list that reach the caller: hop-by-hop ones, the ones
 * a Connection header names, a handler's Content-Length and x-fnhost-* (the platform's own, which
 * the gateway reads from the runtime) left out. Throws ResponseFramingError for a refused one.
 */
export function framedHeaders(flat: readonly unknown[], what: string): string[] {
  const named = new Set<string>();
  for (let i = 0; i + 1 < flat.length; i += 2) {
    if (String(flat[i]).toLowerCase() === 'connection') for (const token of String(flat[i + 1]).split(',')) named.add(token.trim().toLowerCase());
  }
  const out: string[] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) {
    const name = String(flat[i]);
    const lc = name.toLowerCase();
    if (lc === 'transfer-encoding') checkTransferEncoding(String(flat[i + 1]), what);
    if (DROPPED.has(lc) || named.has(lc) || lc.startsWith('x-fnhost-')) continue;
    out.push(name, String(flat[i + 1]));
  }
  return out;
}

/** A handler's Content-Length when it is a plain number (kept on HEAD answers only), else undefined. */
export function declaredLength(flat: readonly unknown[]): string | undefined {
  for (let i = 0; i + 1 < flat.length; i += 2) {
    if (String(flat[i]).toLowerCase() === 'content-length') {
      const v = String(flat[i + 1]).trim();
      return /^\d{1,15}$/.test(v) ? v : undefined;
    }
  }
  return undefined;
}
