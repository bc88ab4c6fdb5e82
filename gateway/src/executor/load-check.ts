import { Client } from 'undici';
import type { Upstream } from '@fnhost/core';
import type { LoadFailureKind } from '../functions/code-check.ts';

// How a started runtime's module load ended, asked of the runtime itself
// (docs/internal-protocol.md "Load errors"): a deploy's prepared runtime and a
// throwaway version's, on one machine (a process) and in cluster mode (a pod).

/** On /healthz: answer once the module has loaded or failed to, with the failure's kind and text. */
export const WAIT_LOAD_HEADER = 'x-fnhost-wait-load';

/**
 * GET /healthz with WAIT_LOAD_HEADER: undefined when the module loaded, else
 * the kind and text of its failure. Rejects when the runtime cannot be reached
 * or does not answer within `timeoutMs`.
 */
export async function loadFailureOf(upstream: Upstream, timeoutMs: number): Promise<{ kind: LoadFailureKind; message: string } | undefined> {
  const client = new Client(upstream.origin, upstream.socketPath === undefined ? {} : { connect: { socketPath: upstream.socketPath } });
  try {
    const response = await client.request({ path: '/healthz', method: 'GET', headers: { [WAIT_LOAD_HEADER]: '1' }, signal: AbortSignal.timeout(timeoutMs) });
    const text = await response.body.text();
    if (response.statusCode === 200) return undefined;
    const body = JSON.parse(text) as { kind?: unknown; message?: unknown };
    const kind = body.kind === 'syntax' || body.kind === 'no_handler' ? body.kind : 'failed';
    return { kind, message: typeof body.message === 'string' ? body.message : text.slice(0, 2000) };
  } finally {
    void client.close().catch(() => undefined);
  }
}
