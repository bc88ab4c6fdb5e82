import { ConfigError, intVar } from '../config.ts';

// The gateway's bounds on shared resources that callers reach (issue 27), read
// from the environment once at start. Every default and the reason for it:
// docs/security.md "Resources" and docs/gateway.md "Connections and bodies".

export interface ResourceSettings {
  /** FNHOST_NOFILE: as root, raise RLIMIT_NOFILE to this at start (0: use the limits as given). */
  nofileTarget: number;
  /** FNHOST_FD_RESERVE: descriptors kept for the gateway's own work; undefined: a quarter of the limit, at least 256 (0: none, which lets callers take every descriptor: for tests of what EMFILE does). */
  fdReserve: number | undefined;
  /** FNHOST_MAX_CONNECTIONS: the main listener's connections at once; undefined: the limit minus the reserve, at most 16384. */
  maxConnections: number | undefined;
  /** FNHOST_MAX_CONNECTIONS_PER_CLIENT (0: none); undefined: 256, or none behind FNHOST_TRUST_PROXY. */
  maxConnectionsPerClient: number | undefined;
  /** FNHOST_ADMIN_MAX_CONNECTIONS: the admin listener's connections at once (taken out of the reserve). */
  adminMaxConnections: number;
  /** FNHOST_ADMIN_MAX_CONNECTIONS_PER_CLIENT (0: none). */
  adminMaxConnectionsPerClient: number;
  /** FNHOST_HEADERS_TIMEOUT_MS: a request's head must arrive within this (Node's headersTimeout). */
  headersTimeoutMs: number;
  /** FNHOST_REQUEST_TIMEOUT_MS: the whole request, head and body, within this (Node's requestTimeout). */
  requestTimeoutMs: number;
  /** FNHOST_BODY_IDLE_TIMEOUT_MS: a request body with no byte for this long is ended with 408 (nginx's client_body_timeout). */
  bodyIdleTimeoutMs: number;
  /** FNHOST_BODY_MEMORY_BYTES: request bodies the gateway holds in memory at once, all calls together. */
  bodyMemoryBytes: number;
}

export const DEFAULT_NOFILE = 65_536;
export const DEFAULT_PER_CLIENT = 256;
export const DEFAULT_ADMIN_MAX_CONNECTIONS = 128;
export const DEFAULT_ADMIN_PER_CLIENT = 32;
export const DEFAULT_HEADERS_TIMEOUT_MS = 10_000;
export const DEFAULT_REQUEST_TIMEOUT_MS = 300_000;
export const DEFAULT_BODY_IDLE_TIMEOUT_MS = 20_000;
export const DEFAULT_BODY_MEMORY_BYTES = 256 * 1024 * 1024;

function optionalInt(env: Record<string, string | undefined>, name: string, min: number, max: number): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return undefined;
  return intVar(env, name, 0, min, max);
}

export function loadResourceSettings(env: Record<string, string | undefined>): ResourceSettings {
  const headersTimeoutMs = intVar(env, 'FNHOST_HEADERS_TIMEOUT_MS', DEFAULT_HEADERS_TIMEOUT_MS, 1_000, 600_000);
  const requestTimeoutMs = intVar(env, 'FNHOST_REQUEST_TIMEOUT_MS', DEFAULT_REQUEST_TIMEOUT_MS, 0, 3_600_000);
  // Node refuses a requestTimeout below headersTimeout (0 turns it off).
  if (requestTimeoutMs !== 0 && requestTimeoutMs < headersTimeoutMs) throw new ConfigError(`FNHOST_REQUEST_TIMEOUT_MS=${requestTimeoutMs} is below FNHOST_HEADERS_TIMEOUT_MS=${headersTimeoutMs}: the whole request cannot take less time than its head`);
  return {
    nofileTarget: intVar(env, 'FNHOST_NOFILE', DEFAULT_NOFILE, 0, 1_048_576),
    fdReserve: optionalInt(env, 'FNHOST_FD_RESERVE', 0, 1_048_576),
    maxConnections: optionalInt(env, 'FNHOST_MAX_CONNECTIONS', 1, 1_048_576),
    maxConnectionsPerClient: optionalInt(env, 'FNHOST_MAX_CONNECTIONS_PER_CLIENT', 0, 1_048_576),
    adminMaxConnections: intVar(env, 'FNHOST_ADMIN_MAX_CONNECTIONS', DEFAULT_ADMIN_MAX_CONNECTIONS, 1, 65_536),
    adminMaxConnectionsPerClient: intVar(env, 'FNHOST_ADMIN_MAX_CONNECTIONS_PER_CLIENT', DEFAULT_ADMIN_PER_CLIENT, 0, 65_536),
    headersTimeoutMs,
    requestTimeoutMs,
    bodyIdleTimeoutMs: intVar(env, 'FNHOST_BODY_IDLE_TIMEOUT_MS', DEFAULT_BODY_IDLE_TIMEOUT_MS, 1_000, 600_000),
    // At least one largest invocation body (6 MiB), or no call with a body could ever be served.
    bodyMemoryBytes: intVar(env, 'FNHOST_BODY_MEMORY_BYTES', DEFAULT_BODY_MEMORY_BYTES, 6 * 1024 * 1024, 64 * 1024 * 1024 * 1024),
  };
}
