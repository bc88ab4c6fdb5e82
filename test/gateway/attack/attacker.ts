import { request } from 'node:http';

// What attack tests share about the attacking function: the call that starts its attack (from
// 127.0.0.1, the neighbour being 127.0.0.2), and the source of a function that finds its runtime
// token as an attacker would.

/**
 * Source text of `runtimeToken(functionId)` (with its imports), to paste at a handler's top: the runtime keeps its token
 * in its memory for its own calls (since issue 28 it is in no environment), and the handler shares
 * that address space, so it scans its own process's writable memory (/proc/self/mem) for
 * `<function id>.<43 base64url characters>`. A bound must hold for a function that has its token,
 * however it got it.
 */
export const TOKEN_IN_MEMORY = `
import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
let found;
/** The function's runtime token, found once in this process's memory (undefined: not found). */
function runtimeToken(functionId) {
  found ??= tokenInMemory(functionId);
  return found;
}
function tokenInMemory(functionId) {
  const pattern = new RegExp(functionId.replace(/[^0-9a-f]/g, '.') + '\\\\.[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])');
  const fd = openSync('/proc/self/mem', 'r');
  try {
    for (const line of readFileSync('/proc/self/maps', 'utf8').split('\\n')) {
      const m = /^([0-9a-f]+)-([0-9a-f]+) rw/.exec(line);
      if (m === null) continue;
      const start = parseInt(m[1], 16), end = parseInt(m[2], 16);
      const chunk = Buffer.allocUnsafe(4 * 1024 * 1024);
      for (let at = start; at < end; at += chunk.length - 256) {
        let n = 0;
        try { n = readSync(fd, chunk, 0, Math.min(chunk.length, end - at), at); } catch { break; }
        const hit = pattern.exec(chunk.toString('latin1', 0, n));
        if (hit !== null) return hit[0];
      }
    }
  } finally {
    closeSync(fd);
  }
  return undefined;
}`;

/** Calls the attacking function from 127.0.0.1 (`path` after its id): its status and whole body, or status 0 and the error. */
export function attackCall(gatewayUrl: string, functionId: string, path = '/'): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    const req = request(`${gatewayUrl}/invoke/${functionId}${path}`, { localAddress: '127.0.0.1', timeout: 90_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', (err) => resolve({ status: 0, body: err.message }));
    req.end();
  });
}
