import { startGateway, type RunningGateway } from '../../helpers/platform.ts';
import type { Target } from './neighbour.ts';

// A real gateway process for an attack test, under a lowered descriptor limit
// (prlimit), and the Target the yardstick needs. FNHOST_NOFILE=0 keeps the
// gateway (root here) from raising the limit the test lowered; the sandboxed
// runtimes cannot be given more than that hard limit either.
// FNHOST_ATTACK_GATEWAY_MAIN runs another checkout's gateway (the check that each
// attack test fails at the code before its fix: a copy of that commit's tree).

export async function attackedGateway(nofile: number, env: Record<string, string> = {}): Promise<{ gw: RunningGateway; target: Target }> {
  const gw = await startGateway({ prefix: ['prlimit', `--nofile=${nofile}:${nofile}`, '--'], env: { FNHOST_NOFILE: '0', FNHOST_SANDBOX_MAX_OPEN_FILES: String(Math.min(4096, nofile)), ...env }, main: process.env.FNHOST_ATTACK_GATEWAY_MAIN });
  return { gw, target: targetOf(gw) };
}

export type ManagementApi = (method: string, path: string, body?: unknown) => Promise<{ status: number; body: any }>;

/** The gateway's management API with its admin token: the status and the body (JSON when it is JSON). */
export function managementApi(gw: RunningGateway): ManagementApi {
  return async (method, path, body) => {
    const r = await fetch(gw.url + path, {
      method,
      headers: { authorization: `Bearer ${gw.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await r.text();
    return { status: r.status, body: text === '' ? undefined : text.startsWith('{') || text.startsWith('[') ? JSON.parse(text) : text };
  };
}

/** What the yardstick needs of a gateway: its URL, its pid, and a create that fails loudly. */
export function targetOf(gw: RunningGateway): Target {
  const api = managementApi(gw);
  return {
    url: gw.url,
    pid: gw.pid,
    async createFunction(name, code, extra = {}) {
      const r = await api('POST', '/api/v1/functions', { name, code, ...extra });
      if (r.status !== 201) throw new Error(`creating ${name} answered ${r.status}: ${JSON.stringify(r.body)}`);
      return r.body as { function_id: string };
    },
  };
}

/** fnhost_refused_total{reason} and fnhost_background_failures_total{task} from /metrics. */
export async function counters(gw: RunningGateway): Promise<Record<string, number>> {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^(fnhost_refused_total|fnhost_background_failures_total)\{(?:reason|task)="([^"]+)"\} (\d+)$/gm)) out[`${m[1]}:${m[2]}`] = Number(m[3]);
  return out;
}

/** Resident memory of a process, in bytes (/proc/<pid>/status VmRSS). */
export async function rssBytes(pid: number): Promise<number> {
  const { readFile } = await import('node:fs/promises');
  const m = /VmRSS:\s+(\d+) kB/.exec(await readFile(`/proc/${pid}/status`, 'utf8'));
  return m === null ? 0 : Number(m[1]) * 1024;
}
