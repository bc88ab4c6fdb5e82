// The panel's only network access: same-origin requests to the gateway's
// admin listener, whose management API is under API (the same routes as the
// bearer-token /api/v1 of the main listener, for the panel session only).
// The session id is in an HttpOnly cookie the page cannot read; the CSRF
// token lives in this module's memory only (never localStorage), and is
// fetched again from /admin/api/session after a reload.

import type { ApiAsyncCall, ApiAsyncCalls, ApiFunction, ApiRecordedExchange, ApiScheduleRunResult, ApiScheduleRuns, ApiServerInfo, ApiTestResult } from '@fnhost/core/api.ts';
import type { ExecutionDetail, FunctionLatency, LatencySummary } from '@fnhost/core/insight.ts';
import type { ExecutionLog, LogPage, NetworkPolicy, RecordedBody, RequestRecording } from '@fnhost/core/model.ts';

// Wire shapes shared with the CLI (core/src/api.ts, core/src/model.ts, core/src/insight.ts).
export type { ApiAsyncCall, ApiFunction, ApiRecordedExchange, ExecutionDetail, FunctionLatency, LatencySummary, LogPage, RecordedBody, RequestRecording };
export type LogRecord = ExecutionLog;
export type TestResult = ApiTestResult;
export type ScheduleRuns = ApiScheduleRuns;

export const CSRF_HEADER = 'x-fnhost-csrf';
const API = '/admin/api/v1';

export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

let csrfToken: string | null = null;
let onSessionLost: () => void = () => {};

export function setSessionLostHandler(handler: () => void): void {
  onSessionLost = handler;
}

export interface SessionInfo {
  csrf_token: string;
  expires_at: string;
  idle_timeout_seconds: number;
}

async function request<T>(method: string, path: string, body?: unknown, options: { signIn?: boolean } = {}): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET' && csrfToken !== null) headers[CSRF_HEADER] = csrfToken;
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'same-origin', cache: 'no-store' });
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  let parsed: unknown = undefined;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (!res.ok) {
    const err = parsed as { error?: string; message?: string } | undefined;
    if (res.status === 401 && !options.signIn) {
      csrfToken = null;
      onSessionLost();
    }
    throw new ApiError(res.status, err?.error ?? 'http_error', err?.message ?? `${method} ${path} answered ${res.status}`);
  }
  return parsed as T;
}

export async function currentSession(): Promise<SessionInfo | null> {
  try {
    const s = await request<SessionInfo>('GET', '/admin/api/session', undefined, { signIn: true });
    csrfToken = s.csrf_token;
    return s;
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return null;
    throw err;
  }
}

export async function signIn(token: string): Promise<SessionInfo> {
  const s = await request<SessionInfo>('POST', '/admin/api/session', { token }, { signIn: true });
  csrfToken = s.csrf_token;
  return s;
}

export async function signOut(): Promise<void> {
  try {
    await request<void>('DELETE', '/admin/api/session', undefined, { signIn: true });
  } finally {
    csrfToken = null;
  }
}

export interface PolicyChange {
  id: string;
  scope: string;
  actor: string;
  at: string;
  before: NetworkPolicy | null;
  after: NetworkPolicy | null;
}

const fnPath = (ref: string) => `${API}/functions/${encodeURIComponent(ref)}`;

export const api = {
  info: () => request<ApiServerInfo>('GET', `${API}/info`),
  functions: () => request<{ functions: ApiFunction[] }>('GET', `${API}/functions?all_namespaces=true`).then((r) => r.functions),
  fn: (ref: string) => request<ApiFunction>('GET', fnPath(ref)),
  log: (ref: string, id: string) => request<ExecutionDetail>('GET', `${fnPath(ref)}/logs/${encodeURIComponent(id)}`),
  latency: (ref: string) => request<FunctionLatency>('GET', `${fnPath(ref)}/latency`),
  logs: (ref: string, q: { status: string; page: number; limit: number }) =>
    request<LogPage>('GET', `${fnPath(ref)}/logs?status=${encodeURIComponent(q.status)}&page=${q.page}&limit=${q.limit}`),
  setActive: (ref: string, active: boolean) => request<ApiFunction>('POST', `${fnPath(ref)}/${active ? 'activate' : 'deactivate'}`),
  test: (ref: string) => request<TestResult>('POST', `${fnPath(ref)}/test`, {}),
  setRecording: (ref: string, recording: Partial<RequestRecording>) => request<ApiFunction>('PATCH', fnPath(ref), { record_requests: recording }),
  recordedRequest: (ref: string, logId: string) => request<ApiRecordedExchange>('GET', `${fnPath(ref)}/logs/${encodeURIComponent(logId)}/request`),
  scheduleRuns: (ref: string, limit = 20) => request<ScheduleRuns>('GET', `${fnPath(ref)}/schedule/runs?limit=${limit}`),
  runSchedule: (ref: string) => request<ApiScheduleRunResult>('POST', `${fnPath(ref)}/schedule/run`),
  /** The function's async calls in these states, oldest accepted first (as fnhost function:async). */
  asyncCalls: (ref: string, states: readonly string[], limit = 100) => request<ApiAsyncCalls>('GET', `${fnPath(ref)}/async?state=${states.join(',')}&limit=${limit}`),
  /** Dead calls back to the queue (as fnhost function:async:retry). */
  retryAsync: (ref: string, which: readonly string[] | 'all') =>
    request<{ requeued: number }>('POST', `${fnPath(ref)}/dead-letters/retry`, which === 'all' ? { all: true } : { ids: which }),
  policies: () => request<{ global: NetworkPolicy; functions: Record<string, NetworkPolicy> }>('GET', `${API}/network-policy`),
  putGlobal: (p: NetworkPolicy) => request<NetworkPolicy>('PUT', `${API}/network-policy/global`, p),
  /** The egress proxy's dry run for a function and host[:port] (as fnhost policy:check). */
  checkConnection: (functionId: string, target: string) => request<PolicyCheck>('GET', `${API}/network-policy/functions/${encodeURIComponent(functionId)}/check?target=${encodeURIComponent(target)}`),
  putFunction: (ref: string, p: NetworkPolicy) => request<NetworkPolicy>('PUT', `${API}/network-policy/functions/${encodeURIComponent(ref)}`, p),
  deleteFunction: (ref: string) => request<void>('DELETE', `${API}/network-policy/functions/${encodeURIComponent(ref)}`),
  changes: (limit = 50) => request<{ changes: PolicyChange[] }>('GET', `${API}/network-policy/changes?limit=${limit}`).then((r) => r.changes),
};

/** GET /network-policy/functions/{ref}/check: allowed or denied, the rule, the scope, each address. */
export interface PolicyCheck {
  target: string;
  allowed: boolean;
  scope: 'global' | 'function';
  rule: string;
  subject: string;
  addresses: Array<{ address: string; allowed: boolean; scope: string; rule: string }>;
  message: string;
}
