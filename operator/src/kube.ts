import { KubeConfig, RequestContext, HttpMethod } from '@kubernetes/client-node';
import { fetch } from 'undici';
import type { Dispatcher } from 'undici';
import { sleep, systemClock } from './clock.ts';
import type { Clock } from '@fnhost/core/clock.ts';
import { functionPaths } from '@fnhost/core/function-resource.ts';

// A thin REST client over the kubeconfig's credentials and TLS settings (the
// same RequestContext + undici path client-node's own Watch uses). It exists
// for two things client-node lacks: a cap on requests in flight, and backoff
// on 429 (honouring Retry-After), since client-node has no client-side rate
// limiter. Long-lived watches do not go through here.

export class KubeApiError extends Error {
  readonly statusCode: number;
  readonly reason: string;
  readonly body: unknown;
  constructor(statusCode: number, reason: string, message: string, body: unknown) {
    super(message);
    this.name = 'KubeApiError';
    this.statusCode = statusCode;
    this.reason = reason;
    this.body = body;
  }
}

export function isNotFound(err: unknown): boolean {
  return err instanceof KubeApiError && err.statusCode === 404;
}

export function isConflict(err: unknown): boolean {
  return err instanceof KubeApiError && err.statusCode === 409;
}

/** A counting semaphore: at most `limit` holders at once, the rest wait in order. */
export class Semaphore {
  readonly #limit: number;
  #held = 0;
  #waiters: Array<() => void> = [];
  constructor(limit: number) {
    this.#limit = limit;
  }
  async acquire(): Promise<void> {
    if (this.#held < this.#limit) {
      this.#held++;
      return;
    }
    await new Promise<void>((resolve) => this.#waiters.push(resolve));
  }
  release(): void {
    const next = this.#waiters.shift();
    if (next) next();
    else this.#held--;
  }
  get inFlight(): number {
    return this.#held;
  }
  get waiting(): number {
    return this.#waiters.length;
  }
}

/** Delay before retrying a 429: the server's Retry-After when it sends one, else capped exponential. */
export function throttleDelayMs(retryAfter: string | null, attempt: number): number {
  const seconds = retryAfter !== null && /^\d+$/.test(retryAfter.trim()) ? Number(retryAfter) : NaN;
  if (Number.isFinite(seconds)) return Math.min(30_000, Math.max(100, seconds * 1000));
  return Math.min(30_000, 250 * 2 ** attempt);
}

export interface RequestMetrics {
  onResponse?(method: string, status: number): void;
  onThrottled?(): void;
}

export interface RequestOptions {
  body?: unknown;
  contentType?: string;
  query?: Record<string, string | undefined>;
}

export class KubeClient {
  readonly kc: KubeConfig;
  readonly #sem: Semaphore;
  readonly #clock: Clock;
  readonly #metrics: RequestMetrics;
  readonly #maxThrottleRetries: number;

  constructor(kc: KubeConfig, options: { maxInFlight: number; clock?: Clock; metrics?: RequestMetrics; maxThrottleRetries?: number }) {
    this.kc = kc;
    this.#sem = new Semaphore(options.maxInFlight);
    this.#clock = options.clock ?? systemClock;
    this.#metrics = options.metrics ?? {};
    this.#maxThrottleRetries = options.maxThrottleRetries ?? 8;
  }

  get inFlight(): number {
    return this.#sem.inFlight;
  }

  async request<T = any>(method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, options: RequestOptions = {}): Promise<T> {
    const cluster = this.kc.getCurrentCluster();
    if (!cluster) throw new Error('the kubeconfig has no current cluster');
    const url = new URL(cluster.server.replace(/\/+$/, '') + path);
    for (const [k, v] of Object.entries(options.query ?? {})) if (v !== undefined) url.searchParams.set(k, v);
    for (let attempt = 0; ; attempt++) {
      await this.#sem.acquire();
      let response: Awaited<ReturnType<typeof fetch>>;
      let text: string;
      try {
        const ctx = new RequestContext(url.toString(), method as HttpMethod);
        await this.kc.applySecurityAuthentication(ctx);
        const headers = ctx.getHeaders() as unknown as Record<string, string>;
        const init: Record<string, unknown> = { method, headers: { ...headers, accept: 'application/json' }, dispatcher: ctx.getDispatcher() as Dispatcher | undefined };
        if (options.body !== undefined) {
          (init.headers as Record<string, string>)['content-type'] = options.contentType ?? 'application/json';
          init.body = JSON.stringify(options.body);
        }
        response = await fetch(url, { ...(init as object), signal: AbortSignal.timeout(30_000) });
        text = await response.text();
      } finally {
        this.#sem.release();
      }
      this.#metrics.onResponse?.(method, response.status);
      if (response.status === 429 && attempt < this.#maxThrottleRetries) {
        this.#metrics.onThrottled?.();
        await sleep(this.#clock, throttleDelayMs(response.headers.get('retry-after'), attempt));
        continue;
      }
      const body = text ? safeJson(text) : undefined;
      if (response.status >= 400) {
        const status = body as { message?: string; reason?: string } | undefined;
        throw new KubeApiError(response.status, status?.reason ?? '', `${method} ${url.pathname}: ${response.status} ${status?.message ?? text.slice(0, 300)}`, body);
      }
      return body as T;
    }
  }

  get<T = any>(path: string): Promise<T> {
    return this.request<T>('GET', path);
  }

  async getOrNull<T = any>(path: string): Promise<T | null> {
    try {
      return await this.get<T>(path);
    } catch (err) {
      if (isNotFound(err)) return null;
      throw err;
    }
  }

  /** Server-side apply: the object's fields owned by `fieldManager` become exactly these. */
  apply<T = any>(path: string, object: unknown, fieldManager: string): Promise<T> {
    return this.request<T>('PATCH', path, { body: object, contentType: 'application/apply-patch+yaml', query: { fieldManager, force: 'true' } });
  }

  mergePatch<T = any>(path: string, patch: unknown): Promise<T> {
    return this.request<T>('PATCH', path, { body: patch, contentType: 'application/merge-patch+json' });
  }

  /** Strategic merge: lists with a merge key (ownerReferences by uid) gain entries instead of being replaced. */
  strategicMergePatch<T = any>(path: string, patch: unknown): Promise<T> {
    return this.request<T>('PATCH', path, { body: patch, contentType: 'application/strategic-merge-patch+json' });
  }

  jsonPatch<T = any>(path: string, ops: unknown[]): Promise<T> {
    return this.request<T>('PATCH', path, { body: ops, contentType: 'application/json-patch+json' });
  }

  async delete(path: string, preconditionUid?: string): Promise<boolean> {
    try {
      await this.request('DELETE', path, {
        body: { kind: 'DeleteOptions', apiVersion: 'v1', propagationPolicy: 'Background', ...(preconditionUid ? { preconditions: { uid: preconditionUid } } : {}) },
      });
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** REST paths of the kinds the operator touches. */
export const paths = {
  functions: functionPaths.list,
  function: functionPaths.one,
  functionStatus: functionPaths.status,
  object: (apiVersion: string, kind: string, ns: string, name?: string) => {
    const plural = PLURALS[kind];
    if (!plural) throw new Error(`unknown kind ${kind}`);
    const base = apiVersion === 'v1' ? '/api/v1' : `/apis/${apiVersion}`;
    return `${base}/namespaces/${ns}/${plural}${name ? `/${name}` : ''}`;
  },
  deployments: (ns?: string) => (ns ? `/apis/apps/v1/namespaces/${ns}/deployments` : '/apis/apps/v1/deployments'),
  cronJobs: (ns?: string) => (ns ? `/apis/batch/v1/namespaces/${ns}/cronjobs` : '/apis/batch/v1/cronjobs'),
  pods: (ns: string) => `/api/v1/namespaces/${ns}/pods`,
  namespace: (ns: string) => `/api/v1/namespaces/${ns}`,
  lease: (ns: string, name?: string) => `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases${name ? `/${name}` : ''}`,
};

const PLURALS: Record<string, string> = {
  ConfigMap: 'configmaps',
  Secret: 'secrets',
  Service: 'services',
  Deployment: 'deployments',
  CronJob: 'cronjobs',
  Pod: 'pods',
  Lease: 'leases',
  Function: 'functions',
  NetworkPolicy: 'networkpolicies',
};
