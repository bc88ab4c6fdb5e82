import { request } from 'node:http';
import type { HealthProbe } from './executor.ts';

// The executor's HealthProbe over the network: GET <origin>/healthz of a
// starting runtime pod, true only on 200. One connection per probe, closed
// after it (`agent: false`): probes happen only while calls are held, a few
// per pod, so a keep-alive pool would only keep sockets to pods that are
// still starting. The executor aborts `signal` after PROBE_TIMEOUT_MS.

export const httpHealthProbe: HealthProbe = (origin, signal) =>
  new Promise<boolean>((resolve, reject) => {
    const req = request(`${origin}/healthz`, { method: 'GET', agent: false, signal, headers: { connection: 'close' } }, (res) => {
      // The status is all that matters; the body (a few bytes) is read and dropped.
      res.resume();
      res.on('error', () => undefined);
      resolve(res.statusCode === 200);
    });
    req.on('error', reject);
    req.end();
  });
