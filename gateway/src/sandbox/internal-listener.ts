import { createServer, type Server } from 'node:http';
import type { Socket } from 'node:net';
import Koa from 'koa';
import type Router from '@koa/router';
import { mountRouter } from '../http/methods.ts';

// The gateway's internal API (/internal/v1: KV, policy check, console) for sandboxed runtimes,
// which have no network. It listens on no address of its own: every sandbox gets a socket of its
// own (gateway-sockets.ts), whose connections are handed to this one server. It serves the
// internal routes only (each call still presents its function's runtime token): neither the
// management API nor invocations are reachable from a sandbox.

export interface InternalListener {
  server: Server;
  close(): Promise<void>;
}

export function internalServer(internal: Router, errorMiddleware: Koa.Middleware): InternalListener {
  const app = new Koa();
  app.silent = true;
  app.use(errorMiddleware);
  mountRouter(app, internal);
  // Node's header and request timeouts are checked only for a server that listens itself; a
  // connection here is ended by the first-request timeout of its guard (internal/connection-bound.ts),
  // and a kept-alive one by keepAliveTimeout. Tracked by hand for the same reason.
  const server = createServer({ keepAliveTimeout: 65_000 }, app.callback());
  const open = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
  });
  return {
    server,
    close: async () => {
      for (const socket of open) socket.destroy();
    },
  };
}
