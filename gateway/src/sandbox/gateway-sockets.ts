import { chmodSync, chownSync, mkdirSync } from 'node:fs';
import { createServer, type Server as NetServer, type Socket } from 'node:net';
import type { IncomingMessage, Server as HttpServer } from 'node:http';
import { join } from 'node:path';
import type { ConnectionGuard } from '../internal/connection-bound.ts';

// The gateway's two sockets as one sandbox sees them (/run/fnhost-gateway/gateway.sock: the
// internal API; egress.sock: the egress proxy), made for that sandbox alone. The socket a
// connection arrives on names the sandbox, and so the function it serves, before a byte is read:
// the bound on open connections per function (internal/connection-bound.ts) applies at accept.
// Chosen over the peer's uid by SO_PEERCRED: Node has no API for it (a native addon would be
// needed), and without root every sandbox runs under the gateway's own uid, so the uid would name
// no one; a socket per sandbox works the same with and without root. Each sandbox costs two
// listening descriptors. Every accepted connection is handed to the one HTTP server of its kind
// (the same routes, the same credential check), so nothing else differs from a shared socket.

/** A kind of socket: its file name in the sandbox's folder, the server its connections go to, and their bound. */
export interface GatewaySocketTarget {
  name: string;
  server: HttpServer;
  guard: ConnectionGuard;
}

export interface GatewaySocketTargets {
  internal: GatewaySocketTarget;
  egress: GatewaySocketTarget;
}

interface Opened {
  servers: NetServer[];
  /** The function the sandbox serves, once known (a warm-pool sandbox learns it at specialization). */
  functionId: string | undefined;
}

export class SandboxGatewaySockets {
  readonly #targets: GatewaySocketTargets;
  readonly #open = new Map<string, Opened>();

  constructor(targets: GatewaySocketTargets) {
    this.#targets = targets;
    // A first request stops a connection's first-request timer, whatever its credential.
    for (const { server, guard } of [targets.internal, targets.egress]) server.on('request', (req: IncomingMessage) => guard.spoke(req.socket));
  }

  /**
   * Listens on `dir`/gateway.sock and `dir`/egress.sock for sandbox `id`. Synchronous (a Unix
   * socket is bound and listening when listen() returns), because sandboxes are made synchronously.
   */
  open(id: string, dir: string, uid: number | undefined): void {
    mkdirSync(dir, { mode: 0o755 });
    const opened: Opened = { servers: [], functionId: undefined };
    this.#open.set(id, opened);
    try {
      for (const target of [this.#targets.internal, this.#targets.egress]) {
        const name = target.name;
        const server = createServer((socket: Socket) => {
          const key = opened.functionId ?? `sandbox:${id}`;
          if (target.guard.admit(socket, key)) target.server.emit('connection', socket);
        });
        // A full accept queue or EMFILE at accept is reported here: never an uncaught error.
        server.on('error', () => undefined);
        server.listen(join(dir, name));
        opened.servers.push(server);
        // A Unix socket is bound at once or not at all (EMFILE, ENOSPC: reported on 'error' a tick later).
        if (!server.listening) throw new Error(`the sandbox's ${name} could not be made in ${dir}`);
        // Only the sandbox's uid (root: its own) may connect; without root the sandbox runs as the gateway's uid.
        const path = join(dir, name);
        if (uid !== undefined) {
          chownSync(path, uid, uid);
          chmodSync(path, 0o600);
        } else chmodSync(path, 0o600);
      }
    } catch (err) {
      this.close(id);
      throw err;
    }
  }

  /** The sandbox now serves functionId: connections accepted from now on count for that function. */
  assign(id: string, functionId: string): void {
    const opened = this.#open.get(id);
    if (opened !== undefined) opened.functionId = functionId;
  }

  /** The sandbox has ended: its listeners close (its connections ended with its processes). */
  close(id: string): void {
    const opened = this.#open.get(id);
    if (opened === undefined) return;
    this.#open.delete(id);
    for (const server of opened.servers) server.close();
  }

  /** Sandboxes with sockets open now (tests). */
  get size(): number {
    return this.#open.size;
  }
}
