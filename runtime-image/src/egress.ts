// Outbound connections of the handler through the gateway's egress proxy (docs/egress.md):
// with FNHOST_EGRESS_PROXY set, this worker's TCP connections (node:net, and so node:http,
// fetch and most database drivers), TLS connections (tls.connect over a tunnel, TLS end to
// end) and DNS questions (node:dns) go to the proxy, which applies the network policies. UDP
// (node:dgram) is refused: the proxy carries TCP only.
//
// This is a convenience for ordinary clients, not the containment: the sandbox's network
// namespace has no route out but the proxy's socket, so code that gets around these patches
// (a child process, a native addon) finds nothing to connect to.

export class PolicyBlockedError extends Error {
  override name = 'PolicyBlockedError';
  readonly code = 'ERR_FNHOST_POLICY_BLOCKED';
  readonly scope: string;
  readonly rule: string;
  constructor(message: string, scope: string, rule: string) {
    super(message);
    this.scope = scope;
    this.rule = rule;
  }
}

/** The proxy refused or failed otherwise; `code` is the proxy's (an errno such as ECONNREFUSED when the far end refused). */
export class EgressError extends Error {
  override name = 'EgressError';
  readonly code: string;
  constructor(message: string, code: string) {
    super(message);
    this.code = code;
  }
}

export class UdpNotSupportedError extends Error {
  override name = 'UdpNotSupportedError';
  readonly code = 'ERR_FNHOST_UDP_NOT_SUPPORTED';
}

export type ProxyEndpoint = { path: string } | { host: string; port: number };

export interface EgressSettings {
  endpoint: ProxyEndpoint;
  credential: string;
  /** Destinations reached without the proxy: the runtime's own internal API. */
  direct: Array<{ host: string; port: number }>;
}

/** FNHOST_EGRESS_PROXY: `unix:/path/to.sock` or `http://host:port`. */
export function parseEgressProxy(raw: string): ProxyEndpoint {
  if (raw.startsWith('unix:')) {
    const path = raw.slice(5);
    if (!path.startsWith('/')) throw new TypeError(`FNHOST_EGRESS_PROXY="${raw}": the socket path must be absolute (unix:/path/to.sock)`);
    return { path };
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new TypeError(`FNHOST_EGRESS_PROXY="${raw}" must be unix:/path/to.sock or http://host:port`);
  }
  if (url.protocol !== 'http:' || url.port === '' || url.pathname !== '/') throw new TypeError(`FNHOST_EGRESS_PROXY="${raw}" must be unix:/path/to.sock or http://host:port`);
  return { host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port) };
}

/** The origin's host and port, so the runtime's internal calls are not sent through the proxy. */
export function directOf(url: string | undefined): Array<{ host: string; port: number }> {
  // A unix: URL (the sandbox's internal API) is a socket path, which is never tunnelled.
  if (url === undefined || !/^https?:/.test(url)) return [];
  const u = new URL(url);
  return [{ host: u.hostname.replace(/^\[|\]$/g, '').toLowerCase(), port: Number(u.port || (u.protocol === 'https:' ? 443 : 80)) }];
}

const MAX_ANSWER_HEAD_BYTES = 16 * 1024;

/**
 * The system resolver (getaddrinfo: /etc/hosts, then DNS), taken before the patch below
 * replaces dns.lookup. The proxy and the internal API are reached with it: in a cluster
 * their names are in the pod's /etc/hosts and the pod has no DNS, and asking the proxy
 * for its own address would go round in a circle.
 */
const systemLookup = process.getBuiltinModule('node:dns').lookup;

/** connect() arguments for a destination reached without the proxy, resolved by the system resolver. */
export function withSystemLookup(args: unknown[]): unknown[] {
  // net.connect passes its already-normalised [options, callback] as one array: its options
  // object is net's own copy, so it is given the lookup in place.
  if (Array.isArray(args[0])) {
    const options = args[0][0] as Record<string, unknown> | undefined;
    if (options !== null && typeof options === 'object' && !options.path && options.lookup === undefined) options.lookup = systemLookup;
    return args;
  }
  const [first, ...rest] = args;
  if (first !== null && typeof first === 'object') {
    const options = first as Record<string, unknown>;
    return options.path || options.lookup !== undefined ? args : [{ ...options, lookup: systemLookup }, ...rest];
  }
  if (typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first))) {
    const [host, ...tail] = typeof rest[0] === 'string' ? [rest[0], ...rest.slice(1)] : [undefined, ...rest];
    return [{ port: Number(first), ...(host === undefined ? {} : { host }), lookup: systemLookup }, ...tail];
  }
  return args;
}

interface Target {
  host: string;
  port: number;
}

/** The CONNECT request for a target; refuses a host that could not be a name or an address. */
export function connectRequest(target: Target, credential: string): string {
  const { isIP } = process.getBuiltinModule('node:net');
  if (!/^[A-Za-z0-9._:%-]+$/.test(target.host)) throw new TypeError(`cannot connect to ${JSON.stringify(target.host.slice(0, 100))}: not a host name or an IP address`);
  const authority = isIP(target.host) === 6 ? `[${target.host}]:${target.port}` : `${target.host}:${target.port}`;
  return `CONNECT ${authority} HTTP/1.1\r\nhost: ${authority}\r\nproxy-authorization: Bearer ${credential}\r\n\r\n`;
}

/** The error a refused CONNECT or DNS question becomes, from the proxy's x-fnhost-* headers. */
export function refusalError(status: number, header: (name: string) => string | undefined): Error {
  const message = decodeURIComponent(header('x-fnhost-error') ?? `the egress proxy answered ${status}`);
  const code = header('x-fnhost-error-code') ?? `HTTP_${status}`;
  if (status === 403 && header('x-fnhost-policy-rule') !== undefined) {
    return new PolicyBlockedError(message, header('x-fnhost-policy-scope') ?? 'global', decodeURIComponent(header('x-fnhost-policy-rule')!));
  }
  return new EgressError(message, code);
}

/** Parses the proxy's answer head (`HTTP/1.1 200 ...` and headers). */
export function parseAnswerHead(head: string): { status: number; header: (name: string) => string | undefined } {
  const lines = head.split('\r\n');
  const match = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? '');
  const headers = new Map<string, string>();
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  return { status: match === null ? 0 : Number(match[1]), header: (name) => headers.get(name) };
}

type Socket = import('node:net').Socket;
type ConnectFn = (this: Socket, ...args: unknown[]) => Socket;

/** Which TCP target a Socket#connect call names, or undefined for an IPC path or arguments net itself must refuse. */
export function connectTarget(args: unknown[]): { target: Target; callback: (() => void) | undefined } | undefined {
  // net.connect passes its already-normalised [options, callback] as one array.
  const list = Array.isArray(args[0]) ? (args[0] as unknown[]) : args;
  const [first, second, third] = list;
  let host: unknown;
  let port: unknown;
  let callback: unknown;
  if (first !== null && typeof first === 'object') {
    const o = first as { path?: unknown; host?: unknown; port?: unknown };
    // net connects to a path whenever it is truthy (http passes path: null for TCP).
    if (o.path) return undefined;
    host = o.host;
    port = o.port;
    callback = second;
  } else {
    if (typeof first === 'string' && !/^\d+$/.test(first)) return undefined; // a path
    port = first;
    if (typeof second === 'string') {
      host = second;
      callback = third;
    } else callback = second;
  }
  const n = typeof port === 'string' && /^\d+$/.test(port) ? Number(port) : port;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > 65535) return undefined;
  const name = typeof host === 'string' && host !== '' ? host : 'localhost';
  return { target: { host: name.replace(/^\[|\]$/g, ''), port: n }, callback: typeof callback === 'function' ? (callback as () => void) : undefined };
}

/**
 * Makes `socket` a tunnel: it connects to the proxy, sends CONNECT (pipelined: what the caller
 * writes meanwhile follows it, and the proxy forwards it once the far end is connected), and
 * strips the proxy's answer from what the caller reads. A refusal destroys the socket with an
 * error that names the rule.
 */
function tunnel(socket: Socket, target: Target, settings: EgressSettings, rawConnect: ConnectFn): void {
  const request = connectRequest(target, settings.credential);
  const ownPush = socket.push;
  let head = Buffer.alloc(0);
  const restore = () => {
    delete (socket as { push?: unknown }).push;
  };
  (socket as { push: typeof ownPush }).push = function push(chunk: unknown, encoding?: BufferEncoding): boolean {
    if (chunk === null) {
      restore();
      socket.destroy(new EgressError(`connection to ${target.host}:${target.port}: the egress proxy closed the connection before answering`, 'ECONNRESET'));
      return false;
    }
    head = Buffer.concat([head, chunk as Buffer]);
    const end = head.indexOf('\r\n\r\n');
    if (end < 0) {
      if (head.length > MAX_ANSWER_HEAD_BYTES) {
        restore();
        socket.destroy(new EgressError(`connection to ${target.host}:${target.port}: the egress proxy's answer is not HTTP`, 'EPROTO'));
      }
      return true;
    }
    restore();
    const answer = parseAnswerHead(head.subarray(0, end).toString('latin1'));
    if (answer.status !== 200) {
      socket.destroy(refusalError(answer.status, answer.header));
      return false;
    }
    const rest = head.subarray(end + 4);
    return rest.length === 0 ? true : ownPush.call(socket, rest, encoding);
  };
  rawConnect.call(socket, 'path' in settings.endpoint ? { path: settings.endpoint.path } : { host: settings.endpoint.host, port: settings.endpoint.port, lookup: systemLookup });
  socket.write(request);
}

export interface InstalledEgress {
  /** fetch whose failures caused by a refusal reject with that refusal (PolicyBlockedError names the rule). */
  fetch: typeof fetch;
}

/** Routes this thread's outbound TCP, TLS and DNS through the egress proxy, and refuses UDP. */
export function installEgress(settings: EgressSettings, rawFetch: typeof fetch): InstalledEgress {
  const net = process.getBuiltinModule('node:net');
  const tls = process.getBuiltinModule('node:tls');
  const direct = (t: Target) => settings.direct.some((d) => d.port === t.port && d.host === t.host.toLowerCase()) || isProxy(settings.endpoint, t);

  const rawConnect = net.Socket.prototype.connect as ConnectFn;
  net.Socket.prototype.connect = function connect(this: Socket, ...args: unknown[]): Socket {
    const parsed = connectTarget(args);
    if (parsed === undefined) return rawConnect.apply(this, args);
    if (direct(parsed.target)) return rawConnect.apply(this, withSystemLookup(args));
    if (this instanceof tls.TLSSocket) throw new EgressError('connect a TLS socket with tls.connect(): a TLSSocket cannot be tunnelled once created', 'ERR_FNHOST_EGRESS');
    if (parsed.callback !== undefined) this.once('connect', parsed.callback);
    tunnel(this, parsed.target, settings, rawConnect);
    return this;
  } as typeof net.Socket.prototype.connect;

  const rawTlsConnect = tls.connect;
  tls.connect = function connect(...args: unknown[]) {
    const { options, callback } = tlsArgs(args);
    const port = Number(options.port ?? 443);
    const host = typeof options.host === 'string' && options.host !== '' ? options.host : 'localhost';
    if (options.socket != null || options.path || direct({ host, port })) return (rawTlsConnect as (...a: unknown[]) => unknown).apply(tls, args);
    // A socket with no handle yet: TLS reads and writes it through JavaScript, so it sees the
    // tunnel's bytes only (the proxy's answer is stripped below TLS).
    const carrier = new net.Socket();
    const secure = (rawTlsConnect as (o: object, cb?: () => void) => import('node:tls').TLSSocket).call(tls, { ...options, host, port, socket: carrier }, callback);
    carrier.once('error', (err) => secure.destroy(err));
    carrier.connect({ host, port });
    return secure;
  } as typeof tls.connect;

  installDns(settings);
  refuseUdp();
  // ES module imports of node:net, node:tls, node:dns and node:dgram see the patched functions too.
  process.getBuiltinModule('node:module').syncBuiltinESMExports();

  return {
    fetch: async function fetch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
      try {
        return await rawFetch(input, init);
      } catch (err) {
        let failure = err;
        // A pooled connection the proxy ended (a policy change, the idle timeout) can be picked
        // just before its end is seen: a request without a body that could be repeated is sent
        // once more, on a new connection, whose CONNECT then gets the proxy's real answer.
        if (causeCode(err) === 'UND_ERR_SOCKET' && repeatable(input, init)) {
          try {
            return await rawFetch(input, init);
          } catch (again) {
            failure = again;
          }
        }
        const cause = (failure as { cause?: unknown }).cause;
        if (cause instanceof PolicyBlockedError || cause instanceof EgressError) throw cause;
        throw failure;
      }
    } as typeof fetch,
  };
}

function causeCode(err: unknown): unknown {
  return ((err as { cause?: { code?: unknown } }).cause ?? {}).code;
}

/** An idempotent method (RFC 9110 §9.2.2) and no body: sending it again cannot do anything twice. */
export function repeatable(input: string | URL | Request, init?: RequestInit): boolean {
  const request = input instanceof Request ? input : undefined;
  const method = (init?.method ?? request?.method ?? 'GET').toUpperCase();
  const hasBody = init?.body != null || (init?.body === undefined && request?.body != null);
  return !hasBody && ['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE'].includes(method);
}

function isProxy(endpoint: ProxyEndpoint, t: Target): boolean {
  return 'host' in endpoint && endpoint.port === t.port && endpoint.host.toLowerCase() === t.host.toLowerCase();
}

/** tls.connect(options[, cb]) or tls.connect(port[, host][, options][, cb]). */
export function tlsArgs(args: unknown[]): { options: Record<string, unknown>; callback: (() => void) | undefined } {
  let options: Record<string, unknown> = {};
  let callback: (() => void) | undefined;
  let port: unknown;
  let host: unknown;
  for (const a of args) {
    if (typeof a === 'function') callback = a as () => void;
    else if (a !== null && typeof a === 'object') options = a as Record<string, unknown>;
    else if (port === undefined && (typeof a === 'number' || typeof a === 'string')) port = a;
    else if (host === undefined && typeof a === 'string') host = a;
  }
  const merged = { ...options };
  if (port !== undefined) merged.port = port;
  if (host !== undefined) merged.host = host;
  return { options: merged, callback };
}

// ---- DNS ----

/** The record types the proxy answers, by node:dns method. */
const RESOLVE_TYPES: Record<string, string> = {
  resolve4: 'A',
  resolve6: 'AAAA',
  resolveCname: 'CNAME',
  resolveMx: 'MX',
  resolveNs: 'NS',
  resolveSrv: 'SRV',
  resolveTxt: 'TXT',
};
const NOT_ANSWERED = ['resolveAny', 'resolveCaa', 'resolveNaptr', 'resolvePtr', 'resolveSoa', 'resolveTlsa', 'reverse', 'lookupService'];

function dnsError(syscall: string, name: string, err: Error): Error {
  if (err instanceof PolicyBlockedError) return err;
  const code = (err as { code?: string }).code ?? 'ESERVFAIL';
  return Object.assign(new Error(`${syscall} ${code} ${name}`), { code, syscall, hostname: name, cause: err });
}

function installDns(settings: EgressSettings): void {
  const dns = process.getBuiltinModule('node:dns');
  const { isIP } = process.getBuiltinModule('node:net');

  const ask = (name: string, type: string) =>
    new Promise<unknown[]>((resolve, reject) => {
      const http = process.getBuiltinModule('node:http');
      const path = `/dns?name=${encodeURIComponent(name)}&type=${type}`;
      const where = 'path' in settings.endpoint ? { socketPath: settings.endpoint.path } : { host: settings.endpoint.host, port: settings.endpoint.port, lookup: systemLookup };
      const req = http.request({ ...where, path, headers: { 'proxy-authorization': `Bearer ${settings.credential}` } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          if (res.statusCode !== 200) {
            return reject(refusalError(res.statusCode ?? 0, (h) => res.headers[h] as string | undefined));
          }
          try {
            resolve((JSON.parse(Buffer.concat(chunks).toString('utf8')) as { records: unknown[] }).records);
          } catch (err) {
            reject(err);
          }
        });
        res.on('error', reject);
      });
      req.on('error', (err) => reject(new EgressError(`resolving ${name}: the egress proxy did not answer (${err.message})`, 'ECONNREFUSED')));
      req.end();
    });

  const lookupAll = async (name: string, options: { family?: number | string; all?: boolean }): Promise<Array<{ address: string; family: number }>> => {
    const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : Number(options.family ?? 0);
    const ip = isIP(name);
    if (ip !== 0) return [{ address: name, family: ip }];
    let records: Array<{ address: string; family: number }>;
    try {
      records = (await ask(name, 'LOOKUP')) as Array<{ address: string; family: number }>;
    } catch (err) {
      throw dnsError('getaddrinfo', name, err as Error);
    }
    const wanted = family === 4 || family === 6 ? records.filter((r) => r.family === family) : records;
    if (wanted.length === 0) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND', syscall: 'getaddrinfo', hostname: name });
    return wanted;
  };
  const lookupOptions = (options: unknown) => (typeof options === 'number' ? { family: options } : ((options ?? {}) as { family?: number; all?: boolean }));

  const callbackLookup = function lookup(name: string, options: unknown, callback?: (...a: unknown[]) => void) {
    if (typeof options === 'function') {
      callback = options as (...a: unknown[]) => void;
      options = undefined;
    }
    const o = lookupOptions(options);
    lookupAll(name, o).then(
      (records) => (o.all ? callback!(null, records) : callback!(null, records[0]!.address, records[0]!.family)),
      (err: unknown) => callback!(err),
    );
    return {};
  };
  const promiseLookup = async (name: string, options?: unknown) => {
    const o = lookupOptions(options);
    const records = await lookupAll(name, o);
    return o.all ? records : records[0];
  };

  const resolveAs = async (name: string, type: string) => {
    try {
      return await ask(name, type);
    } catch (err) {
      throw dnsError(`query${type === 'A' ? 'A' : type.charAt(0) + type.slice(1).toLowerCase()}`, name, err as Error);
    }
  };
  const resolveType = (rrtype: unknown) => {
    const type = typeof rrtype === 'string' ? rrtype.toUpperCase() : 'A';
    if (!Object.values(RESOLVE_TYPES).includes(type)) throw new EgressError(`dns.resolve(name, ${JSON.stringify(rrtype)}): the egress proxy answers ${Object.values(RESOLVE_TYPES).join(', ')} only`, 'ENOTSUP');
    return type;
  };
  const notAnswered = (method: string) => () => {
    throw new EgressError(`dns.${method} is not available to functions: DNS goes through the egress proxy, which answers lookup and ${Object.values(RESOLVE_TYPES).join(', ')}`, 'ENOTSUP');
  };

  const callbackStyle = (run: (...a: unknown[]) => Promise<unknown>) =>
    function (this: unknown, ...args: unknown[]) {
      const callback = args.pop() as (...a: unknown[]) => void;
      run(...args).then((v) => callback(null, v), (err: unknown) => callback(err));
    };

  const targets = [
    { api: dns as unknown as Record<string, unknown>, promises: false },
    { api: dns.Resolver.prototype as unknown as Record<string, unknown>, promises: false },
    { api: dns.promises as unknown as Record<string, unknown>, promises: true },
    { api: dns.promises.Resolver.prototype as unknown as Record<string, unknown>, promises: true },
  ];
  for (const { api, promises } of targets) {
    for (const [method, type] of Object.entries(RESOLVE_TYPES)) {
      const run = (name: unknown) => resolveAs(String(name), type);
      api[method] = promises ? run : callbackStyle(run);
    }
    const resolve = (name: unknown, rrtype?: unknown) => resolveAs(String(name), resolveType(rrtype));
    api.resolve = promises ? resolve : callbackStyle(resolve);
    for (const method of NOT_ANSWERED) if (method in api) api[method] = notAnswered(method);
  }
  (dns as unknown as Record<string, unknown>).lookup = callbackLookup;
  (dns.promises as unknown as Record<string, unknown>).lookup = promiseLookup;
}

// ---- UDP ----

function refuseUdp(): void {
  const dgram = process.getBuiltinModule('node:dgram');
  const refuse = () => {
    throw new UdpNotSupportedError('UDP is not supported: a function reaches the network only through the egress proxy, which carries TCP (docs/runtime.md)');
  };
  (dgram as { createSocket: unknown }).createSocket = refuse;
  for (const method of ['bind', 'connect', 'send'] as const) (dgram.Socket.prototype as unknown as Record<string, unknown>)[method] = refuse;
}
