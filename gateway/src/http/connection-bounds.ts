import type { Server, ServerOptions } from 'node:http';
import type { Socket } from 'node:net';
import type { Refusals } from '../resources/refusals.ts';
import type { ResourceSettings } from '../resources/settings.ts';

// Bounds on a listener's connections (issue 27: 20,000 idle half-sent requests
// from one client took every descriptor of the gateway, and every call of every
// function failed). Three parts, as nginx's limit_conn and client_header_timeout
// and Envoy's overload manager (global_downstream_max_connections) do it:
//
//  - a global bound derived from the descriptor limit minus a reserve kept for
//    the gateway's own work (../resources/descriptors.ts): Node's
//    server.maxConnections, which closes a connection past it at accept, before
//    any byte is read;
//  - a per-client bound, per peer address (an IPv6 peer by its /64, which one
//    host usually holds whole): past it the connection gets a 503 with
//    Retry-After and is closed;
//  - header and request timeouts, checked every second (Node checks every 30 s
//    by default, which lets a 10 s bound run to 40 s).
//
// Behind FNHOST_TRUST_PROXY (an Ingress, a load balancer) every connection
// comes from the proxy, so a per-peer bound would bound the proxy: the default
// is then no per-client bound here (the proxy's own, e.g. ingress-nginx's
// limit-connections, is the per-client bound); FNHOST_MAX_CONNECTIONS_PER_CLIENT
// set explicitly still applies, to the proxy's connections to this replica.

/** Above this the global bound is not raised further by a larger descriptor limit: each idle connection holds ~10-30 KB of the gateway's memory. */
export const MAX_CONNECTIONS_CAP = 16_384;
/** The least the reserve is, whatever the limit: stores, the runtimes' pipes and sockets, the egress and internal sockets, the panel. */
export const MIN_RESERVE = 256;
/** How often Node checks the header and request timeouts (its default is 30 s). */
export const TIMEOUT_CHECK_MS = 1_000;
export const KEEP_ALIVE_TIMEOUT_MS = 65_000;
/** A refused client is told to come back after this (Retry-After). */
export const RETRY_AFTER_SECONDS = 1;

export interface ListenerBounds {
  /** Connections at once on the listener (server.maxConnections). */
  maxConnections: number;
  /** Connections at once from one peer address (0: no per-client bound). */
  perClient: number;
  headersTimeoutMs: number;
  requestTimeoutMs: number;
}

export interface GatewayBounds {
  /** The soft descriptor limit the bounds were derived from, and the part kept for the gateway's own work. */
  nofile: number;
  reserve: number;
  main: ListenerBounds;
  admin: ListenerBounds;
  /** Said at start when a setting had to be changed to fit the limit. */
  warnings: string[];
}

/** The listeners' bounds from the descriptor limit and the settings (pure). */
export function deriveBounds(nofileSoft: number, s: ResourceSettings, trustProxy: boolean): GatewayBounds {
  const soft = Number.isFinite(nofileSoft) ? nofileSoft : 1_048_576;
  const warnings: string[] = [];
  let reserve = s.fdReserve ?? Math.max(MIN_RESERVE, Math.floor(soft / 4));
  // Callers get at least a quarter of a small limit; the reserve gives way, and says so.
  if (reserve > soft - Math.floor(soft / 4)) {
    const given = reserve;
    reserve = soft - Math.floor(soft / 4);
    warnings.push(`the descriptor reserve (${given}) leaves too little of RLIMIT_NOFILE (${soft}) for callers; reserving ${reserve}: raise the limit (FNHOST_NOFILE as root, LimitNOFILE= in systemd)`);
  }
  const available = Math.max(1, soft - reserve);
  let maxConnections = s.maxConnections ?? Math.min(available, MAX_CONNECTIONS_CAP);
  if (maxConnections > available) {
    warnings.push(`FNHOST_MAX_CONNECTIONS=${maxConnections} is more than RLIMIT_NOFILE (${soft}) minus the reserve (${reserve}); using ${available}`);
    maxConnections = available;
  }
  const perClientDefault = trustProxy ? 0 : 256;
  const perClient = Math.min(s.maxConnectionsPerClient ?? perClientDefault, maxConnections);
  // The panel's connections come out of the reserve: at most a quarter of it.
  const adminMax = Math.max(1, Math.min(s.adminMaxConnections, Math.floor(reserve / 4)));
  const timeouts = { headersTimeoutMs: s.headersTimeoutMs, requestTimeoutMs: s.requestTimeoutMs };
  return {
    nofile: soft,
    reserve,
    main: { maxConnections, perClient, ...timeouts },
    admin: { maxConnections: adminMax, perClient: Math.min(s.adminMaxConnectionsPerClient, adminMax), ...timeouts },
    warnings,
  };
}

/** What a client is counted by: its IPv4 address, or the /64 of its IPv6 one. */
export function clientKey(address: string | undefined): string {
  if (address === undefined || address === '') return '';
  if (address.startsWith('::ffff:') && address.includes('.')) return address.slice(7);
  if (!address.includes(':')) return address;
  const [head = '', tail] = address.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = tail === undefined ? left : [...left, ...new Array<string>(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right];
  return groups.slice(0, 4).map((g) => (g.replace(/^0+(?=.)/, '') || '0').toLowerCase()).join(':') + '::/64';
}

/** Per-client connection counts (pure bookkeeping; the server glue is below). */
export class ClientCounts {
  readonly #counts = new Map<string, number>();

  /** Counts a new connection of `key`; false (and not counted) when it would pass `bound`. */
  admit(key: string, bound: number): boolean {
    const n = this.#counts.get(key) ?? 0;
    if (bound > 0 && n >= bound) return false;
    this.#counts.set(key, n + 1);
    return true;
  }

  leave(key: string): void {
    const n = (this.#counts.get(key) ?? 1) - 1;
    if (n <= 0) this.#counts.delete(key);
    else this.#counts.set(key, n);
  }

  of(key: string): number {
    return this.#counts.get(key) ?? 0;
  }

  get clients(): number {
    return this.#counts.size;
  }
}

/** The node:http server options that carry the bounds (timeouts are checked every TIMEOUT_CHECK_MS). */
export function serverOptions(b: ListenerBounds): ServerOptions {
  return {
    keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
    headersTimeout: b.headersTimeoutMs,
    requestTimeout: b.requestTimeoutMs,
    connectionsCheckingInterval: TIMEOUT_CHECK_MS,
  };
}


function closeWith(socket: Socket, status: string, body: string, extra = ''): void {
  // A response already begun on this connection cannot take another head: close it only.
  const current = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (!socket.writable || current?.headersSent === true) {
    socket.destroy();
    return;
  }
  // Written straight to the socket (no request is read), then closed at once: the
  // descriptor is given back as soon as the bytes are handed to the kernel.
  socket.end(`HTTP/1.1 ${status}\r\n${extra}Content-Type: application/json\r\nConnection: close\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`, () => socket.destroy());
  // A peer that reads nothing must not hold the socket open through the write.
  socket.setTimeout(1_000, () => socket.destroy());
}

/**
 * Puts the bounds on a listener: maxConnections (refusals counted from Node's 'drop'),
 * the per-client bound, and the timeouts' refusals counted and answered (408).
 * `name` is the listener's, for the log.
 */
export function boundListener(server: Server, b: ListenerBounds, refusals: Refusals, name: 'main' | 'admin'): ClientCounts {
  server.maxConnections = b.maxConnections;
  server.headersTimeout = b.headersTimeoutMs;
  server.requestTimeout = b.requestTimeoutMs;
  server.on('drop', () => {
    refusals.refused('connections_total', 'a connection was refused: the listener holds its bound of connections', { listener: name, max_connections: b.maxConnections });
  });
  const counts = new ClientCounts();
  server.on('connection', (socket: Socket) => {
    const key = clientKey(socket.remoteAddress);
    if (!counts.admit(key, b.perClient)) {
      refusals.refused('connections_per_client', 'a connection was refused: its client holds its bound of connections', { listener: name, max_connections_per_client: b.perClient });
      const body = JSON.stringify({ error: 'too_many_connections', message: `this client holds ${b.perClient} connections to the gateway already` });
      closeWith(socket, '503 Service Unavailable', body, `Retry-After: ${RETRY_AFTER_SECONDS}\r\n`);
      return;
    }
    socket.once('close', () => counts.leave(key));
  });
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
    // Node's own answer to a bad request, plus the count of slow senders ended by the timeouts.
    if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
      refusals.refused('headers_timeout', 'a connection was closed: its request did not arrive within the header or request timeout', { listener: name, headers_timeout_ms: b.headersTimeoutMs, request_timeout_ms: b.requestTimeoutMs });
      closeWith(socket, '408 Request Timeout', JSON.stringify({ error: 'request_timeout', message: 'the request did not arrive in time' }));
      return;
    }
    if (err.code === 'ECONNRESET' || err.code === 'EPIPE') {
      socket.destroy();
      return;
    }
    const status = err.code === 'HPE_HEADER_OVERFLOW' ? '431 Request Header Fields Too Large' : '400 Bad Request';
    closeWith(socket, status, JSON.stringify({ error: 'bad_request', message: 'the request could not be read' }));
  });
  return counts;
}

