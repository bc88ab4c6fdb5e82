import type { KubeConfig } from '@kubernetes/client-node';
import { fetch, type Dispatcher } from 'undici';
import { FnhostError } from '@fnhost/core';
import { functionPaths } from '@fnhost/core/function-resource.ts';

// A thin client of the Kubernetes API over the kubeconfig's (or the pod's
// service account's) credentials and TLS settings: client-node's
// RequestContext gives the headers and the TLS dispatcher, undici sends.
// Requests (not watches) are capped in flight and a 429 is retried after
// Retry-After (client-node has no client-side rate limiter). Watches are
// streams of JSON lines read by `watch()`; the Reflector restarts them.
// client-node is loaded only in cluster mode (gateway/src/cluster/start.ts).

export class KubeApiError extends FnhostError {
  readonly statusCode: number;
  readonly reason: string;
  constructor(statusCode: number, reason: string, message: string) {
    // Never shown to API callers as is: the management API maps the cases it expects.
    super('kubernetes_api', 502, message, { expose: false });
    this.statusCode = statusCode;
    this.reason = reason;
  }
}

/** Delay before retrying a 429: the server's Retry-After when it sends one, else 250 ms doubling, capped at 30 s. */
export function throttleDelayMs(retryAfter: string | null, attempt: number): number {
  const seconds = retryAfter !== null && /^\d+$/.test(retryAfter.trim()) ? Number(retryAfter) : NaN;
  if (Number.isFinite(seconds)) return Math.min(30_000, Math.max(100, seconds * 1000));
  return Math.min(30_000, 250 * 2 ** attempt);
}

export interface Sleeper {
  sleep(ms: number): Promise<void>;
}

export const realSleeper: Sleeper = { sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms).unref()) };

/** Splits a byte stream into lines; returns the complete lines and keeps the rest for the next chunk. */
export function splitLines(carry: string, chunk: string): { lines: string[]; rest: string } {
  const text = carry + chunk;
  const parts = text.split('\n');
  const rest = parts.pop() ?? '';
  return { lines: parts.filter((l) => l.trim() !== ''), rest };
}

export interface WatchEvent<T> {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: T;
}

export interface ListResult<T> {
  items: T[];
  resourceVersion: string;
}

export interface KubeRequest {
  body?: unknown;
  contentType?: string;
  query?: Record<string, string | undefined>;
  /** Default 30 s. */
  timeoutMs?: number;
}

export class KubeClient {
  readonly #kc: KubeConfig;
  readonly #maxInFlight: number;
  readonly #sleeper: Sleeper;
  #inFlight = 0;
  #waiting: Array<() => void> = [];
  requests = 0;
  throttled = 0;

  constructor(kc: KubeConfig, options: { maxInFlight?: number; sleeper?: Sleeper } = {}) {
    this.#kc = kc;
    this.#maxInFlight = options.maxInFlight ?? 10;
    this.#sleeper = options.sleeper ?? realSleeper;
  }

  get server(): string {
    const cluster = this.#kc.getCurrentCluster();
    if (!cluster) throw new Error('the kubeconfig has no current cluster');
    return cluster.server.replace(/\/+$/, '');
  }

  async #slot(): Promise<void> {
    if (this.#inFlight < this.#maxInFlight) {
      this.#inFlight++;
      return;
    }
    await new Promise<void>((resolve) => this.#waiting.push(resolve));
  }

  #release(): void {
    const next = this.#waiting.shift();
    if (next !== undefined) next();
    else this.#inFlight--;
  }

  async #init(url: URL, method: string): Promise<{ headers: Record<string, string>; dispatcher: Dispatcher | undefined }> {
    // Imported here so that one-machine mode never loads client-node.
    const { RequestContext } = await import('@kubernetes/client-node');
    const ctx = new RequestContext(url.toString(), method as never);
    await this.#kc.applySecurityAuthentication(ctx);
    return { headers: ctx.getHeaders() as unknown as Record<string, string>, dispatcher: ctx.getDispatcher() as Dispatcher | undefined };
  }

  async request<T = unknown>(method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, options: KubeRequest = {}): Promise<T> {
    const url = new URL(this.server + path);
    for (const [k, v] of Object.entries(options.query ?? {})) if (v !== undefined) url.searchParams.set(k, v);
    for (let attempt = 0; ; attempt++) {
      await this.#slot();
      let status: number;
      let text: string;
      let retryAfter: string | null;
      try {
        const { headers, dispatcher } = await this.#init(url, method);
        const init: Parameters<typeof fetch>[1] = {
          method,
          headers: { ...headers, accept: 'application/json', ...(options.body === undefined ? {} : { 'content-type': options.contentType ?? 'application/json' }) },
          body: options.body === undefined ? undefined : JSON.stringify(options.body),
          dispatcher,
          signal: AbortSignal.timeout(options.timeoutMs ?? 30_000),
        };
        this.requests++;
        const response = await fetch(url, init);
        status = response.status;
        retryAfter = response.headers.get('retry-after');
        text = await response.text();
      } finally {
        this.#release();
      }
      if (status === 429 && attempt < 8) {
        this.throttled++;
        await this.#sleeper.sleep(throttleDelayMs(retryAfter, attempt));
        continue;
      }
      const body = text === '' ? undefined : safeJson(text);
      if (status >= 400) {
        const s = body as { message?: string; reason?: string } | undefined;
        throw new KubeApiError(status, s?.reason ?? '', `${method} ${url.pathname}: ${status} ${s?.message ?? text.slice(0, 300)}`);
      }
      return body as T;
    }
  }

  list<T>(path: string, query: Record<string, string | undefined> = {}): Promise<ListResult<T>> {
    return this.request<{ items?: T[]; metadata?: { resourceVersion?: string } }>('GET', path, { query }).then((l) => ({
      items: l.items ?? [],
      resourceVersion: l.metadata?.resourceVersion ?? '',
    }));
  }

  /**
   * One watch request: calls `onEvent` for each event until the server ends
   * the stream (resolves), the stream breaks or goes silent longer than
   * `idleMs` (rejects), or `signal` aborts it.
   */
  async watch<T>(path: string, query: Record<string, string | undefined>, onEvent: (event: WatchEvent<T>) => void, signal: AbortSignal, idleMs = 120_000): Promise<void> {
    const url = new URL(this.server + path);
    url.searchParams.set('watch', '1');
    for (const [k, v] of Object.entries(query)) if (v !== undefined) url.searchParams.set(k, v);
    const { headers, dispatcher } = await this.#init(url, 'GET');
    const idle = new AbortController();
    let timer = setTimeout(() => idle.abort(new Error(`the watch was silent for ${idleMs} ms`)), idleMs);
    const both = AbortSignal.any([signal, idle.signal]);
    try {
      const response = await fetch(url, { method: 'GET', headers: { ...headers, accept: 'application/json' }, dispatcher, signal: both });
      if (response.status !== 200) {
        const text = await response.text();
        const s = safeJson(text) as { message?: string; reason?: string } | undefined;
        throw new KubeApiError(response.status, s?.reason ?? '', `watch ${url.pathname}: ${response.status} ${s?.message ?? text.slice(0, 300)}`);
      }
      let carry = '';
      const decoder = new TextDecoder();
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        clearTimeout(timer);
        timer = setTimeout(() => idle.abort(new Error(`the watch was silent for ${idleMs} ms`)), idleMs);
        const { lines, rest } = splitLines(carry, decoder.decode(chunk, { stream: true }));
        carry = rest;
        for (const line of lines) onEvent(JSON.parse(line) as WatchEvent<T>);
      }
    } catch (err) {
      if (idle.signal.aborted) throw idle.signal.reason;
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return { message: text.slice(0, 300) };
  }
}

export const paths = {
  functions: functionPaths.list,
  function: functionPaths.one,
  functionStatus: functionPaths.status,
  endpointSlices: (ns?: string) => (ns ? `/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices` : '/apis/discovery.k8s.io/v1/endpointslices'),
  pods: (ns?: string) => (ns ? `/api/v1/namespaces/${ns}/pods` : '/api/v1/pods'),
  namespace: (ns: string) => `/api/v1/namespaces/${ns}`,
};
