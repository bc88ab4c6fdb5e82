import { ApiWrongUrlError } from './errors.ts';

// Whether a 404 means "no such function" or "this URL is not fnhost's API":
// FNHOST_URL=http://host:8080/admin, or the admin panel's own port
// (FNHOST_ADMIN_PORT), answer 404 for every API path, which without this check
// reads as `function "hello" not found`. The API root answers
// GET /api/v1/info with `{ mode: "local" | "cluster" }`; anything else means
// the URL is wrong, and the message says so.

export interface InfoAnswer {
  status: number;
  body: string;
}

function isServerInfo(body: string): boolean {
  try {
    const parsed = JSON.parse(body) as { mode?: unknown };
    return parsed.mode === 'local' || parsed.mode === 'cluster';
  } catch {
    return false;
  }
}

function serverMessage(body: string): string | undefined {
  try {
    const message = (JSON.parse(body) as { message?: unknown }).message;
    return typeof message === 'string' ? message.slice(0, 300) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The error to report instead of a 404 when `url` is not the API root, judged
 * from its answer to GET /api/v1/info; undefined when it is the root (or
 * rejects the token there, which only a root with the bearer API does).
 */
export function wrongUrlError(url: string, urlSource: string | undefined, info: InfoAnswer): ApiWrongUrlError | undefined {
  if (info.status === 401 || info.status === 403) return undefined;
  if (info.status >= 200 && info.status < 300 && isServerInfo(info.body)) return undefined;
  const parsed = new URL(url);
  const said = serverMessage(info.body) ?? (info.status >= 200 && info.status < 300 ? 'not the fnhost API' : `HTTP ${info.status}`);
  const named = urlSource === undefined ? url : `${url} (from ${urlSource})`;
  const hint =
    parsed.pathname !== '/' && parsed.pathname !== ''
      ? `use the gateway's root URL, ${parsed.origin}: the API is at /api/v1 there (the path ${parsed.pathname} is not part of it)`
      : "use the gateway's main URL (its PORT), not the admin panel's (FNHOST_ADMIN_PORT, by default PORT+1)";
  return new ApiWrongUrlError(`${named} is not the root of an fnhost API: GET /api/v1/info there answered ${info.status} (${said})`, {
    url,
    status: info.status,
    hint,
  });
}

/**
 * A 401/403 from the admin panel's API (its listener serves /admin/api/v1 behind a browser
 * session, never a bearer token): FNHOST_URL=http://host:8081/admin/ is the panel's address, and
 * no token can fix that, so the error says which URL to use instead of asking for a token.
 */
export function panelUrlError(url: string, urlSource: string | undefined, status: number, message: string | undefined): ApiWrongUrlError | undefined {
  if (status !== 401 && status !== 403) return undefined;
  let path: string;
  try {
    path = new URL(url).pathname;
  } catch {
    return undefined;
  }
  const panelAnswered = message !== undefined && /\bpanel session\b/.test(message);
  if (!panelAnswered && !/^\/admin(\/|$)/.test(path)) return undefined;
  const named = urlSource === undefined ? url : `${url} (from ${urlSource})`;
  return new ApiWrongUrlError(`${named} is the admin panel's address, not the API's: the CLI talks to the gateway's main URL`, {
    url,
    status,
    hint: "use the gateway's root URL on its main port (PORT, by default 8080; the panel's FNHOST_ADMIN_PORT is PORT+1), e.g. --url http://127.0.0.1:8080",
  });
}
