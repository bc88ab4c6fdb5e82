// The handler's `req`: pure parsing helpers and the FnRequest class the worker builds per call.

export type Query = Record<string, string | string[]>;

/** Query string → object; a repeated key becomes an array (Express's default for flat keys). */
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

function decodeSafe(s: string): string {
  if (!s.includes('%')) return s;
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** Cookie header → object; the first occurrence of a name wins (RFC 6265 §5.4 order), values URI-decoded, quotes removed. */
export function parseCookies(header: string | undefined): Record<string, string> {
  const out: Record<string, string> = Object.create(null);
  if (!header) return out;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq <= 0) continue;
    const name = part.slice(0, eq).trim();
    if (name === '' || name in out) continue;
    let value = part.slice(eq + 1).trim();
    if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
    out[name] = decodeSafe(value);
  }
  return out;
}

export interface CompiledRoute {
  pattern: string;
  segments: Array<{ param: string } | { literal: string } | { rest: string }>;
}

/** `/users/:userId/posts/:postId` and a trailing `*` (or `:name*`) that takes the rest of the path. */
export function compileRoutes(patterns: string[]): CompiledRoute[] {
  return patterns.map((pattern) => ({
    pattern,
    segments: pattern
      .split('/')
      .filter((s) => s !== '')
      .map((s) => {
        if (s === '*') return { rest: '0' };
        if (s.startsWith(':') && s.endsWith('*')) return { rest: s.slice(1, -1) };
        if (s.startsWith(':')) return { param: s.slice(1) };
        return { literal: s };
      }),
  }));
}

/** The params of the first route that matches the path (trailing slash ignored); `{}` when none does. */
export function matchRoute(routes: CompiledRoute[], path: string): Record<string, string> {
  if (routes.length === 0) return {};
  const parts = path.split('/').filter((s) => s !== '');
  outer: for (const route of routes) {
    const params: Record<string, string> = {};
    const segs = route.segments;
    for (let i = 0; i < segs.length; i++) {
      const seg = segs[i]!;
      if ('rest' in seg) {
        if (i >= parts.length) continue outer;
        params[seg.rest] = parts.slice(i).map(decodeSafe).join('/');
        return params;
      }
      const part = parts[i];
      if (part === undefined) continue outer;
      if ('literal' in seg) {
        if (seg.literal !== part) continue outer;
      } else {
        params[seg.param] = decodeSafe(part);
      }
    }
    if (parts.length === segs.length) return params;
  }
  return {};
}

export class InvalidJsonError extends Error {
  override name = 'InvalidJsonError';
}

export function isJsonType(contentType: string | undefined): boolean {
  if (!contentType) return false;
  const mime = contentType.split(';', 1)[0]!.trim().toLowerCase();
  return mime === 'application/json' || (mime.startsWith('application/') && mime.endsWith('+json'));
}

function charsetOf(contentType: string): string {
  const m = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(contentType);
  return m ? m[1]!.toLowerCase() : 'utf-8';
}

/** JSON → parsed (400 before the handler when malformed), text/* → string, else Buffer; empty → undefined. */
export function parseBody(raw: Uint8Array | undefined, contentType: string | undefined): unknown {
  if (raw === undefined || raw.byteLength === 0) return undefined;
  const buf = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
  if (isJsonType(contentType)) {
    const text = buf.toString('utf8');
    try {
      return JSON.parse(text);
    } catch (err) {
      throw new InvalidJsonError(`request body is not valid JSON (content-type ${contentType}): ${(err as Error).message}`);
    }
  }
  if (contentType && /^\s*text\//i.test(contentType)) {
    const charset = charsetOf(contentType);
    if (charset === 'utf-8' || charset === 'utf8') return buf.toString('utf8');
    try {
      return new TextDecoder(charset).decode(buf);
    } catch {
      return buf.toString('utf8');
    }
  }
  return buf;
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
  ip: string;
  ips: string[];
  protocol: string;
  secure: boolean;
  xhr: boolean;
  hostname: string | undefined;
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
    const h = headersFromRaw(rawHeaders);
    this.headers = h;
    this.body = body;
    const xff = first(h['x-forwarded-for']);
    this.ips = xff ? xff.split(',').map((s) => s.trim()).filter((s) => s !== '') : [];
    this.ip = this.ips[0] ?? remoteAddress;
    const proto = first(h['x-forwarded-proto'])?.split(',', 1)[0]!.trim().toLowerCase();
    this.protocol = proto === 'https' ? 'https' : 'http';
    this.secure = this.protocol === 'https';
    this.xhr = (first(h['x-requested-with']) ?? '').toLowerCase() === 'xmlhttprequest';
    const host = (first(h['x-forwarded-host'])?.split(',', 1)[0]!.trim() || first(h.host)) ?? undefined;
    this.hostname = host === undefined ? undefined : host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.split(':', 1)[0];
  }

  get cookies(): Record<string, string> {
    return (this.#cookies ??= parseCookies(first(this.headers.cookie)));
  }

  /** Express's req.get: case-insensitive; "referer" and "referrer" are the same header. */
  get(name: string): string | string[] | undefined {
    const lc = String(name).toLowerCase();
    if (lc === 'referer' || lc === 'referrer') return this.headers.referer ?? this.headers.referrer;
    return this.headers[lc];
  }

  header(name: string): string | string[] | undefined {
    return this.get(name);
  }

  /** Express's req.is for the common case: does Content-Type match a mime or a short name ("json", "text/*")? */
  is(type: string): string | false {
    const ct = first(this.headers['content-type']);
    if (!ct) return false;
    const mime = ct.split(';', 1)[0]!.trim().toLowerCase();
    const want = type.includes('/') ? type.toLowerCase() : type === 'json' ? 'application/json' : type === 'text' ? 'text/plain' : type === 'html' ? 'text/html' : type === 'urlencoded' ? 'application/x-www-form-urlencoded' : type;
    if (want.endsWith('/*')) return mime.startsWith(want.slice(0, -1)) ? mime : false;
    if (want === 'application/json' && isJsonType(mime)) return mime;
    return mime === want ? mime : false;
  }
}
