import { chmod, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, createServer as createNetServer, isIP, type AddressInfo, type Server as NetServer, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { ConnectionGuard } from '../internal/connection-bound.ts';
import type { RuntimeTokenVerifier } from '../internal/tokens.ts';
import type { Logger } from '../log.ts';
import { MachineAddresses } from '../policy/machine.ts';
import type { PlatformRanges } from '../policy/match.ts';
import { deniedAddress, denialMessage, decisionOf, denialOf, explain, policiesFor, type Denial, type Explanation, type PolicySource } from './decision.ts';
import { checkTarget } from './checked.ts';
import { DNS_TYPES, systemResolver, type DnsType, type EgressResolver } from './resolver.ts';
import { TargetError, parseConnectTarget, proxyCredential, validHostName, type ConnectTarget } from './target.ts';

// The egress proxy (docs/egress.md): every outbound connection of a function goes
// through it. It speaks HTTP CONNECT (RFC 9110 §9.3.6), so ordinary clients and
// tools can use it, on a Unix socket that a sandbox gets bind-mounted (one
// machine) and optionally on TCP (pods in cluster mode). A runtime authenticates
// with its own credential in Proxy-Authorization; the proxy resolves the name
// itself, asks the network policies about the name and every address, connects
// to the address it checked (never resolving twice) and then only copies bytes,
// so TLS stays end to end. GET /dns answers a function's DNS questions under
// the same policy.

export const EGRESS_DEFAULTS = {
  maxTunnelsPerFunction: 64,
  idleTimeoutMs: 300_000,
  connectTimeoutMs: 10_000,
  /** Request line and headers of a CONNECT or a DNS question. */
  maxHeaderBytes: 8 * 1024,
};

export interface EgressProxyOptions {
  tokens: RuntimeTokenVerifier;
  /** Whether a function still exists (a deleted function's runtime is refused like a wrong token). */
  knows: (functionId: string) => boolean;
  policies: PolicySource;
  /** The platform's own address ranges, refused unless a policy names them (FNHOST_EGRESS_PLATFORM_CIDRS). */
  platform?: PlatformRanges;
  /** The machine's own addresses, kept current (default: this machine's interfaces, with `platform`). */
  machine?: MachineAddresses;
  /** Ports of the platform's own listeners on this machine, never reachable through the proxy (read at each connection: they may listen after the proxy). */
  listenerPorts?: () => readonly number[];
  logger: Logger;
  resolver?: EgressResolver;
  maxTunnelsPerFunction?: number;
  idleTimeoutMs?: number;
  connectTimeoutMs?: number;
  /**
   * The bound on open connections per function (internal/connection-bound.ts): TCP connections
   * are admitted per source address at accept, and every connection counts for the function its
   * credential names from its first request. Unset: no bound (tests of the proxy alone).
   */
  guard?: ConnectionGuard;
}

interface Tunnel {
  host: string;
  port: number;
  address: string;
  end(): void;
  /** Chunks copied either way (the idle sweep compares it between sweeps). */
  moved: number;
  /** `moved` at the last sweep, and how many sweeps in a row saw no change. */
  movedAtSweep: number;
  quietSweeps: number;
}

/**
 * Idle tunnels are found by one sweep every IDLE_SWEEPS-th of the idle timeout, not by a timer per
 * socket re-armed on every chunk (two timer re-arms per request and answer on a kept-alive tunnel,
 * measurable next to the copy itself): a tunnel with no chunk either way for IDLE_SWEEPS + 1
 * sweeps in a row, between the idle timeout and 1.25 times it, is closed.
 */
const IDLE_SWEEPS = 4;

/** Copies `from` to `to` with backpressure, counting chunks for the idle sweep; `from`'s end half-closes `to`. */
function forward(from: Socket, to: Socket, tunnel: Tunnel): void {
  from.on('data', (chunk: Buffer) => {
    tunnel.moved++;
    if (!to.write(chunk)) from.pause();
  });
  to.on('drain', () => from.resume());
  from.once('end', () => to.end());
}

/** An answer that ends a request before any connection: status, machine-readable code, message. */
class EgressRefusal extends Error {
  override name = 'EgressRefusal';
  readonly status: number;
  readonly code: string;
  readonly denial: Denial | undefined;
  constructor(status: number, code: string, message: string, denial?: Denial) {
    super(message);
    this.status = status;
    this.code = code;
    this.denial = denial;
  }
}

const REASONS: Record<number, string> = {
  400: 'Bad Request',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  407: 'Proxy Authentication Required',
  429: 'Too Many Requests',
  502: 'Bad Gateway',
  504: 'Gateway Timeout',
};

/** Headers that say which rule denied: x-fnhost-policy-scope and x-fnhost-policy-rule. */
function refusalHeaders(refusal: EgressRefusal): Record<string, string> {
  const headers: Record<string, string> = { 'content-type': 'application/json', 'x-fnhost-error': encodeURIComponent(refusal.message), 'x-fnhost-error-code': refusal.code };
  if (refusal.status === 407) headers['proxy-authenticate'] = 'Basic realm="fnhost-egress"';
  if (refusal.denial !== undefined) {
    headers['x-fnhost-policy-scope'] = refusal.denial.scope;
    headers['x-fnhost-policy-rule'] = encodeURIComponent(refusal.denial.rule);
  }
  return headers;
}

function refusalBody(refusal: EgressRefusal): string {
  const body: Record<string, string> = { error: refusal.code, message: refusal.message };
  if (refusal.denial !== undefined) Object.assign(body, { scope: refusal.denial.scope, rule: refusal.denial.rule });
  return JSON.stringify(body);
}

/** A failed DNS answer as the runtime rebuilds it into node:dns's error (code ENOTFOUND, ENODATA...). */
function dnsFailure(err: unknown, what: string): EgressRefusal {
  const code = (err as { code?: unknown }).code;
  const text = typeof code === 'string' ? code : (err as Error).message;
  const notFound = code === 'ENOTFOUND' || code === 'ENODATA' || code === 'NXDOMAIN';
  return new EgressRefusal(notFound ? 404 : 502, typeof code === 'string' ? code : 'dns_failed', `${what} failed: ${text}`);
}

/** How long a refused CONNECT's socket stays after its answer, for the client to read it (see #refuse). */
const REFUSED_LINGER_MS = 2_000;

export class EgressProxy {
  readonly #o: Required<Omit<EgressProxyOptions, 'resolver' | 'platform' | 'machine' | 'listenerPorts' | 'guard'>> & { resolver: EgressResolver; machine: MachineAddresses; listenerPorts: () => readonly number[]; guard: ConnectionGuard | undefined };
  readonly #servers: Array<Server | NetServer> = [];
  readonly #unixPaths: string[] = [];
  readonly #tunnelsOf = new Map<string, number>();
  readonly #open = new Set<Duplex>();
  /** CONNECT requests by outcome, and DNS questions answered (Prometheus counters). */
  readonly #counts = { tunnelled: 0, denied: 0, refused: 0, failed: 0, dns: 0, closedByPolicy: 0 };
  /** Established tunnels by function, so a policy change can end the ones it now denies. */
  readonly #established = new Map<string, Set<Tunnel>>();
  /** The idle sweep, running while any tunnel is established. */
  #sweeper: NodeJS.Timeout | undefined;

  constructor(options: EgressProxyOptions) {
    this.#o = {
      maxTunnelsPerFunction: EGRESS_DEFAULTS.maxTunnelsPerFunction,
      idleTimeoutMs: EGRESS_DEFAULTS.idleTimeoutMs,
      connectTimeoutMs: EGRESS_DEFAULTS.connectTimeoutMs,
      ...options,
      resolver: options.resolver ?? systemResolver(),
      machine: options.machine ?? new MachineAddresses({ platform: options.platform }),
      listenerPorts: options.listenerPorts ?? (() => []),
      guard: options.guard,
    };
  }

  /** `fnhost_egress_*` lines for /metrics. */
  metricsText(): string {
    const c = this.#counts;
    return (
      '# HELP fnhost_egress_connections_total CONNECT requests to the egress proxy, by outcome: tunnelled, denied (network policy), refused (credential, target, limit), failed (DNS or dial).\n' +
      '# TYPE fnhost_egress_connections_total counter\n' +
      (['tunnelled', 'denied', 'refused', 'failed'] as const).map((o) => `fnhost_egress_connections_total{outcome="${o}"} ${c[o]}\n`).join('') +
      '# HELP fnhost_egress_tunnels Egress tunnels open now (connecting included).\n# TYPE fnhost_egress_tunnels gauge\n' +
      `fnhost_egress_tunnels ${this.tunnels}\n` +
      '# HELP fnhost_egress_dns_answers_total DNS questions the egress proxy answered.\n# TYPE fnhost_egress_dns_answers_total counter\n' +
      `fnhost_egress_dns_answers_total ${c.dns}\n` +
      '# HELP fnhost_egress_closed_by_policy_total Open tunnels closed because a policy change denied them.\n# TYPE fnhost_egress_closed_by_policy_total counter\n' +
      `fnhost_egress_closed_by_policy_total ${c.closedByPolicy}\n`
    );
  }

  /** Tunnels open now (tests, metrics). */
  get tunnels(): number {
    let n = 0;
    for (const count of this.#tunnelsOf.values()) n += count;
    return n;
  }

  #server(): Server {
    const server = createServer({ maxHeaderSize: EGRESS_DEFAULTS.maxHeaderBytes, requestTimeout: 30_000, headersTimeout: 10_000 }, (req, res) => void this.#onRequest(req, res));
    server.on('connect', (req: IncomingMessage, socket: Duplex, head: Buffer) => void this.#onConnect(req, socket as Socket, head));
    server.on('clientError', (err: Error & { code?: string }, socket: Duplex) => {
      if (!socket.writable) return socket.destroy();
      const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : 400;
      socket.end(`HTTP/1.1 ${status} ${status === 431 ? 'Request Header Fields Too Large' : 'Bad Request'}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`);
    });
    // A first request stops the guard's first-request timer, whatever its credential.
    const guard = this.#o.guard;
    if (guard !== undefined) {
      server.on('request', (req: IncomingMessage) => guard.spoke(req.socket));
      server.on('connect', (req: IncomingMessage) => guard.spoke(req.socket));
    }
    this.#servers.push(server);
    return server;
  }

  /**
   * The HTTP server that sandboxes' own egress sockets hand their connections to
   * (sandbox/gateway-sockets.ts): it listens on no address itself.
   */
  serverForSandboxes(): Server {
    return this.#server();
  }

  /** Listens on a Unix socket (a stale one at the path is replaced). */
  async listenUnix(path: string): Promise<void> {
    // sockaddr_un holds 108 bytes with its terminating NUL.
    if (Buffer.byteLength(path) > 107) throw new Error(`the egress proxy socket path ${path} is longer than 107 bytes; use a shorter FNHOST_DATA_DIR`);
    await rm(path, { force: true });
    const server = this.#server();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(path, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.#unixPaths.push(path);
    // The data folder (0700) keeps other local users out; a sandboxed runtime gets the socket
    // bind-mounted and runs as its own uid, so the socket itself is open: the credential guards it.
    await chmod(path, 0o666);
  }

  /** Listens on TCP (cluster mode's pods); resolves with `host:port`. */
  async listenTcp(host: string, port: number): Promise<string> {
    const http = this.#server();
    const guard = this.#o.guard;
    // Admitted per source address before a byte is read (a pod's address names its function's pod),
    // then handed to the HTTP server.
    const server = guard === undefined ? http : createNetServer((socket) => {
      if (guard.admit(socket, `address:${socket.remoteAddress ?? 'unknown'}`)) http.emit('connection', socket);
    });
    if (server !== http) {
      server.on('error', () => undefined);
      this.#servers.push(server);
    }
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    const address = server.address() as AddressInfo;
    return `${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
  }

  async close(): Promise<void> {
    clearInterval(this.#sweeper);
    this.#sweeper = undefined;
    for (const stream of this.#open) stream.destroy();
    // A server that never listened (the sandboxes') answers close() with an error: it is closed all the same.
    await Promise.all(this.#servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
    await Promise.all(this.#unixPaths.map((p) => rm(p, { force: true })));
  }

  #authenticate(req: IncomingMessage): string {
    const functionId = this.#o.tokens.verify(proxyCredential(req.headers['proxy-authorization']));
    if (functionId === undefined || !this.#o.knows(functionId)) {
      throw new EgressRefusal(407, 'proxy_authentication_required', 'the egress proxy needs Proxy-Authorization with the runtime credential of a function');
    }
    if (this.#o.guard !== undefined && !this.#o.guard.served(req.socket, functionId)) {
      throw new EgressRefusal(429, 'too_many_connections', `the function holds ${this.#o.guard.limit} connections to the egress proxy already; close some`);
    }
    return functionId;
  }

  // ---- CONNECT ----

  async #onConnect(req: IncomingMessage, client: Socket, head: Buffer): Promise<void> {
    this.#open.add(client);
    client.once('close', () => this.#open.delete(client));
    client.on('error', () => undefined);
    let functionId: string | undefined;
    try {
      functionId = this.#authenticate(req);
      const target = this.#target(req.url);
      const inUse = this.#tunnelsOf.get(functionId) ?? 0;
      if (inUse >= this.#o.maxTunnelsPerFunction) {
        throw new EgressRefusal(429, 'too_many_connections', `the function has ${inUse} connections open through the egress proxy; the limit is ${this.#o.maxTunnelsPerFunction}`);
      }
      this.#tunnelsOf.set(functionId, inUse + 1);
      const id = functionId;
      client.once('close', () => this.#release(id));
      const address = await this.#checkedAddresses(functionId, target);
      if (client.destroyed) return;
      const upstream = await this.#dial(address, target);
      if (client.destroyed) {
        upstream.destroy();
        return;
      }
      this.#tunnel(functionId, target, client, upstream, head);
    } catch (err) {
      this.#refuse(client, err, functionId, req.url);
    }
  }

  #release(functionId: string): void {
    const n = (this.#tunnelsOf.get(functionId) ?? 1) - 1;
    if (n <= 0) this.#tunnelsOf.delete(functionId);
    else this.#tunnelsOf.set(functionId, n);
  }

  #target(raw: string | undefined): ConnectTarget {
    try {
      return parseConnectTarget(raw);
    } catch (err) {
      if (err instanceof TargetError) throw new EgressRefusal(400, 'bad_target', err.message);
      throw err;
    }
  }

  /** The addresses to dial, after the policies allowed the name and every address (checked.ts). */
  async #checkedAddresses(functionId: string, target: ConnectTarget): Promise<string[]> {
    const policies = await policiesFor(this.#o.policies, functionId, this.#o.machine.current());
    const machine = this.#o.machine.current();
    const check = await checkTarget(target.host, target.port, policies, async (name) => (await this.#o.resolver.lookup(name)).map((a) => a.address), { isMachine: (a) => machine.isMachine(a), ports: this.#o.listenerPorts() });
    if (check.ok) return check.addresses;
    if (check.reason === 'denied') throw new EgressRefusal(403, 'policy_denied', check.message, check.denial);
    if (check.reason === 'dns') throw dnsFailure(check.error, `resolving ${target.host}`);
    throw new EgressRefusal(502, 'ENOTFOUND', `resolving ${target.host} gave no address`);
  }

  /**
   * The dry run of a connection (`fnhost policy:check`): what the proxy would decide for this
   * function and target now, with the rule, the scope and the addresses the name resolves to.
   * As for a connection, a name the policies deny is not resolved.
   */
  async explain(functionId: string, rawTarget: string): Promise<Explanation & { target: string; message: string }> {
    // No port: 443 (what a fetch of https://<host>/ dials); a bare IPv6 address is one host, not host:port.
    const target = this.#target(isIP(rawTarget) === 6 ? `[${rawTarget}]:443` : rawTarget.includes(':') ? rawTarget : `${rawTarget}:443`);
    const what = `connection to ${target.host.includes(':') ? `[${target.host}]` : target.host}:${target.port}`;
    const shown = `${target.host.includes(':') ? `[${target.host}]` : target.host}:${target.port}`;
    const policies = await policiesFor(this.#o.policies, functionId, this.#o.machine.current());
    const machine = policies.platform as ReturnType<MachineAddresses['current']>;
    const listener = { port: target.port, isMachine: (a: string) => machine.isMachine(a), ports: this.#o.listenerPorts() };
    let addresses: string[] | undefined;
    if (isIP(target.host) === 0 && decisionOf(target.host, policies, target.port).allowed) {
      try {
        addresses = (await this.#o.resolver.lookup(target.host)).map((a) => a.address);
      } catch (err) {
        const failure = dnsFailure(err, `resolving ${target.host}`);
        const byName = decisionOf(target.host, policies, target.port);
        return { allowed: false, scope: byName.scope, rule: 'dns', subject: target.host, name: { ...byName }, addresses: [], target: shown, message: `${what} would fail: ${failure.message}` };
      }
    }
    const e = explain(target.host, addresses, policies, listener);
    const message = e.allowed
      ? `${what} is allowed (${e.scope} rule ${e.rule})${addresses === undefined ? '' : `: it resolves to ${addresses.join(', ')}`}`
      : denialMessage(what, target.host, { scope: e.scope, rule: e.rule, subject: e.subject });
    return { ...e, target: shown, message };
  }

  /** Connects to the checked addresses in order (the next one when one refuses or times out). */
  async #dial(addresses: string[], target: ConnectTarget): Promise<Socket> {
    let last: Error | undefined;
    for (const address of addresses) {
      try {
        return await new Promise<Socket>((resolve, reject) => {
          const socket = connect({ host: address, port: target.port });
          const timer = setTimeout(() => {
            socket.destroy();
            reject(Object.assign(new Error(`no answer within ${this.#o.connectTimeoutMs} ms`), { code: 'ETIMEDOUT' }));
          }, this.#o.connectTimeoutMs);
          socket.once('connect', () => {
            clearTimeout(timer);
            socket.removeAllListeners('error');
            resolve(socket);
          });
          socket.once('error', (err) => {
            clearTimeout(timer);
            reject(err);
          });
        });
      } catch (err) {
        last = err as Error;
      }
    }
    const code = (last as { code?: string } | undefined)?.code;
    const where = addresses.length === 1 ? addresses[0] : `${addresses.length} addresses`;
    // The errno (ECONNREFUSED, ETIMEDOUT...) is the code, so the runtime rebuilds the error a direct connection would have had.
    throw new EgressRefusal(code === 'ETIMEDOUT' ? 504 : 502, code ?? 'connect_failed', `connection to ${target.host}:${target.port} (${where}) failed: ${code ?? last?.message}`);
  }

  #tunnel(functionId: string, target: ConnectTarget, client: Socket, upstream: Socket, head: Buffer): void {
    this.#open.add(upstream);
    const record: Tunnel = { host: target.host, port: target.port, address: upstream.remoteAddress ?? target.host, end: () => end(), moved: 0, movedAtSweep: 0, quietSweeps: 0 };
    let mine = this.#established.get(functionId);
    if (mine === undefined) this.#established.set(functionId, (mine = new Set()));
    mine.add(record);
    const end = () => {
      client.destroy();
      upstream.destroy();
      mine.delete(record);
      if (mine.size === 0 && this.#established.get(functionId) === mine) this.#established.delete(functionId);
    };
    upstream.once('close', () => {
      this.#open.delete(upstream);
      end();
    });
    client.once('close', end);
    upstream.on('error', end);
    client.on('error', end);
    upstream.setNoDelay(true);
    client.setNoDelay?.(true);
    this.#counts.tunnelled++;
    client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    if (head.length > 0) upstream.write(head);
    // Idle in both directions: traffic either way keeps the tunnel (#sweep).
    forward(client, upstream, record);
    forward(upstream, client, record);
    this.#sweeper ??= setInterval(() => this.#sweep(), Math.max(10, this.#o.idleTimeoutMs / IDLE_SWEEPS)).unref();
  }

  /** Ends the tunnels that moved nothing either way for IDLE_SWEEPS + 1 sweeps; stops when none is left. */
  #sweep(): void {
    if (this.#established.size === 0) {
      clearInterval(this.#sweeper);
      this.#sweeper = undefined;
      return;
    }
    for (const tunnels of this.#established.values()) {
      for (const tunnel of [...tunnels]) {
        if (tunnel.moved !== tunnel.movedAtSweep) {
          tunnel.movedAtSweep = tunnel.moved;
          tunnel.quietSweeps = 0;
        } else if (++tunnel.quietSweeps > IDLE_SWEEPS) tunnel.end();
      }
    }
  }

  /**
   * After a policy change: ends the open tunnels it now denies (a keep-alive connection must not
   * outlive a denial). `global` concerns every function; otherwise the function named.
   */
  async recheck(scope: string): Promise<void> {
    const functionIds = scope === 'global' ? [...this.#established.keys()] : this.#established.has(scope) ? [scope] : [];
    for (const functionId of functionIds) {
      const policies = await policiesFor(this.#o.policies, functionId, this.#o.machine.current());
      for (const tunnel of [...(this.#established.get(functionId) ?? [])]) {
        const byName = decisionOf(tunnel.host, policies, tunnel.port);
        const denial = denialOf(tunnel.host, policies, tunnel.port) ?? (tunnel.address === tunnel.host ? undefined : deniedAddress([tunnel.address], policies, byName, tunnel.port));
        if (denial === undefined) continue;
        this.#o.logger.info('egress connection closed: the network policy now denies it', { function_id: functionId, target: `${tunnel.host}:${tunnel.port}`, scope: denial.scope, rule: denial.rule, subject: denial.subject });
        this.#counts.closedByPolicy++;
        tunnel.end();
      }
    }
  }

  #refuse(client: Duplex, err: unknown, functionId: string | undefined, rawTarget: string | undefined): void {
    const refusal = err instanceof EgressRefusal ? err : new EgressRefusal(502, 'egress_failed', `the egress proxy failed: ${(err as Error).message}`);
    this.#logRefusal(refusal, functionId, rawTarget, err);
    if (refusal.status === 403) this.#counts.denied++;
    else if (refusal.status >= 500 || refusal.status === 404) this.#counts.failed++;
    else this.#counts.refused++;
    if (client.destroyed) return;
    const body = refusalBody(refusal);
    const headers = { ...refusalHeaders(refusal), 'content-length': String(Buffer.byteLength(body)), connection: 'close' };
    const lines = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('');
    // Closed soon after the answer is out, whether or not the client closes its side: a refused
    // connection holds no descriptor for long. Not at once: a client that sent bytes after its
    // CONNECT (a request written before the answer came) would have them unread here, and closing
    // with unread bytes sends a reset that can take the answer, and the rule it names, with it. So
    // what it sent is read and dropped, and the socket ends a moment after the answer.
    client.resume();
    client.once('finish', () => setTimeout(() => client.destroy(), REFUSED_LINGER_MS).unref());
    client.end(`HTTP/1.1 ${refusal.status} ${REASONS[refusal.status] ?? 'Error'}\r\n${lines}\r\n${body}`);
  }

  #logRefusal(refusal: EgressRefusal, functionId: string | undefined, rawTarget: string | undefined, err: unknown): void {
    const target = rawTarget?.slice(0, 300);
    if (refusal.status === 403) this.#o.logger.info('egress denied by network policy', { function_id: functionId, target, scope: refusal.denial?.scope, rule: refusal.denial?.rule, subject: refusal.denial?.subject });
    else if (refusal.status === 407) this.#o.logger.warn('egress refused: no or wrong runtime credential', { target });
    else if (!(err instanceof EgressRefusal)) this.#o.logger.error('egress failed', { function_id: functionId, target, error: (err as Error).message });
  }

  // ---- GET /dns ----

  async #onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let functionId: string | undefined;
    try {
      const url = new URL(req.url ?? '/', 'http://egress');
      if (url.pathname !== '/dns') throw new EgressRefusal(404, 'not_found', 'the egress proxy answers CONNECT host:port and GET /dns?name=&type= only');
      if (req.method !== 'GET') throw new EgressRefusal(405, 'method_not_allowed', `GET /dns only, got ${req.method}`);
      functionId = this.#authenticate(req);
      const { name, type } = this.#question(url);
      const policies = await policiesFor(this.#o.policies, functionId, this.#o.machine.current());
      const denial = denialOf(name, policies);
      if (denial !== undefined) throw new EgressRefusal(403, 'policy_denied', denialMessage(`resolving ${name}`, name, denial), denial);
      let records: unknown[];
      try {
        records = type === 'LOOKUP' ? await this.#o.resolver.lookup(name) : await this.#o.resolver.resolve(name, type);
      } catch (err) {
        throw dnsFailure(err, `resolving ${name} (${type})`);
      }
      this.#counts.dns++;
      const body = JSON.stringify({ name, type, records });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
    } catch (err) {
      const refusal = err instanceof EgressRefusal ? err : new EgressRefusal(502, 'egress_failed', `the egress proxy failed: ${(err as Error).message}`);
      this.#logRefusal(refusal, functionId, req.url, err);
      const body = refusalBody(refusal);
      // A connection over the bound is not kept.
      const close = refusal.code === 'too_many_connections' ? { connection: 'close', 'retry-after': '1' } : {};
      res.writeHead(refusal.status, { ...refusalHeaders(refusal), ...close, 'content-length': Buffer.byteLength(body) }).end(body);
    }
  }

  #question(url: URL): { name: string; type: DnsType } {
    const rawName = url.searchParams.get('name');
    const rawType = (url.searchParams.get('type') ?? 'LOOKUP').toUpperCase();
    if (rawName === null || rawName === '') throw new EgressRefusal(400, 'bad_question', 'GET /dns needs name=');
    if (!(DNS_TYPES as readonly string[]).includes(rawType)) throw new EgressRefusal(400, 'bad_question', `DNS type ${JSON.stringify(rawType.slice(0, 20))} is not answered; use one of ${DNS_TYPES.join(', ')}`);
    let name: string;
    try {
      name = isIP(rawName) === 6 ? rawName : validHostName(rawName);
    } catch (err) {
      throw new EgressRefusal(400, 'bad_question', (err as Error).message);
    }
    return { name, type: rawType as DnsType };
  }
}
