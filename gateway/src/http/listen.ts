import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { FnhostError } from '@fnhost/core';

/**
 * Listens on host:port (0: any free port) and gives back the URL to reach it
 * (a wildcard host as 127.0.0.1). A port in use is an error that says so.
 */
export async function listen(server: Server, port: number, host: string): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    const failed = (err: NodeJS.ErrnoException) =>
      reject(err.code === 'EADDRINUSE' ? new FnhostError('port_in_use', 500, `port ${port} on ${host} is already in use (another fnhost gateway, or another program): stop it, or choose a free port`, { expose: true }) : err);
    server.once('error', failed);
    server.listen(port, host, () => {
      server.off('error', failed);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shown = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  return `http://${shown}:${address.port}`;
}
