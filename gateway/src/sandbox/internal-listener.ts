import { chmod, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import Koa from 'koa';
import type Router from '@koa/router';
import { mountRouter } from '../http/methods.ts';

// The gateway's internal API (/internal/v1: KV, policy check) on a Unix socket, for sandboxed
// runtimes, which have no network: the socket's folder is bound read-only into every sandbox.
// It serves the internal routes only (each call still presents its function's runtime token):
// neither the management API nor invocations are reachable from a sandbox.

export interface InternalListener {
  server: Server;
  close(): Promise<void>;
}

export async function listenInternal(socketPath: string, internal: Router, errorMiddleware: Koa.Middleware): Promise<InternalListener> {
  const app = new Koa();
  app.silent = true;
  app.use(errorMiddleware);
  mountRouter(app, internal);
  const server = createServer({ keepAliveTimeout: 65_000 }, app.callback());
  await rm(socketPath, { force: true });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => {
      server.off('error', reject);
      resolve();
    });
  });
  // Every sandbox runs under a uid of its own: connecting needs write permission on the socket.
  await chmod(socketPath, 0o666);
  return {
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
