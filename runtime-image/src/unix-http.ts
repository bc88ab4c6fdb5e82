// The runtime's calls to the gateway's internal API when FNHOST_GATEWAY_URL is `unix:/path`: in
// a sandbox the runtime has no network, and the gateway's socket is bind-mounted into it.
// fetch cannot dial a Unix socket without undici's Agent (the runtime has no dependencies), so
// node:http does it and the answer is handed back as a fetch Response.

export const UNIX_PREFIX = 'unix:';

/** One request over the Unix socket; the answer is read whole (internal answers are small and bounded by the gateway). */
export function unixFetch(socketPath: string, path: string, init: { method: string; headers: Record<string, string>; body?: string }): Promise<Response> {
  const { request } = process.getBuiltinModule('node:http');
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { ...init.headers, host: 'gateway' };
    if (init.body !== undefined) headers['content-length'] = Buffer.byteLength(init.body);
    const req = request({ socketPath, path, method: init.method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const out = new Headers();
        for (const [name, value] of Object.entries(res.headers)) {
          if (value === undefined) continue;
          for (const v of Array.isArray(value) ? value : [value]) out.append(name, v);
        }
        const status = res.statusCode ?? 502;
        const body = status === 204 || status === 304 ? null : Buffer.concat(chunks);
        resolve(new Response(body, { status, headers: out }));
      });
    });
    req.on('error', reject);
    req.end(init.body);
  });
}
