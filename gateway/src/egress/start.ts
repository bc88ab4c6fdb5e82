import type { Server } from 'node:http';
import type { GatewayConfig } from '../config.ts';
import type { ConnectionGuard } from '../internal/connection-bound.ts';
import type { RuntimeTokenVerifier } from '../internal/tokens.ts';
import type { Logger } from '../log.ts';
import type { MachineAddresses } from '../policy/machine.ts';
import type { PolicySource } from './decision.ts';
import { EgressProxy } from './proxy.ts';

// The gateway's egress proxy as app.ts starts it: on one machine a Unix socket in
// the data folder (what the sandbox bind-mounts; FNHOST_EGRESS_PROXY=unix:<path>
// for the runtimes), and a TCP listener when FNHOST_EGRESS_LISTEN asks for one
// (cluster mode's pods, FNHOST_EGRESS_PROXY=http://<gateway>:<port>).

export const EGRESS_SOCKET = 'egress.sock';

export interface Egress {
  proxy: EgressProxy;
  /** FNHOST_EGRESS_PROXY for the runtimes this gateway starts, as they see it (undefined: it starts none). */
  runtimeSetting: string | undefined;
  /** The Unix socket it listens on, as this machine sees it (the sandboxes see it elsewhere). */
  socketPath: string | undefined;
  /** `host:port` of the TCP listener, when there is one. */
  tcpAddress: string | undefined;
  /** Sandboxed runtimes: the server their own egress sockets hand connections to (sandbox/gateway-sockets.ts). */
  sandboxServer: Server | undefined;
}

export async function startEgress(options: {
  config: GatewayConfig;
  tokens: RuntimeTokenVerifier;
  knows: (functionId: string) => boolean;
  policies: PolicySource;
  logger: Logger;
  /** The machine's own addresses and the platform's ranges, protected. */
  machine: MachineAddresses;
  /** Ports of the platform's listeners on this machine (never reachable through the proxy). */
  listenerPorts: () => readonly number[];
  /**
   * One machine: the Unix socket local runtimes reach the proxy over (in the
   * sandboxes' gateway folder, or the data folder for unsandboxed runtimes),
   * and FNHOST_EGRESS_PROXY as they see it.
   */
  local?: { socketPath: string; runtimeSetting: string };
  /** One machine, sandboxed: every sandbox has an egress socket of its own; FNHOST_EGRESS_PROXY as they see it. */
  sandboxed?: { runtimeSetting: string };
  /** The bound on open connections per function (internal/connection-bound.ts). */
  guard?: ConnectionGuard;
}): Promise<Egress> {
  const { config, logger } = options;
  let tcpPort: number | undefined;
  const proxy = new EgressProxy({
    tokens: options.tokens,
    knows: options.knows,
    policies: options.policies,
    machine: options.machine,
    listenerPorts: () => [...options.listenerPorts(), ...(tcpPort === undefined ? [] : [tcpPort])],
    logger,
    maxTunnelsPerFunction: config.egressMaxConnections,
    idleTimeoutMs: config.egressIdleTimeoutMs,
    guard: options.guard,
  });
  options.policies.onChange?.((scope) => proxy.recheck(scope));
  let runtimeSetting: string | undefined;
  if (options.local !== undefined) {
    await proxy.listenUnix(options.local.socketPath);
    runtimeSetting = options.local.runtimeSetting;
  }
  let sandboxServer: Server | undefined;
  if (options.sandboxed !== undefined) {
    sandboxServer = proxy.serverForSandboxes();
    runtimeSetting = options.sandboxed.runtimeSetting;
  }
  let tcpAddress: string | undefined;
  if (config.egressListen !== undefined) {
    tcpAddress = await proxy.listenTcp(config.egressListen.host, config.egressListen.port);
    tcpPort = Number(tcpAddress.slice(tcpAddress.lastIndexOf(':') + 1));
    logger.info('egress proxy listening', { address: tcpAddress });
  }
  return { proxy, runtimeSetting, socketPath: options.local?.socketPath, tcpAddress, sandboxServer };
}
