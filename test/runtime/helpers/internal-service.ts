import { createServer, type Server } from 'node:http';

// A stand-in for the gateway's internal API (docs/internal-protocol.md "KV" and "Network
// policy check"), in memory, over real HTTP on 127.0.0.1:port 0. Tests read and change its
// state directly (kv map, denied hosts) and see every request it got.

export interface KvEntry {
  json: string;
  expiresAt: number | null;
}

export interface InternalService {
  url: string;
  token: string;
  kv: Map<string, KvEntry>;
  /** host or address → rule pattern that denies it (scope "global"). */
  deny: Map<string, string>;
  requests: string[];
  close(): Promise<void>;
}

export async function startInternalService(token = 'rt-token-0123456789abcdef'): Promise<InternalService> {
  const kv = new Map<string, KvEntry>();
  const deny = new Map<string, string>();
  const requests: string[] = [];
  const live = (key: string): KvEntry | undefined => {
    const e = kv.get(key);
    if (e === undefined) return undefined;
    if (e.expiresAt !== null && e.expiresAt <= Date.now()) {
      kv.delete(key);
      return undefined;
    }
    return e;
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url!, 'http://x');
      requests.push(`${req.method} ${url.pathname}${url.search}`);
      const send = (status: number, body?: unknown) => {
        const text = body === undefined ? '' : JSON.stringify(body);
        res.writeHead(status, body === undefined ? {} : { 'content-type': 'application/json' }).end(text);
      };
      if (req.headers.authorization !== `Bearer ${token}`) return send(401, { error: 'unauthorized', message: 'bad runtime token' });
      if (url.pathname === '/internal/v1/policy/check') {
        const host = url.searchParams.get('host') ?? '';
        const rule = deny.get(host);
        return send(200, rule === undefined ? { allowed: true, rule: 'default', scope: 'global' } : { allowed: false, rule, scope: 'global' });
      }
      if (url.pathname === '/internal/v1/kv' && req.method === 'GET') {
        const prefix = url.searchParams.get('prefix') ?? '';
        return send(200, { keys: [...kv.keys()].filter((k) => k.startsWith(prefix) && live(k) !== undefined).sort() });
      }
      const m = /^\/internal\/v1\/kv\/(.+)$/.exec(url.pathname);
      if (m === null) return send(404, { error: 'not_found', message: `no route ${url.pathname}` });
      const key = decodeURIComponent(m[1]!);
      switch (req.method) {
        case 'GET': {
          const e = live(key);
          return e === undefined ? send(404, { error: 'not_found', message: `kv key "${key}" not found` }) : send(200, { value: JSON.parse(e.json) });
        }
        case 'HEAD':
          return send(live(key) === undefined ? 404 : 200);
        case 'PUT': {
          const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { value: unknown; ttlSeconds?: number };
          kv.set(key, { json: JSON.stringify(body.value), expiresAt: body.ttlSeconds === undefined ? null : Date.now() + body.ttlSeconds * 1000 });
          return send(204);
        }
        case 'DELETE': {
          const had = live(key) !== undefined;
          kv.delete(key);
          return send(200, { deleted: had });
        }
        default:
          return send(405, { error: 'method_not_allowed', message: req.method });
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${addr.port}`,
    token,
    kv,
    deny,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
