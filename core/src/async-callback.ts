import { FnhostError, ValidationError } from './errors.ts';
import { ipFamily, quotePattern, splitPatternPort, validateHostPattern } from './netpattern.ts';

// Callbacks of asynchronous calls (docs/async.md "Callbacks"): a caller names
// `X-Callback-Url` and the gateway POSTs the call's final answer there. Since
// anyone who may call a function may name any URL, a function accepts
// callbacks only to the hosts its owner listed (async.callback_hosts), and the
// URL is checked at acceptance: a refused one is answered 400, never accepted
// and dropped. The pure rules live here (validation, matching, the retry
// schedule, what the owner is shown); delivery is the gateway's
// (gateway/src/async/callback*.ts).

export type CallbackState = 'pending' | 'delivered' | 'failed';

/** A call's callback as stored on it. */
export interface AsyncCallback {
  /** The URL as accepted (normalised by WHATWG URL parsing). Shown to nobody with its query. */
  url: string;
  state: CallbackState;
  /** POSTs tried so far (a try refused before connecting counts). */
  attempts: number;
  /** The receiver's status of the last try, null when none answered. */
  last_status: number | null;
  /** Why the last try failed, without the URL's query or anything the receiver sent. */
  last_error: string | null;
  /** ms: when the state last changed. */
  updated_at: number | null;
  /**
   * ms: a pending callback is being delivered by a gateway until then (renewed at each try).
   * One that passed it (its gateway died) is taken by another gateway's sender; absent or
   * null on a callback not taken yet.
   */
  lease_until?: number | null;
}

/** Hosts a function may list; a list is the owner's few receivers, not a network. */
export const MAX_CALLBACK_HOSTS = 20;
/** A longer URL is refused (browsers' and most servers' practical bound). */
export const MAX_CALLBACK_URL_LENGTH = 2048;
/** POSTs per callback: the first and two retries, as the call's own retries (Lambda's two). */
export const CALLBACK_MAX_ATTEMPTS = 3;
/** What is shown of an error text. */
const SHOWN = 200;

/** Why a callback URL is refused at acceptance (400, the code says which rule). */
export class CallbackUrlError extends FnhostError {
  constructor(code: 'callback_not_allowed' | 'callback_url_invalid' | 'callback_host_not_allowed', message: string) {
    super(code, 400, message, { expose: true });
  }
}

/**
 * `async.callback_hosts` as given to the API: host names (`hooks.example.com`), wildcards
 * for the names below one (`*.example.org`, not example.org itself) or IP addresses, each
 * optionally with one port (`hooks.example.com:8443`, `127.0.0.1:9000`; without one, any
 * port). The catch-all `*` and CIDRs are refused: a list names receivers, and one that
 * matched a network would let any caller aim the gateway at it. [] (or null) turns callbacks off.
 */
export function validateCallbackHosts(raw: unknown): string[] {
  if (raw === null) return [];
  if (!Array.isArray(raw)) throw new ValidationError(`async.callback_hosts must be a list of host names, e.g. ["hooks.example.com", "*.example.org"], got ${JSON.stringify(raw)?.slice(0, 60)}`);
  if (raw.length > MAX_CALLBACK_HOSTS) throw new ValidationError(`async.callback_hosts has ${raw.length} hosts; at most ${MAX_CALLBACK_HOSTS}`);
  const out: string[] = [];
  raw.forEach((entry, i) => {
    const where = `async.callback_hosts[${i}]`;
    if (typeof entry !== 'string') throw new ValidationError(`${where} must be a host name such as "hooks.example.com", got ${JSON.stringify(entry)?.slice(0, 60)}`);
    let pattern: string;
    try {
      pattern = validateHostPattern(entry);
    } catch (err) {
      throw new ValidationError(`${where}: ${(err as Error).message.replace('network policy pattern', 'host')}`);
    }
    const [host] = splitPatternPort(pattern);
    if (host === '*') throw new ValidationError(`${where} "*" would let any caller aim the gateway at any host; name the receivers' hosts (hooks.example.com, *.example.org)`);
    if (host.includes('/')) throw new ValidationError(`${where} ${quotePattern(entry)} is a CIDR; name the receivers' hosts or addresses one by one`);
    if (!out.includes(pattern)) out.push(pattern);
  });
  return out;
}

/** The host as WHATWG URL serialises it (IPv6 in brackets, IPv4 in dotted decimal), so a pattern and a URL compare alike. */
function urlHost(host: string): string {
  const family = ipFamily(host);
  if (family === 0) return host;
  return new URL(`http://${family === 6 ? `[${host}]` : host}/`).hostname;
}

/** Whether one validated pattern admits the URL's host and port (its scheme's default when it names none). */
export function callbackHostMatches(pattern: string, url: URL): boolean {
  const [host, port] = splitPatternPort(pattern);
  const urlPort = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
  if (port !== undefined && port !== urlPort) return false;
  const target = url.hostname.replace(/\.$/, '');
  if (host.startsWith('*.')) return target.endsWith(host.slice(1)) && target.length > host.length - 1;
  return urlHost(host) === target;
}

/**
 * The X-Callback-Url of an accepted call, checked against the function's hosts: the URL
 * normalised, or a CallbackUrlError naming the rule and the bad value (never the query,
 * which may hold the receiver's secret).
 */
export function checkCallbackUrl(raw: string, hosts: readonly string[] | undefined): string {
  if (hosts === undefined || hosts.length === 0) {
    throw new CallbackUrlError('callback_not_allowed', "this function takes no callbacks: its owner has not listed the hosts they may go to (async.callback_hosts); the call was not accepted");
  }
  if (raw.length > MAX_CALLBACK_URL_LENGTH) throw new CallbackUrlError('callback_url_invalid', `X-Callback-Url is ${raw.length} characters long; at most ${MAX_CALLBACK_URL_LENGTH}`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new CallbackUrlError('callback_url_invalid', `X-Callback-Url ${JSON.stringify(shownUrl(raw))} is not an absolute URL (http://host/path or https://host/path)`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new CallbackUrlError('callback_url_invalid', `X-Callback-Url must be http or https, got ${JSON.stringify(url.protocol.slice(0, 20))}`);
  }
  if (url.username !== '' || url.password !== '') {
    throw new CallbackUrlError('callback_url_invalid', 'X-Callback-Url must not carry credentials (user:password@); put a token in its path or query');
  }
  if (!hosts.some((p) => callbackHostMatches(p, url))) {
    throw new CallbackUrlError('callback_host_not_allowed', `X-Callback-Url host ${JSON.stringify(url.host.slice(0, 100))} is not one of this function's callback hosts (async.callback_hosts)`);
  }
  url.hash = '';
  return url.toString();
}

/** A URL as shown to the owner and in errors: its origin and path, the query and any credentials left out. */
export function shownUrl(raw: string): string {
  try {
    const url = new URL(raw);
    return `${url.protocol}//${url.host}${url.pathname}${url.search === '' ? '' : '?…'}`.slice(0, SHOWN);
  } catch {
    return raw.replace(/[?#].*$/s, '').replace(/\/\/[^/@]*@/, '//').slice(0, 60);
  }
}

/** A fresh callback for an accepted call. */
export function pendingCallback(url: string): AsyncCallback {
  return { url, state: 'pending', attempts: 0, last_status: null, last_error: null, updated_at: null };
}

/** Whether a receiver's answer is a delivery: a 2xx. A 3xx is not (redirects are not followed), nor a 4xx or 5xx. */
export function callbackDelivered(status: number): boolean {
  return status >= 200 && status < 300;
}

/** The delay before try `next` (2-based): base × 2^(next-2), with equal jitter as the call's own retries. `random` in [0, 1). */
export function callbackBackoffMs(next: number, baseMs: number, random: number): number {
  const full = baseMs * 2 ** Math.max(0, next - 2);
  return Math.round(full / 2 + (full / 2) * random);
}

/** An error text as stored: one line, bounded. */
export function callbackErrorText(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > SHOWN ? line.slice(0, SHOWN) + '…' : line;
}
