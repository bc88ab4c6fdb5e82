// The handler's `req`: Express 5's request members, by the packages Express uses (libraries.ts).
// Values that depend on headers are computed when read, as Express's getters are, so a handler
// that changes `req.headers` sees the change.

import { parseCookies } from './cookies.ts';
import { http, mime, type HttpParts } from './libraries.ts';
import { matchRoute, type CompiledRoute } from './routes.ts';

const { isIP } = process.getBuiltinModule('node:net');

export type Query = Record<string, string | string[]>;

/** Query string → object; a repeated key becomes an array (Express 5's default "simple" parser for flat keys). */
export function parseQuery(search: string): Query {
  const out: Query = Object.create(null);
  if (search === '' || search === '?') return out;
  for (const [k, v] of new URLSearchParams(search)) {
    const prev = out[k];
    if (prev === undefined) out[k] = v;
    else if (Array.isArray(prev)) prev.push(v);
    else out[k] = [prev, v];
  }
  return out;
}

/** rawHeaders → Node's req.headers shape: lower-case names, repeats joined (", "; "; " for cookie), set-cookie an array. */
export function headersFromRaw(raw: string[]): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = Object.create(null);
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    const value = raw[i + 1]!;
    const prev = out[name];
    if (prev === undefined) out[name] = name === 'set-cookie' ? [value] : value;
    else if (Array.isArray(prev)) prev.push(value);
    else out[name] = prev + (name === 'cookie' ? '; ' : ', ') + value;
  }
  return out;
}

function first(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/** Express's `subdomain offset` setting, at its default: `tobi.ferrets.example.com` → `['ferrets', 'tobi']`. */
const SUBDOMAIN_OFFSET = 2;

/**
 * What a request reads of its response (Express's `req.res`): the status and the validators
 * `fresh` compares. The worker sets the call's FnResponse there; naming only this much keeps
 * request.ts and response.ts from importing each other.
 */
export interface ResponseOfRequest {
  statusCode: number;
  get(field: string): string | string[] | undefined;
}

export class FnRequest {
  method: string;
  url: string;
  originalUrl: string;
  path: string;
  query: Query;
  params: Record<string, string>;
  headers: Record<string, string | string[]>;
  rawHeaders: string[];
  body: unknown;
  /** The call's response, as Express's `req.res` (set by the worker once both exist). */
  res!: ResponseOfRequest;
  readonly #remoteAddress: string;
  #cookies: Record<string, string> | undefined;

  constructor(method: string, url: string, rawHeaders: string[], remoteAddress: string, routes: CompiledRoute[], body: unknown) {
    this.method = method;
    this.url = url;
    this.originalUrl = url;
    const q = url.indexOf('?');
    const rawPath = q === -1 ? url : url.slice(0, q);
    this.path = rawPath === '' ? '/' : rawPath;
    this.query = parseQuery(q === -1 ? '' : url.slice(q + 1));
    this.params = matchRoute(routes, this.path);
    this.rawHeaders = rawHeaders;
    this.headers = headersFromRaw(rawHeaders);
    this.body = body;
    this.#remoteAddress = remoteAddress;
  }

  /** From the X-Forwarded-For the gateway sanitised (the runtime is only reachable from it), nearest the caller first. */
  get ips(): string[] {
    const xff = first(this.headers['x-forwarded-for']);
    return xff ? xff.split(',').map((s) => s.trim()).filter((s) => s !== '') : [];
  }

  /** The caller's address as the gateway saw it; the socket's (the gateway's) when the header is absent. */
  get ip(): string {
    return this.ips[0] ?? this.#remoteAddress;
  }

  /** From X-Forwarded-Proto, which the gateway sets: the runtime's own socket is never TLS. */
  get protocol(): string {
    const proto = first(this.headers['x-forwarded-proto'])?.split(',', 1)[0]!.trim().toLowerCase();
    return proto === 'https' ? 'https' : 'http';
  }

  get secure(): boolean {
    return this.protocol === 'https';
  }

  get xhr(): boolean {
    return (first(this.get('X-Requested-With')) ?? '').toLowerCase() === 'xmlhttprequest';
  }

  /** X-Forwarded-Host (which the gateway passes only from a trusted proxy, docs/gateway.md), else Host. */
  get host(): string | undefined {
    const forwarded = first(this.headers['x-forwarded-host']);
    const val = forwarded ? forwarded.split(',', 1)[0]!.trimEnd() : first(this.headers.host);
    return val || undefined;
  }

  get hostname(): string | undefined {
    const host = this.host;
    if (!host) return undefined;
    const offset = host[0] === '[' ? host.indexOf(']') + 1 : 0;
    const index = host.indexOf(':', offset);
    return index !== -1 ? host.slice(0, index) : host;
  }

  get subdomains(): string[] {
    const hostname = this.hostname;
    if (!hostname) return [];
    const parts = !isIP(hostname) ? hostname.split('.').reverse() : [hostname];
    return parts.slice(SUBDOMAIN_OFFSET);
  }

  /** Express's req.fresh: a GET/HEAD whose validators match the response's ETag/Last-Modified (the fresh package). */
  get fresh(): boolean {
    const method = this.method;
    if (method !== 'GET' && method !== 'HEAD' && method !== 'QUERY') return false;
    const res = this.res;
    const status = res.statusCode;
    if ((status >= 200 && status < 300) || status === 304) {
      return http().fresh(this.headers, { etag: res.get('ETag'), 'last-modified': res.get('Last-Modified') });
    }
    return false;
  }

  get stale(): boolean {
    return !this.fresh;
  }

  get cookies(): Record<string, string> {
    return (this.#cookies ??= parseCookies(first(this.headers.cookie)));
  }

  /** Express's req.get: case-insensitive; "referer" and "referrer" are the same header. */
  get(name: string): string | string[] | undefined {
    if (!name) throw new TypeError('name argument is required to req.get');
    if (typeof name !== 'string') throw new TypeError('name must be a string to req.get');
    const lc = name.toLowerCase();
    if (lc === 'referer' || lc === 'referrer') return this.headers.referrer || this.headers.referer;
    return this.headers[lc];
  }

  header(name: string): string | string[] | undefined {
    return this.get(name);
  }

  /** The best of `types` for the caller's Accept, or false (the accepts package). */
  accepts(...types: Array<string | string[]>): string | string[] | false {
    return mime().accepts(this).types(...types);
  }

  acceptsEncodings(...encodings: Array<string | string[]>): string | string[] | false {
    return mime().accepts(this).encodings(...encodings);
  }

  acceptsCharsets(...charsets: Array<string | string[]>): string | string[] | false {
    return mime().accepts(this).charsets(...charsets);
  }

  acceptsLanguages(...languages: Array<string | string[]>): string | string[] | false {
    return mime().accepts(this).languages(...languages);
  }

  /** The Range header for a resource of `size` bytes (the range-parser package); undefined without one. */
  range(size: number, options?: { combine?: boolean }): ReturnType<HttpParts['rangeParser']> | undefined {
    const range = first(this.get('Range'));
    if (!range) return undefined;
    return http().rangeParser(size, range, options);
  }

  /** Does Content-Type match one of `types` (the type-is package)? The matching type, false, or null without a body. */
  is(types: string | string[], ...more: string[]): string | false | null {
    const list = Array.isArray(types) ? types : [types, ...more];
    return mime().typeIs(this, list);
  }
}
