import { request } from 'node:http';
import { LOAD_ERROR, type HealthProbe } from './executor.ts';

// The executor's HealthProbe over the network: GET <origin>/healthz of a
// starting runtime pod: true on 200, LOAD_ERROR when the runtime says its
// function module failed to load (503 {"status":"error","error":"load"}),
// false otherwise (still loading, generic, unreachable). One connection per
// probe, closed after it (`agent: false`): probes happen only while calls are
// held, a few per pod, so a keep-alive pool would only keep sockets to pods
// that are still starting. The executor aborts `signal` after PROBE_TIMEOUT_MS.

/** The runtime's /healthz body is a few bytes; more is not a runtime's answer. */
const MAX_HEALTH_BODY = 1024;

export const httpHealthProbe: HealthProbe = (origin, signal) =>
  new Promise<boolean | typeof LOAD_ERROR>((resolve, reject) => {
    const req = request(`${origin}/healthz`, { method: 'GET', agent: false, signal, headers: { connection: 'close' } }, (res) => {
      res.on('error', () => undefined);
      if (res.statusCode === 200 || res.statusCode !== 503) {
        res.resume();
        resolve(res.statusCode === 200);
        return;
      }
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        if (body.length < MAX_HEALTH_BODY) body += chunk;
      });
      res.on('end', () => resolve(loadFailed(body) ? LOAD_ERROR : false));
    });
    req.on('error', reject);
    req.end();
  });

function loadFailed(body: string): boolean {
  try {
    const parsed = JSON.parse(body) as { status?: unknown; error?: unknown };
    return parsed.status === 'error' && parsed.error === 'load';
  } catch {
    return false;
  }
}
