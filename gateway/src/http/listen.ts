import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Listens on host:port (0: any free port) and gives back the URL to reach it (a wildcard host as 127.0.0.1). */
export async function listen(server: Server, port: number, host: string): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shown = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  return `http://${shown}:${address.port}`;
}
