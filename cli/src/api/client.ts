import type { IncomingMessage, RequestOptions } from 'node:http';
import type { ApiServerInfo } from '@fnhost/core/api.ts';
import type { LogQuery, RetentionPolicy } from '@fnhost/core/model.ts';
import type { ExecutionDetail, FunctionLatency } from '@fnhost/core/insight.ts';
import {
  ApiAuthError,
  ApiConflictError,
  ApiConnectionError,
  ApiNotFoundError,
  ApiProtocolError,
  ApiServerError,
  ApiInvalidCodeError,
  ApiValidationError,
  type ApiError,
} from './errors.ts';
import type {
  ApiFunction,
  CreateFunctionBody,
  ApiRecordedExchange,
  ApiReplayResult,
  LogPage,
  ScheduleRunResult,
  ScheduleRuns,
  TestRequest,
  TestResult,
  UpdateFunctionBody,
} from './types.ts';
import { connectionFailure } from './connection-hint.ts';
import { panelUrlError, wrongUrlError } from './api-root.ts';

// The management API client. It uses node:http rather than fetch: fetch loads
// undici on first use, which costs about 30-40 ms of start-up (docs/cli.md).

/** Largest answer the CLI reads; a log page of 1,000 records with long errors fits easily. */
export const MAX_RESPONSE_BYTES = 64 * 1024 * 1024;
export const DEFAULT_TIMEOUT_MS = 30_000;

export interface ClientOptions {
  url: string;
  token: string | undefined;
  /** Where the URL came from (`FNHOST_URL`), named when it is not an fnhost API's root. */
  urlSource?: string;
  /** Where the token came from, for the hint when the server rejects it. */
  tokenSource?: string;
  timeoutMs?: number;
  /** Namespace of the functions (cluster mode); sent as `?namespace=` on function and policy requests. */
  namespace?: string;
  /** Where the namespace came from (`the kube context "dev" (~/.kube/config)`), for the hint when a function is not found. */
  namespaceSource?: string;
}

interface RawResponse {
  status: number;
  body: string;
  /** Fnhost-Token-Kinds of a 401: which tokens the gateway takes (`admin`, `admin, kubernetes`). */
  tokenKinds?: string;
}

/** What the server says inside `{ error, message }`, if it said it. */
function apiMessage(body: string): { code?: string; message?: string } {
  try {
    const parsed = JSON.parse(body) as { error?: unknown; message?: unknown };
    return {
      code: typeof parsed.error === 'string' ? parsed.error : undefined,
      message: typeof parsed.message === 'string' ? parsed.message : undefined,
    };
  } catch {
    return {};
  }
}

export class ApiClient {
  readonly url: string;
  readonly #token: string | undefined;
  readonly #tokenSource: string | undefined;
  readonly #urlSource: string | undefined;
  readonly #timeoutMs: number;
  readonly #namespace: string | undefined;
  readonly #namespaceSource: string | undefined;

  constructor(options: ClientOptions) {
    this.#namespace = options.namespace;
    this.#namespaceSource = options.namespaceSource;
    this.url = options.url.replace(/\/+$/, '');
    this.#token = options.token;
    this.#tokenSource = options.tokenSource;
    this.#urlSource = options.urlSource;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  /**
   * Which kind of gateway answers. A gateway older than GET /api/v1/info (404)
   * is taken as one machine, which is what it then was.
   */
  async serverInfo(): Promise<{ mode: ApiServerInfo['mode']; default_namespace?: string; sandbox?: ApiServerInfo['sandbox'] }> {
    let info: Partial<ApiServerInfo>;
    try {
      info = await this.#json<Partial<ApiServerInfo>>('GET', '/api/v1/info');
    } catch (err) {
      if (err instanceof ApiNotFoundError) return { mode: 'local' };
      throw err;
    }
    const mode = info?.mode === 'cluster' ? 'cluster' : 'local';
    const out: { mode: ApiServerInfo['mode']; default_namespace?: string; sandbox?: ApiServerInfo['sandbox'] } = { mode };
    if (typeof info?.default_namespace === 'string') out.default_namespace = info.default_namespace;
    if (typeof info?.sandbox?.enabled === 'boolean') out.sandbox = info.sandbox;
    return out;
  }

  /** The namespace's functions, or with `allNamespaces` every namespace's (`?all_namespaces=true`, the -A of function:list). */
  listFunctions(options: { allNamespaces?: boolean } = {}): Promise<{ functions: ApiFunction[] }> {
    return this.#json('GET', options.allNamespaces ? '/api/v1/functions?all_namespaces=true' : '/api/v1/functions');
  }

  getFunction(ref: string): Promise<ApiFunction> {
    return this.#json('GET', fnPath(ref), undefined, { ref });
  }

  /** `allowLoadError`: store code whose top level throws while loading (the server refuses it otherwise). */
  createFunction(body: CreateFunctionBody, options: { allowLoadError?: boolean } = {}): Promise<ApiFunction> {
    return this.#json('POST', `/api/v1/functions${options.allowLoadError ? '?allow_load_error=true' : ''}`, body);
  }

  updateFunction(ref: string, body: UpdateFunctionBody, options: { allowLoadError?: boolean } = {}): Promise<ApiFunction> {
    return this.#json('PATCH', `${fnPath(ref)}${options.allowLoadError ? '?allow_load_error=true' : ''}`, body, { ref });
  }

  /** Whether this namespace uploaded the code (HEAD /api/v1/code/{digest}). */
  async codeExists(digest: string): Promise<boolean> {
    const target = this.#target(`/api/v1/code/${digest}`);
    const response = await this.#request(target, { method: 'HEAD', headers: this.#headers() }, undefined, this.#timeoutMs);
    if (response.status === 200) return true;
    if (response.status === 404) return false;
    throw this.#errorFor('HEAD', target, response, undefined);
  }

  /** Uploads code by digest (PUT /api/v1/code/{digest}): 201 stored, 200 there already. */
  async uploadCode(digest: string, bytes: Buffer): Promise<{ digest: string; size: number; created: boolean }> {
    const target = this.#target(`/api/v1/code/${digest}`);
    const headers = { ...this.#headers(), 'content-type': 'application/octet-stream', 'content-length': String(bytes.length) };
    const response = await this.#request(target, { method: 'PUT', headers }, bytes, this.#timeoutMs);
    if (response.status < 200 || response.status >= 300) throw this.#errorFor('PUT', target, response, undefined);
    return JSON.parse(response.body) as { digest: string; size: number; created: boolean };
  }

  #target(path: string): URL {
    const target = new URL(this.url + path);
    if (this.#namespace !== undefined) target.searchParams.set('namespace', this.#namespace);
    return target;
  }

  #headers(): Record<string, string> {
    const headers: Record<string, string> = { accept: 'application/json', 'user-agent': 'fnhost-cli' };
    if (this.#token !== undefined) headers.authorization = `Bearer ${this.#token}`;
    return headers;
  }

  async deleteFunction(ref: string): Promise<void> {
    await this.#send('DELETE', fnPath(ref), undefined, { ref });
  }

  activate(ref: string): Promise<ApiFunction> {
    return this.#json('POST', fnPath(ref, '/activate'), undefined, { ref });
  }

  deactivate(ref: string): Promise<ApiFunction> {
    return this.#json('POST', fnPath(ref, '/deactivate'), undefined, { ref });
  }

  setRetention(ref: string, policy: RetentionPolicy): Promise<ApiFunction> {
    return this.#json('PUT', fnPath(ref, '/retention'), policy, { ref });
  }

  /** The global network policy and every function's (GET /network-policy). */
  policies(): Promise<{ global: NetworkPolicyBody; functions: Record<string, NetworkPolicyBody> }> {
    return this.#json('GET', '/api/v1/network-policy');
  }

  /** One function's policy (null: none) and the global one. */
  functionPolicy(ref: string): Promise<{ function_id: string; name: string; namespace: string; policy: NetworkPolicyBody | null; global: NetworkPolicyBody }> {
    return this.#json('GET', `/api/v1/network-policy/functions/${encodeURIComponent(ref)}`, undefined, { ref });
  }

  /** Replaces the global policy, or a function's when `ref` is given. */
  setPolicy(ref: string | undefined, policy: NetworkPolicyBody): Promise<NetworkPolicyBody> {
    return ref === undefined ? this.#json('PUT', '/api/v1/network-policy/global', policy) : this.#json('PUT', `/api/v1/network-policy/functions/${encodeURIComponent(ref)}`, policy, { ref });
  }

  /** The egress proxy's dry run for a function and host[:port] (policy:check). */
  checkPolicy(ref: string, target: string): Promise<PolicyCheckAnswer> {
    return this.#json('GET', `/api/v1/network-policy/functions/${encodeURIComponent(ref)}/check?target=${encodeURIComponent(target)}`, undefined, { ref });
  }

  /** Cluster mode: pods, autoscaling, scale to zero, CPU (fields not given stay). */
  setScaling(ref: string, change: Record<string, unknown>): Promise<ApiFunction> {
    return this.#json('PUT', fnPath(ref, '/scaling'), change, { ref });
  }

  setSchedule(ref: string, schedule: { cron: string; timezone?: string }): Promise<ApiFunction> {
    return this.#json('PUT', fnPath(ref, '/schedule'), schedule, { ref });
  }

  disableSchedule(ref: string): Promise<ApiFunction> {
    return this.#json('DELETE', fnPath(ref, '/schedule'), undefined, { ref });
  }

  /** Waits as long as the function may run (`timeoutMs`), plus a margin the caller adds. */
  testFunction(ref: string, request: TestRequest, timeoutMs?: number): Promise<TestResult> {
    return this.#json('POST', fnPath(ref, '/test'), request, { ref, timeoutMs });
  }

  /** One record with its console output (GET /api/v1/functions/{ref}/logs/{id}). */
  getLog(ref: string, logId: string): Promise<ExecutionDetail> {
    return this.#json('GET', fnPath(ref, '/logs/' + encodeURIComponent(logId)), undefined, { ref });
  }

  /** Counts, cold starts and latency percentiles over the last hour and day. */
  latency(ref: string): Promise<FunctionLatency> {
    return this.#json('GET', fnPath(ref, '/latency'), undefined, { ref });
  }

  recordedRequest(ref: string, logId: string): Promise<ApiRecordedExchange> {
    return this.#json('GET', fnPath(ref, `/logs/${encodeURIComponent(logId)}/request`), undefined, { ref });
  }

  /** Runs the function: waits as long as it may run (`timeoutMs`). */
  replay(ref: string, logId: string, code: string | undefined, timeoutMs?: number): Promise<ApiReplayResult> {
    return this.#json('POST', fnPath(ref, `/logs/${encodeURIComponent(logId)}/replay`), code === undefined ? {} : { code }, { ref, timeoutMs });
  }

  scheduleRuns(ref: string, limit: number): Promise<ScheduleRuns> {
    return this.#json('GET', `${fnPath(ref, '/schedule/runs')}?limit=${limit}`, undefined, { ref });
  }

  /** Fires the schedule now; waits as long as the function may run (`timeoutMs`). */
  runSchedule(ref: string, timeoutMs?: number): Promise<ScheduleRunResult> {
    return this.#json('POST', fnPath(ref, '/schedule/run'), undefined, { ref, timeoutMs });
  }

  listLogs(ref: string, query: LogQuery): Promise<LogPage> {
    const qs = new URLSearchParams({ status: query.status, limit: String(query.limit), page: String(query.page) });
    return this.#json('GET', `${fnPath(ref, '/logs')}?${qs}`, undefined, { ref });
  }

  async #json<T>(method: string, path: string, body?: unknown, options: { ref?: string; timeoutMs?: number } = {}): Promise<T> {
    const response = await this.#send(method, path, body, options);
    try {
      return JSON.parse(response.body) as T;
    } catch (cause) {
      throw new ApiProtocolError(`the server at ${this.url} answered ${method} ${path.split('?')[0]} with something that is not JSON`, {
        url: this.url,
        status: response.status,
        cause,
        hint: 'check that --url (or FNHOST_URL) points at an fnhost gateway',
      });
    }
  }

  async #send(method: string, path: string, body: unknown, options: { ref?: string; timeoutMs?: number }): Promise<RawResponse> {
    let target: URL;
    try {
      target = new URL(this.url + path);
      if (this.#namespace !== undefined && !target.searchParams.has('all_namespaces') && /^\/api\/v1\/(functions|network-policy\/functions)(\/|$)/.test(target.pathname)) target.searchParams.set('namespace', this.#namespace);
    } catch (cause) {
      throw new ApiConnectionError(`the server URL "${this.url}" is not a valid URL`, { url: this.url, cause });
    }
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const headers: Record<string, string> = { accept: 'application/json', 'user-agent': 'fnhost-cli' };
    if (this.#token !== undefined) headers.authorization = `Bearer ${this.#token}`;
    if (payload !== undefined) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = String(Buffer.byteLength(payload));
    }
    const response = await this.#request(target, { method, headers }, payload, options.timeoutMs ?? this.#timeoutMs);
    if (response.status >= 200 && response.status < 300) return response;
    if (response.status === 404 && path !== '/api/v1/info') await this.#checkApiRoot(headers);
    throw this.#errorFor(method, target, response, options.ref);
  }

  /** Before a 404 is read as "not found": is this URL an fnhost API's root at all? (./api-root.ts) */
  async #checkApiRoot(headers: Record<string, string>): Promise<void> {
    const { 'content-type': _type, 'content-length': _length, ...probeHeaders } = headers;
    const info = await this.#request(new URL(`${this.url}/api/v1/info`), { method: 'GET', headers: probeHeaders }, undefined, this.#timeoutMs);
    const wrong = wrongUrlError(this.url, this.#urlSource, info);
    if (wrong !== undefined) throw wrong;
  }

  async #request(target: URL, options: RequestOptions, payload: string | Buffer | undefined, timeoutMs: number): Promise<RawResponse> {
    // getBuiltinModule, not import(): an ESM namespace of node:http evaluates
    // its lazy WebSocket/EventSource getters, which load undici (~40 ms).
    const transport = target.protocol === 'https:' ? process.getBuiltinModule('node:https') : process.getBuiltinModule('node:http');
    return new Promise<RawResponse>((resolve, reject) => {
      const fail = (cause: Error & { code?: string }) => {
        const { message, hint } = connectionFailure(this.url, cause);
        reject(new ApiConnectionError(message, { url: this.url, cause, hint }));
      };
      const req = transport.request(target, { ...options, timeout: timeoutMs }, (res: IncomingMessage) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_RESPONSE_BYTES) {
            res.destroy();
            reject(new ApiProtocolError(`the server at ${this.url} sent more than ${MAX_RESPONSE_BYTES} bytes`, { url: this.url, status: res.statusCode }));
            return;
          }
          chunks.push(chunk);
        });
        const kinds = res.headers['fnhost-token-kinds'];
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), ...(typeof kinds === 'string' ? { tokenKinds: kinds } : {}) }));
        res.on('error', fail);
      });
      req.on('timeout', () => {
        req.destroy(Object.assign(new Error(`no answer within ${Math.round(timeoutMs / 1000)} s`), { code: `no answer within ${Math.round(timeoutMs / 1000)} s` }));
      });
      req.on('error', fail);
      req.end(payload);
    });
  }

  #errorFor(method: string, target: URL, response: RawResponse, ref: string | undefined): ApiError {
    const { code, message } = apiMessage(response.body);
    const details = { url: this.url, status: response.status, code };
    const said = message ?? `HTTP ${response.status}`;
    // A 403 with its own code (function_inactive) is about the function, not the token.
    if (response.status === 403 && code !== undefined && code !== 'unauthorized' && code !== 'forbidden') {
      const hint =
        code === 'function_inactive' && ref !== undefined
          ? `run fnhost function:activate ${ref} first`
          : code === 'quota_exceeded'
            ? 'kubectl describe resourcequota -n <namespace> shows the namespace\'s quotas: delete a function there, or ask its owner for a higher limit'
            : undefined;
      return new ApiConflictError(said, { ...details, hint });
    }
    // A Kubernetes identity the gateway knows, without the permission: RBAC's answer, not a bad token.
    if (response.status === 403 && code === 'forbidden') {
      return new ApiAuthError(`the server at ${this.url} refused: ${said}`, {
        ...details,
        hint: 'ask for a RoleBinding to the view, edit or admin ClusterRole (they include fnhost-view, fnhost-edit, fnhost-admin) in that namespace; kubectl auth can-i shows what you may do',
      });
    }
    switch (response.status) {
      case 401:
      case 403: {
        const panel = panelUrlError(this.url, this.#urlSource, response.status, message);
        if (panel !== undefined) return panel;
        const kube = response.tokenKinds !== undefined && /\bkubernetes\b/.test(response.tokenKinds);
        return new ApiAuthError(
          this.#token === undefined
            ? `the server at ${this.url} needs a token and none was found`
            : `the server at ${this.url} rejected the token${this.#tokenSource ? ` from ${this.#tokenSource}` : ''} (${said})`,
          { ...details, hint: kube ? `run fnhost login --url ${this.url} --kube to use your kube context's credentials (this gateway takes Kubernetes tokens), or fnhost login with the admin token` : 'run fnhost login, or pass --token or set FNHOST_TOKEN' },
        );
      }
      case 404:
        // The function is there; the record is not (the server's message names both).
        if (code === 'log_not_found') return new ApiNotFoundError(said, { ...details, hint: ref === undefined ? 'fnhost function:logs <function> lists the records kept' : `run fnhost function:logs ${ref} to see its records` });
        if (ref !== undefined && code === 'not_found') {
          const where = this.#namespace === undefined ? '' : ` in namespace ${this.#namespace}`;
          const hint =
            this.#namespace === undefined || this.#namespaceSource === undefined
              ? 'run fnhost function:list to see the functions'
              : `the namespace came from ${this.#namespaceSource}; run fnhost function:list to see its functions, or pass --namespace`;
          return new ApiNotFoundError(`function "${ref}" not found${where} at ${this.url}`, { ...details, hint });
        }
        return new ApiNotFoundError(`${method} ${target.pathname} not found at ${this.url} (${said})`, {
          ...details,
          hint: code === undefined ? 'check that --url (or FNHOST_URL) points at an fnhost gateway' : undefined,
        });
      case 400:
        if (code === 'invalid_code') {
          const hint = said.startsWith('code throws while loading:') ? 'give it what it needs (--env KEY=VALUE for a missing variable), or store it anyway with --allow-load-error' : undefined;
          return new ApiInvalidCodeError(said, { ...details, hint });
        }
        return new ApiValidationError(said, details);
      case 413:
      case 422:
        return new ApiValidationError(said, details);
      case 409:
        return new ApiConflictError(said, details);
      default:
        return new ApiServerError(`the server at ${this.url} failed: ${said}`, details);
    }
  }
}

export interface NetworkPolicyBody {
  default: 'allow' | 'deny';
  allow: string[];
  deny: string[];
}

export interface PolicyCheckAnswer {
  function_id: string;
  name: string;
  target: string;
  allowed: boolean;
  scope: 'global' | 'function';
  rule: string;
  subject: string;
  addresses: Array<{ address: string; allowed: boolean; scope: string; rule: string }>;
  message: string;
}

function fnPath(ref: string, suffix = ''): string {
  return `/api/v1/functions/${encodeURIComponent(ref)}${suffix}`;
}
